"""Roles: what each one may see of the database, as table rules (row filters, visible and hidden columns)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from sophrosyne.schema.catalog import Column, Table
from sophrosyne.sql.policy.claims import claims_used
from sophrosyne.sql.policy.qualified import names_table
from sophrosyne.sql.policy.row_filter import normalize_value, parse_row_filter, scope_of

# Tables of the engines' own catalogs, which a restricted role never reads.
SYSTEM_TABLE = re.compile(r"^(sqlite_|pg_|duckdb_|pragma_)", re.IGNORECASE)


@dataclass
class TableRule:
    """What a role may see of one table: a row filter (SQL predicate) and visible or hidden columns."""

    row_filter: str | None = None
    columns: list[str] | None = None  # visible columns; None means all
    hidden: list[str] = field(default_factory=list)


@dataclass
class Role:
    """A role's view of the database. The default role sees everything.

    A role with any rule is *restricted*: it reads only catalog tables (never system catalogs), views only
    when a rule lists them, and tables without a rule only when `unlisted_allowed` (the default).
    """

    name: str = "default"
    tables: dict[str, TableRule] = field(default_factory=dict)
    denied: list[str] = field(default_factory=list)
    unlisted_allowed: bool = True
    description: str = ""
    # False: the role runs the tools its policy declares for it, never a statement of its own (execute_sql,
    # explain_sql, run_python refuse it).
    free_sql: bool = True

    @property
    def unrestricted(self) -> bool:
        return not self.tables and not self.denied and self.unlisted_allowed

    def can_see_table(self, table: str) -> bool:
        """False for a denied table or, when unlisted tables are not allowed, for a table without a rule."""
        if any(names_table(denied, table) for denied in self.denied):
            return False
        if self.unrestricted:
            return True
        if SYSTEM_TABLE.match(table):
            return False
        return self.unlisted_allowed or self._rule(table) is not None

    def can_read(self, table: Table) -> bool:
        """Whether this role may read `table` at all (views need a rule of their own when restricted)."""
        if self.unrestricted:
            return True
        if not self.can_see_table(table.name):
            return False
        if table.kind == "view" and self._rule(table.name) is None:
            return False
        if table.local_name is not None and self._rule(table.name) is None:
            # A schema off the search path, found by discovery: a restricted role reads it only when its
            # policy names the table (a policy written before the schema was discovered keeps its scope).
            return False
        return bool(self.visible_columns(table))

    def visible_columns(self, table: Table) -> list[Column]:
        rule = self._rule(table.name)
        if rule is None:
            return list(table.columns)
        hidden = {h.lower() for h in rule.hidden}
        allowed = None if rule.columns is None else {c.lower() for c in rule.columns}
        return [
            c for c in table.columns if c.name.lower() not in hidden and (allowed is None or c.name.lower() in allowed)
        ]

    def row_scope(self, table: str) -> dict[str, set[str]]:
        """Column -> allowed values implied by the table's row filter (its `col = v` / `col IN (...)` terms)."""
        rule = self._rule(table)
        if rule is None or not rule.row_filter:
            return {}
        return scope_of(parse_row_filter(rule.row_filter, None, table))

    def filter_rows(
        self, table: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> list[tuple[Any, ...]]:
        """The post-execution layer: drop rows whose filter column holds a value outside the role's scope.

        Applies when the rows come from one table (`table`), and only to result columns named like a
        column of an equality or IN term of that table's row filter. It cannot check other predicates,
        renamed or computed columns, or aggregates; the rewrite is the layer that enforces those.
        """
        if table is None or self.unrestricted:
            return [tuple(r) for r in rows]
        scope = self.row_scope(table)
        positions = [(i, scope[c.lower()]) for i, c in enumerate(columns) if c.lower() in scope]
        return [tuple(r) for r in rows if all(normalize_value(r[i]) in allowed for i, allowed in positions)]

    def scoped_table(self, expression: exp.Expr) -> str | None:
        """The table whose scope `filter_rows` may check on a query's result, or None.

        Only a plain SELECT over one table, without joins, subqueries, grouping or set operations, whose
        output columns named like a scope column are that very column, qualifies.
        """
        if not isinstance(expression, exp.Select) or expression.args.get("joins"):
            return None
        if expression.args.get("group") or expression.args.get("with_"):
            return None
        tables = list(expression.find_all(exp.Table))
        if len(tables) != 1 or len(list(expression.find_all(exp.Select))) != 1:
            return None
        name = tables[0].name
        scope = self.row_scope(name)
        for projection in expression.expressions:
            if projection.alias_or_name.lower() in scope:
                inner = projection.unalias()
                if not isinstance(inner, exp.Column) or inner.name.lower() != projection.alias_or_name.lower():
                    return None
                if inner.find(exp.AggFunc) or isinstance(projection, exp.Window):
                    return None
        return name

    def claims_read(self) -> set[str]:
        """The caller's claims this role's row filters read (`:claims.NAME`, see claims.py)."""
        return {
            name
            for table, rule in self.tables.items()
            if rule.row_filter
            for name in claims_used(parse_row_filter(rule.row_filter, None, f"table `{table}`"))
        }

    def _has_filter(self, table: str) -> bool:
        rule = self._rule(table)
        return rule is not None and bool(rule.row_filter)

    def _rule(self, table: str) -> TableRule | None:
        """The rule for the catalog's table `table`: the one naming it whole, else by its last parts (a
        warehouse table `db.schema.t` by `schema.t` or `t`), the longest of those."""
        named = [(n, r) for n, r in self.tables.items() if names_table(n, table)]
        return max(named, key=lambda pair: len(pair[0]))[1] if named else None
