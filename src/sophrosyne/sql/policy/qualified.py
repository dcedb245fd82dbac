"""Qualified table names: a catalog table's parts, a name written in SQL found by its parts, a policy's name matched.

A warehouse names its tables `catalog.schema.table` (Snowflake, Databricks) or `project.dataset.table`
(BigQuery), and its catalog holds them by that full name (their schema is `catalog.schema`); a query or a policy
may write the full name or only its last parts (`schema.table`, `table`), which mean the same table when only one
table of the catalog ends with them. A PostgreSQL table keeps its own rules: `schema.table` where the schema is
off the search path (`local_name`), its plain name where it is on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sophrosyne.schema.catalog import Catalog, Table

__all__ = ["find_table", "names_table", "qualified_parts", "tables_named"]


def qualified_parts(table: Table) -> tuple[str, ...]:
    """The parts SQL names the table by: (`catalog`, `schema`, `table`) for a warehouse table, (`schema`,
    `table`) for one of a schema off the search path, (`table`,) for one on it."""
    if table.local_name is not None and table.schema:
        return (table.schema, table.local_name)
    schema = table.schema or ""
    if schema and table.name.lower().startswith(schema.lower() + "."):
        return (*schema.split("."), table.name[len(schema) + 1 :])
    return (table.name,)


def find_table(catalog: Catalog, parts: Sequence[str], default_schema: str | None = None) -> Table | None:
    """The table a name written as `parts` (`["db", "s", "t"]`) means, or None: the table with exactly these
    qualified parts; a table on the search path by `schema.table` (its schema, or the engine's default one);
    else the one warehouse table whose qualified name ends with these parts."""
    written = [part.lower() for part in parts]
    exact = catalog.table(".".join(parts))
    if exact is not None and [p.lower() for p in qualified_parts(exact)] == written:
        return exact
    if len(written) == 2:
        table = catalog.table(parts[-1])
        if table is not None and len(qualified_parts(table)) == 1:
            allowed = table.schema.lower() if table.schema else default_schema
            if written[0] == allowed:
                return table
    endings = [t for t in catalog.tables.values() if _ends_with(qualified_parts(t), written)]
    return endings[0] if len(endings) == 1 else None


def names_table(written: str, table: str) -> bool:
    """Whether a table name a policy writes means the catalog's table named `table`: the same name, or, for a
    warehouse table (`catalog.schema.table`), its last parts (`schema.table` or `table`)."""
    lowered, name = written.lower(), table.lower()
    return lowered == name or (name.count(".") >= 2 and name.endswith("." + lowered))


def tables_named(catalog: Catalog, written: str) -> list[Table]:
    """The catalog's tables a policy's table name means: the one of that name, else every warehouse table the
    name ends (a policy must name one; more is an error it reports)."""
    exact = catalog.table(written)
    if exact is not None:
        return [exact]
    return [t for t in catalog.tables.values() if names_table(written, t.name)]


def _ends_with(parts: tuple[str, ...], written: list[str]) -> bool:
    # Only warehouse tables are named by their last parts: PostgreSQL resolves a plain name on its search path.
    return len(parts) >= 3 and len(written) < len(parts) and [p.lower() for p in parts[-len(written) :]] == written
