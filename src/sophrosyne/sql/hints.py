"""Performance hints read from a query as written, sized by what the caller's role may see of each table."""

from __future__ import annotations

from sqlglot import exp

from sophrosyne.schema.catalog import Catalog, Table

LARGE_TABLE_ROWS = 100_000


def query_hints(
    expression: exp.Expression, catalog: Catalog, index_leads: dict[str, set[str]] | None = None
) -> list[str]:
    """Hints on a query as written, each naming its table and column: a large table filtered only on columns
    no index leads, a join with no index on either side, a leading-wildcard LIKE on a large table, a
    cartesian product. `index_leads`: lower-cased table -> first columns of its indexes (None: unknown).

    `catalog` is the role's: a filtered table has no row estimate there, so no hint tells its size, and
    hidden columns are not in it, so no hint names one.
    """
    hints: list[str] = []
    for select in expression.find_all(exp.Select):
        tables = _tables(select, catalog)
        hints += _leading_wildcards(select, tables)
        hints += _cartesian(select, tables)
        if index_leads is not None:
            hints += _unindexed_filters(select, tables, index_leads)
            hints += _unindexed_joins(select, tables, index_leads)
    return sorted(set(hints))


def plan_hints(
    expression: exp.Expression, catalog: Catalog, leads: dict[str, set[str]] | None, scanned: set[str]
) -> list[str]:
    """The query's own hints, and a full-scan hint for each large table the engine's plan reads whole
    (`scanned`, lower-cased) that the query's hints do not already name. Sizes as `catalog` (the role's) has them."""
    hints = query_hints(expression, catalog, leads)
    hints += [
        f"full scan of {t.name} (~{t.row_estimate:,} rows), a large table: filter on an indexed column "
        "or the leading column of a composite index."
        for t in catalog.tables.values()
        if t.name.lower() in scanned
        and _large(t)
        # The hint read from the query already names the column: the plan's adds nothing.
        and not any(h.startswith(f"full scan of {t.name} (") for h in hints)
    ]
    return hints


def _visible(column: exp.Column, table: Table) -> bool:
    return table.column(column.name) is not None


def _unindexed_filters(select: exp.Select, tables: dict[str, Table], leads: dict[str, set[str]]) -> list[str]:
    """A large table whose WHERE conditions are all on columns no index leads: it is read whole."""
    where = select.args.get("where")
    if where is None:
        return []
    filtered: dict[str, set[str]] = {}
    for condition in where.find_all(exp.EQ, exp.In, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between):
        column = condition.this
        other = condition.args.get("expression")
        if not isinstance(column, exp.Column) or isinstance(other, exp.Column):
            continue  # a join condition written in WHERE is judged as a join
        table = _owner(column, tables)
        if table is not None and _visible(column, table):
            filtered.setdefault(table.name, set()).add(column.name)
    hints = []
    for name, columns in filtered.items():
        table = tables_by_name(tables)[name]
        indexed = leads.get(name.lower(), set())
        if _large(table) and not {c.lower() for c in columns} & indexed:
            shown = ", ".join(sorted(columns))
            usable = sorted(c.name for c in table.columns if c.name.lower() in indexed)
            hints.append(
                f"full scan of {name} (~{table.row_estimate:,} rows): it is filtered on {shown}, which no index "
                "leads" + (f"; a filter on {', '.join(usable)} would use an index." if usable else ".")
            )
    return hints


def _unindexed_joins(select: exp.Select, tables: dict[str, Table], leads: dict[str, set[str]]) -> list[str]:
    """An equality join whose two columns lead no index, with a large table on a side."""
    hints = []
    where = select.args.get("where")
    conditions = [j.args.get("on") for j in select.args.get("joins") or []] + [where]
    for condition in conditions:
        for eq in condition.find_all(exp.EQ) if condition is not None else []:
            left, right = eq.this, eq.expression
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            a, b = _owner(left, tables), _owner(right, tables)
            if a is None or b is None or a is b or not (_large(a) or _large(b)):
                continue
            if not (_visible(left, a) and _visible(right, b)):
                continue
            if left.name.lower() in leads.get(a.name.lower(), set()):
                continue
            if right.name.lower() in leads.get(b.name.lower(), set()):
                continue
            hints.append(
                f"join {a.name}.{left.name} = {b.name}.{right.name} has no index on either side: each row of one "
                "table is matched by scanning or hashing the other; filter both sides first."
            )
    return hints


def tables_by_name(tables: dict[str, Table]) -> dict[str, Table]:
    return {t.name: t for t in tables.values()}


def _tables(select: exp.Select, catalog: Catalog) -> dict[str, Table]:
    """The catalog tables this SELECT reads directly, by alias (lower case)."""
    found: dict[str, Table] = {}
    for ref in [select.args.get("from_"), *(select.args.get("joins") or [])]:
        node = ref.this if ref is not None else None
        if isinstance(node, exp.Table) and (table := catalog.table(node.name)) is not None:
            found[node.alias_or_name.lower()] = table
    return found


def _large(table: Table) -> bool:
    return (table.row_estimate or 0) >= LARGE_TABLE_ROWS


def _owner(column: exp.Column, tables: dict[str, Table]) -> Table | None:
    if column.table:
        return tables.get(column.table.lower())
    holders = [t for t in tables.values() if t.column(column.name) is not None]
    return holders[0] if len(holders) == 1 else None


def _leading_wildcards(select: exp.Select, tables: dict[str, Table]) -> list[str]:
    hints = []
    where = select.args.get("where")
    for like in where.find_all(exp.Like, exp.ILike) if where is not None else []:
        column, pattern = like.this, like.expression
        if not isinstance(column, exp.Column) or not isinstance(pattern, exp.Literal):
            continue
        table = _owner(column, tables)
        if table is not None and _large(table) and pattern.this.startswith(("%", "_")):
            hints.append(
                f"leading-wildcard LIKE on {table.name}.{column.name} (~{table.row_estimate:,} rows) reads every "
                "row: anchor the pattern ('abc%') or find the exact value with get_distinct_values first."
            )
    return hints


def _cartesian(select: exp.Select, tables: dict[str, Table]) -> list[str]:
    """Joined tables with no condition linking them, in the join or in WHERE."""
    joins = select.args.get("joins") or []
    if not joins or len(tables) < 2:
        return []
    where = select.args.get("where")
    linked: set[str] = set()
    conditions = [j.args.get("on") for j in joins] + [where.this if where is not None else None]
    for condition in conditions:
        for eq in condition.find_all(exp.EQ) if condition is not None else []:
            sides = {c.table.lower() for c in (eq.this, eq.expression) if isinstance(c, exp.Column) and c.table}
            if len(sides) == 2:
                linked |= sides
    hints = []
    for join in joins:
        node = join.this
        if (
            not isinstance(node, exp.Table)
            or join.args.get("using")
            or (join.args.get("kind") or "").upper() == "CROSS"
        ):
            continue
        alias = node.alias_or_name.lower()
        on = join.args.get("on")
        # A JOIN written without ON is read as ON TRUE by some dialects.
        unconditioned = on is None or (isinstance(on, exp.Boolean) and bool(on.this))
        if alias in tables and alias not in linked and unconditioned:
            hints.append(
                f"cartesian product: {tables[alias].name} is joined with no condition on its columns "
                "(every row with every row); join on its key, e.g. ON a.id = b.a_id."
            )
    return hints
