"""The oracle: the tables a reference query reads, and directives that flag every other table."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from sophrosyne.catalog import Catalog
from sophrosyne.directives.decision import Directives, TableDirective


def gold_tables(sql: str, catalog: Catalog, dialect: str = "sqlite") -> set[str]:
    """Base tables a query reads (CTE names excluded), spelled as in the catalog."""
    tree = sqlglot.parse_one(sql, read=dialect)
    found: set[str] = set()
    for scope in traverse_scope(tree):
        for source in scope.sources.values():
            if isinstance(source, exp.Table):
                table = catalog.table(source.name)
                found.add(table.name if table else source.name)
    return found


def oracle_directives(gold_sql: str, catalog: Catalog, dialect: str = "sqlite") -> Directives:
    """Irrelevant = every visible table the gold SQL does not read."""
    gold = gold_tables(gold_sql, catalog, dialect)
    flagged = [
        TableDirective(t, "the reference query does not read it", "high", 1.0) for t in catalog.tables if t not in gold
    ]
    return Directives(flagged, sorted(t for t in catalog.tables if t in gold), mode="oracle")
