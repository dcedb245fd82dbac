"""What the rewrite mends so that the rewritten statement means and shows what was written.

Once a base table is a CTE, an engine loses what it knew of it: its schema qualifier, its primary key (which
made `GROUP BY t.id` cover `t.name`), its statistics (which chose join orders), and, where an engine names a
computed column by its text, the text itself.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from sophrosyne.schema.catalog import Table
from sophrosyne.sql.policy.qualified import qualified_parts
from sophrosyne.sql.rendering import render

# The rewrite's secured tables: lowered table name -> (the CTE's name, the table).
Secured = dict[str, tuple[str, Table]]


def unqualify_columns(tree: exp.Expr, secured: Secured, default_schema: str | None) -> None:
    """`main.employees.name` -> `employees.name`, `project.dataset.orders.id` -> `orders.id`: the secured
    reference keeps only the table name."""
    by_name: dict[str, list[Table]] = {}
    for _, table in secured.values():
        by_name.setdefault(qualified_parts(table)[-1].lower(), []).append(table)
    for column in tree.find_all(exp.Column):
        db = column.args.get("db")
        if db is None:
            continue
        written = [part.name.lower() for part in (column.args.get("catalog"), db) if part is not None]
        for table in by_name.get(column.table.lower(), []):
            qualifiers = [part.lower() for part in qualified_parts(table)[:-1]]
            own = written == qualifiers[-len(written) :] if qualifiers else False
            if own or (len(written) == 1 and written[0] in {(table.schema or "").lower(), default_schema}):
                column.set("db", None)
                column.set("catalog", None)
                break


def written_headers(tree: exp.Expr, dialect: Dialect) -> list[tuple[exp.Expr, str]]:
    """The unaliased computed output columns of the statement, each with its text as written: engines that
    name such a column by its text would otherwise show the rewritten one (`_sec_t`) in the header."""
    select = tree
    while isinstance(select, exp.SetOperation | exp.Subquery):
        select = select.this  # a set operation takes its column names from its first query
    if not isinstance(select, exp.Select):
        return []
    return [
        (p, render(p, dialect))
        for p in select.expressions
        if not isinstance(p, exp.Alias | exp.Column | exp.Star) and p.find(exp.Table) is not None
    ]


def complete_group_by(select: exp.Select, secured: Secured) -> None:
    """`SELECT t.name ... GROUP BY t.id` is valid where `t.id` is the primary key of base table `t`: every
    column of `t` depends on it. Once `t` is a CTE the engine no longer sees that, so the columns of `t`
    the query shows ungrouped are added to the GROUP BY; grouped by the key, they change no group."""
    group = select.args.get("group")
    if not isinstance(group, exp.Group) or not group.expressions:
        return
    sources = {}
    for ref in [select.args.get("from_"), *(select.args.get("joins") or [])]:
        table = ref.this if ref is not None else None
        if isinstance(table, exp.Table):
            base = next((t for n, t in secured.values() if n == table.name), None)
            if base is not None and base.primary_key:
                sources[table.alias_or_name.lower()] = base
    if not sources:
        return
    lone = next(iter(sources)) if len(sources) == 1 and len(select.args.get("joins") or []) == 0 else None
    grouped = {(c.table.lower() or lone, c.name.lower()) for c in group.expressions if isinstance(c, exp.Column)}
    keyed = {a for a, t in sources.items() if all((a, k.lower()) in grouped for k in t.primary_key)}
    shown = [*select.expressions, select.args.get("having"), select.args.get("order")]
    added = []
    for part in shown:
        for column in part.find_all(exp.Column) if part is not None else []:
            owner = column.table.lower() or lone
            if owner in keyed and (owner, column.name.lower()) not in grouped and _ungrouped(column, select):
                grouped.add((owner, column.name.lower()))
                added.append(column.copy())
    if added:
        group.set("expressions", [*group.expressions, *added])


def join_in_written_order(select: exp.Select, fenced: set[str]) -> None:
    """Inner joins of fenced CTEs only, each ON an equality: joined in the order written (STRAIGHT_JOIN).

    The fenced CTEs have no keys and no statistics, and MariaDB then picks orders such as a cross product
    of two of them before the table that links them (BIRD toxicology: 30 s against 0.13 s direct); the
    order a query is written in follows its join conditions."""
    joins = select.args.get("joins") or []
    source = select.args.get("from_")
    if not joins or source is None:
        return
    tables = [source.this, *(j.this for j in joins)]
    if not all(isinstance(t, exp.Table) and t.name in fenced for t in tables):
        return
    for join in joins:
        inner = str(join.args.get("kind") or "INNER").upper() == "INNER" and not join.args.get("side")
        if not inner or not isinstance(join.args.get("on"), exp.EQ | exp.And):
            return
    for join in joins:
        join.set("kind", "STRAIGHT_JOIN")


def _ungrouped(column: exp.Column, select: exp.Select) -> bool:
    """A column `select` itself outputs as is: not inside an aggregate, a window or a nested query."""
    node = column.parent
    while node is not None and node is not select:
        if isinstance(node, exp.AggFunc | exp.Window | exp.Select | exp.Subquery):
            return False
        node = node.parent
    return node is select
