"""The one secured path: guard, then the role's rewrite, then a read-only session, then the audit line."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlglot import exp

from sophrosyne.audit import note_statement
from sophrosyne.base import deadline
from sophrosyne.database import Database, QueryResult
from sophrosyne.engines import Cursor, Engine
from sophrosyne.engines.reading import batches
from sophrosyne.errors import ConfigError, InvalidArgument, QueryFailed
from sophrosyne.schema.catalog import Catalog
from sophrosyne.settings import Settings
from sophrosyne.sql import guard
from sophrosyne.sql.lookup import explain_error
from sophrosyne.sql.policy import Role, reads_fences, rewrite_for, shown_columns
from sophrosyne.sql.policy.claims import claim_values, claims_used
from sophrosyne.sql.queries import distinct_query
from sophrosyne.sql.rendering import render
from sophrosyne.sql.shape import ShapeLimits

# Parsing is not linear in the text (a megabyte of quoted strings takes minutes), and cannot be stopped
# midway: a statement past this length is refused before it is read.
MAX_SQL_CHARS = 100_000
# A placeholder as written before the driver's style is chosen: a character no statement holds around its name.
_MARK = re.compile("\x00([a-z][a-z0-9_]*)\x00")
# The tools' own statements kept checked per role (a describe of each table of a large schema stays under it).
CHECKED_KEPT = 4096
# Statements kept prepared per role (an agent or a program sends the same one again), and the longest kept.
PREPARED_KEPT = 512
PREPARED_CHARS = 10_000

Prepared = tuple[exp.Expression, exp.Expression, str, bool]


class Secured(NamedTuple):
    """What the path gives back: the rows, the SQL as executed, and the statement as the guard read it."""

    result: QueryResult
    executed: str
    expression: exp.Expression


class Streamed:
    """A result being read through the secured path: its columns as shown, and its rows in batches, each batch
    passed through the role's third layer (rows outside its scope dropped) as `run` does."""

    def __init__(
        self, role: Role, expression: exp.Expression, cursor: Cursor, columns: list[str], shown: list[str], sql: str
    ) -> None:
        self.columns = shown
        self.expression = expression
        self.executed = sql
        self.rows = 0  # rows handed out so far
        self._role = role
        self._scoped = None if role.unrestricted else role.scoped_table(expression)
        self._raw_columns = columns
        self._cursor = cursor

    def batches(self, batch_bytes: int) -> Iterator[tuple[Sequence[Any], int]]:
        """The rows in batches of about `batch_bytes` of values, with each batch's size; the call's deadline
        is checked between batches."""
        for rows, size in batches(self._cursor, batch_bytes):
            kept = rows if self._scoped is None else self._role.filter_rows(self._scoped, self._raw_columns, rows)
            self.rows += len(kept)
            yield kept, size
            deadline.check("the export")


