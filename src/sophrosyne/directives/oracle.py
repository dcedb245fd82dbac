"""The oracle: the tables a reference query reads, and directives that flag every other table."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from sophrosyne.directives.decision import Directives, TableDirective
from sophrosyne.schema.catalog import Catalog


def gold_tables(sql: str, catalog: Catalog, dialect: str = "sqlite") -> set[str]:
    """Base tables a query (or script: BigQuery's DECLARE before it) reads, CTE names excluded, spelled as in
    the catalog. A qualified name (`project.dataset.table`) is matched whole first; a wildcard table
    (`ga_sessions_2017*`) reads every table its prefix matches. A name the catalog lacks is kept as written."""
    found: set[str] = set()
    for tree in sqlglot.parse(sql, read=dialect):
        if tree is None or not isinstance(tree, exp.Query):
            continue
        ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE)}
        for scope in traverse_scope(tree):
            for source in scope.sources.values():
                # A recursive CTE read inside its own body is a source too, not a base table.
                if isinstance(source, exp.Table) and not (len(source.parts) == 1 and source.name.lower() in ctes):
                    found |= _resolve(source, catalog)
    return found


def _resolve(source: exp.Table, catalog: Catalog) -> set[str]:
    parts = [p.name for p in source.parts]
    written = ".".join(parts)
    if written.endswith("*"):
        prefix = written[:-1].lower()
        matched = {t for t in catalog.tables if t.lower().startswith(prefix)}
        if not matched and len(parts) > 1:
            matched = {t for t in catalog.tables if t.lower().rsplit(".", 1)[-1].startswith(parts[-1][:-1].lower())}
        return matched or {written}
    for name in (written, source.name) if len(parts) > 1 else (source.name,):
        table = catalog.table(name)
        if table is not None:
            return {table.name}
    if len(parts) > 1:
        tail = "." + ".".join(parts[-2:]).lower()
        matched = {t for t in catalog.tables if t.lower().endswith(tail)}
        if len(matched) == 1:
            return matched
    return {written}


def oracle_directives(gold_sql: str, catalog: Catalog, dialect: str = "sqlite") -> Directives:
    """Irrelevant = every visible table the gold SQL does not read."""
    gold = gold_tables(gold_sql, catalog, dialect)
    flagged = [
        TableDirective(t, "the reference query does not read it", "high", 1.0) for t in catalog.tables if t not in gold
    ]
    return Directives(flagged, sorted(t for t in catalog.tables if t in gold), mode="oracle")
