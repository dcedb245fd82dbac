"""Names an agent gives, looked up in the catalog: the table or column meant, or an error that names the fix."""

from __future__ import annotations

from sqlglot import exp

from sophrosyne.catalog import Catalog, Column, Table
from sophrosyne.errors import QueryFailed, SophrosyneError, UnknownColumn, UnknownTable


def table_named(catalog: Catalog, name: str, source: str) -> Table:
    """The table `name` means (quotes and case ignored), else UnknownTable with the closest names."""
    table = catalog.table(name.strip().strip('"`[]'))
    if table is None:
        raise UnknownTable(
            f"no table `{name}` in {source}.", hint=did_you_mean(name, catalog.table_names, "list_tables")
        )
    return table


def column_named(table: Table, name: str) -> Column:
    """The column of `table` that `name` means, else UnknownColumn with the closest names."""
    column = table.column(name.strip().strip('"`[]'))
    if column is None:
        raise UnknownColumn(
            f"no column `{name}` in `{table.name}`.",
            hint=did_you_mean(name, table.column_names, f"describe_table('{table.name}')"),
        )
    return column


def explain_error(exc: QueryFailed, expression: exp.Expression, catalog: Catalog, source: str) -> SophrosyneError:
    """Turn an engine's unknown-name error into one that names the fix, from the catalog."""
    tables: dict[str, Table] = {}
    ctes = {c.alias_or_name.lower() for c in expression.find_all(exp.CTE)}
    for ref in expression.find_all(exp.Table):
        if not ref.name or ref.name.lower() in ctes:
            continue
        table = catalog.table(ref.name)
        if table is None:
            return UnknownTable(
                f"no table `{ref.name}` in {source}.",
                hint=did_you_mean(ref.name, catalog.table_names, "list_tables"),
            )
        tables[(ref.alias or ref.name).lower()] = table
    known = {c.lower() for t in tables.values() for c in t.column_names}
    aliases = {a.alias.lower() for a in expression.find_all(exp.Alias)}
    for col in expression.find_all(exp.Column):
        name = col.name.lower()
        if not name or name in known or name in aliases or isinstance(col.this, exp.Star):
            continue
        owner = tables.get(col.table.lower()) if col.table else None
        candidates = owner.column_names if owner else sorted({c for t in tables.values() for c in t.column_names})
        where = f"`{owner.name}`" if owner else "the tables of this query"
        if name in exc.message.lower():
            return UnknownColumn(
                f"no column `{col.name}` in {where}.",
                hint=did_you_mean(col.name, candidates, "describe_table"),
            )
    return exc


def did_you_mean(name: str, choices: list[str], fallback: str) -> str:
    from rapidfuzz import fuzz, process  # loaded on the first miss, not at start-up

    best = process.extract(name, choices, scorer=fuzz.WRatio, processor=str.lower, limit=3, score_cutoff=60)
    if best:
        return "Did you mean " + " or ".join(f"`{b[0]}`" for b in best) + "?"
    return f"Call {fallback} to see what exists."