class SecurePath:
    """The only way a tool reads data, for one role of one database.

    `policed` gives the catalog the role's rules apply to, `catalog` the one the role sees (for errors
    that name what it may know); both are the Environment's, which keeps them current."""

    def __init__(
        self,
        database: Database,
        role: Role,
        settings: Settings,
        *,
        policed: Callable[[], Catalog],
        catalog: Callable[[], Catalog],
    ) -> None:
        self.db = database
        self.role = role
        self.settings = settings
        self._policed = policed
        self._catalog = catalog
        # For a role without rules: each statement the tools built, as the guard let it through and as it is
        # sent. A tool asks the same statements again (describe's sample), and parsing them was half its time.
        self._checked: dict[str, str] = {}
        # Each statement as prepared, with the catalog its rewrite read (None for a role without rules).
        self._prepared_kept: dict[str, tuple[Catalog | None, Prepared]] = {}

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def engine(self) -> Engine:
        return self.db.engine

    def _prepared(self, sql: str) -> Prepared:
        """The statement as the guard read it, as the role's rewrite made it, as it is sent, and whether it
        reads fenced CTEs: the guard and the rewrite, which every statement passes.

        Prepared once per text: the guard is a function of the text, the dialect and the settings, the rewrite
        of the tree, the role and the catalog it polices; only the catalog changes (a new one when the schema
        does), so a statement is kept with the catalog it was rewritten for. A refused one is not kept."""
        if len(sql) > MAX_SQL_CHARS:
            raise InvalidArgument(
                f"the statement is {len(sql):,} characters long; at most {MAX_SQL_CHARS:,} are read.",
                hint="Write a shorter statement: filter with a subquery or a join rather than a long literal list.",
            )
        policed = None if self.role.unrestricted else self._policed()
        kept = self._prepared_kept.get(sql)
        if kept is not None and kept[0] is policed:
            return kept[1]
        prepared = self._prepare(sql, policed)
        if len(sql) <= PREPARED_CHARS:
            if len(self._prepared_kept) >= PREPARED_KEPT:
                self._prepared_kept.clear()
            self._prepared_kept[sql] = (policed, prepared)
        return prepared

    def _prepare(self, sql: str, policed: Catalog | None) -> Prepared:
        dialect = self.dialect
        expression = guard.check_sql(
            sql, dialect, ShapeLimits.from_settings(self.settings), self.settings.limits.sql_max_size_argument
        )
        if claims_used(expression):
            raise InvalidArgument("the statement names a placeholder kept for the policy's claims.")
        # An unrestricted role reads as it wrote: it needs no catalog, which is slow to read on a large schema.
        rewritten = expression if policed is None else rewrite_for(self.role, expression, policed, dialect)
        fenced = reads_fences(rewritten)
        # A role's rewrite is a tree of its own, used once: the generator may work on it without a copy.
        executed = render(rewritten, dialect, copy=rewritten is expression)
        guard.check_sent(executed, self.engine.name)
        return expression, rewritten, executed, fenced

    @contextmanager
    def stream(self, sql: str, *, timeout_s: float) -> Iterator[Streamed]:
        """The secured path for a result read whole as it arrives (an export): the same guard, rewrite,
        read-only session and third layer as `run`, without a row cap; the rows are read while the block runs.
        The statement is noted for the audit with the rows read, whether the block finished or not."""
        expression, rewritten, executed, fenced = self._prepared(sql)
        streamed: Streamed | None = None
        try:
            with self.db.streaming(executed, timeout_s=timeout_s, fenced=fenced) as (columns, cursor):
                shown = columns
                if not self.role.unrestricted and self.db.engine.names_columns_by_rendering:
                    shown = shown_columns(rewritten, columns)
                streamed = Streamed(self.role, expression, cursor, columns, shown, executed)
                yield streamed
        except QueryFailed as exc:
            raise explain_error(exc, expression, self._catalog(), self.db.name) from None
        finally:
            note_statement(sql, executed, streamed.rows if streamed is not None else 0)

    def run(
        self,
        sql: str,
        *,
        limit: int,
        timeout_s: float | None = None,
        explain: bool = False,
        values: Mapping[str, Any] | None = None,
    ) -> Secured:
        """Guard, then the role's rewrite, then a read-only session.

        With `explain`, the engine plans the rewritten statement instead of running it. `values`: the `:name`
        parameters of a declared tool's statement, which the driver binds; never written into the text.
        """
        expression, rewritten, executed, fenced = self._prepared(sql)
        bound = None
        claimed = claims_used(rewritten) if rewritten is not expression else set()
        if claimed:
            # The caller's claims, which the role's row filters read, go to the driver as parameters.
            values = {**(values or {}), **claim_values(claimed)}
        if values is not None:
            executed, bound = self._parameters(rewritten, values)
        sent = f"{self.db.engine.explain} {executed}" if explain else executed
        try:
            result = self.db.run(sent, limit=limit, timeout_s=timeout_s, fenced=fenced, values=bound)
        except QueryFailed as exc:
            raise explain_error(exc, expression, self._catalog(), self.db.name) from None
        if explain:
            note_statement(sql, sent, len(result.rows))
            return Secured(result, executed, expression)
        if not self.role.unrestricted:
            columns = shown_columns(rewritten, result.columns) if self.db.engine.names_columns_by_rendering else None
            # The third layer: rows outside the role's scope are dropped even if a rewrite let them through.
            kept = self.role.filter_rows(self.role.scoped_table(expression), result.columns, result.rows)
            result = QueryResult(columns or result.columns, kept, result.truncated, result.elapsed_ms, result.cut)
        note_statement(sql, executed, len(result.rows))
        return Secured(result, executed, expression)

    def _parameters(self, tree: exp.Expression, values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The statement with its placeholders in the driver's style, and the values the driver binds: each
        placeholder is written by us from its name, a value only ever goes to the driver."""
        style = self.engine.parameter_style
        if style is None:
            raise ConfigError(
                f"tools declared in a policy file and row filters reading claims do not run on {self.engine.name} yet."
            )
        names = {node.this for node in tree.find_all(exp.Placeholder)}
        if names != set(values):
            raise InvalidArgument("the statement's parameters and the values given differ.")
        marked = tree.transform(
            lambda node: exp.var(f"\x00{node.this}\x00") if isinstance(node, exp.Placeholder) else node
        ).sql(dialect=self.dialect)
        if style == "pyformat":
            marked = marked.replace("%", "%%")  # a literal percent sign, not a placeholder
        text = _MARK.sub(lambda m: f"%({m.group(1)})s" if style == "pyformat" else f":{m.group(1)}", marked)
        return text, {name: self.engine.bind_value(value) for name, value in values.items()}

    def query(self, sql: str, *, limit: int, timeout_s: float | None = None) -> QueryResult:
        """The rows of a statement read through the path (the SQL the tools build themselves). A statement
        checked before, for a role without rules, is sent as it was then: the guard is a function of the
        text, the dialect and the settings, all the same."""
        executed = self._checked.get(sql) if self.role.unrestricted else None
        if executed is None:
            secured = self.run(sql, limit=limit, timeout_s=timeout_s)
            if self.role.unrestricted:
                if len(self._checked) >= CHECKED_KEPT:
                    self._checked.clear()
                self._checked[sql] = secured.executed
            return secured.result
        try:
            result = self.db.run(executed, limit=limit, timeout_s=timeout_s, fenced=False)
        except QueryFailed as exc:
            expression = guard.check_sql(
                sql, self.dialect, ShapeLimits.from_settings(self.settings), self.settings.limits.sql_max_size_argument
            )
            raise explain_error(exc, expression, self._catalog(), self.db.name) from None
        note_statement(sql, executed, len(result.rows))
        return result

    def distinct_values(self, table: str, column: str, limit: int) -> list[Any]:
        """Distinct values of a column for the value index, as the role sees them."""
        query = distinct_query(self._catalog().tables[table], column, limit, self.dialect)
        return [row[0] for row in self.query(query, limit=limit).rows]

    def held_values(self, table: str, column: str, values: list[Any]) -> set[Any]:
        """Which of `values` a column holds, as the role sees it (join confirmation)."""
        literals = [v for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)][:100]
        known = self._catalog().table(table)
        if not literals or known is None:
            return set()
        query = distinct_query(known, column, len(literals), self.dialect, among=literals)
        return {row[0] for row in self.query(query, limit=len(literals)).rows}

    def shown_sql(self, executed: str, expression: exp.Expression) -> str:
        """The SQL as executed, except for a restricted role: its filters may name what it cannot see."""
        return executed if self.role.unrestricted else render(expression, self.dialect)
