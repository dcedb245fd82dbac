"""Environment: the fine-grained tools an agent explores a database with, all on one secured query path."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sophrosyne.base.deadline import bounded_call
from sophrosyne.base.text import one_line, shorten
from sophrosyne.database import Database, open_database
from sophrosyne.errors import CacheUnavailable, ConfigError, InvalidArgument, NotReady, QueryTimeout
from sophrosyne.schema.catalog import (
    Catalog,
    Column,
    ForeignKey,
    Table,
    is_text_type,
    load_bird_descriptions,
    table_ref,
)
from sophrosyne.settings import Settings
from sophrosyne.sql.hints import plan_hints, query_hints
from sophrosyne.sql.lookup import column_named, table_named
from sophrosyne.sql.policy import Policy, Role, load_policy
from sophrosyne.sql.policy.binding import Binding
from sophrosyne.sql.secure import Secured, SecurePath
from sophrosyne.tools import describing, finding, listing
from sophrosyne.tools.arguments import (
    MAX_FOUND_ROWS,
    MAX_HITS,
    MAX_VALUES,
    count,
    cut_for_directives,
    not_too_long,
)
from sophrosyne.tools.budget import fit
from sophrosyne.tools.grounding import Grounder, ValueCache, distinct_query
from sophrosyne.tools.results import (
    DistinctValues,
    FoundRows,
    QueryOutput,
    QueryPlan,
    SchemaHits,
    SourceInfo,
    TableDescription,
    TableGroupInfo,
    TableList,
    TableSummary,
    cell,
    cut_note,
    fit_rows,
)

if TYPE_CHECKING:
    from sophrosyne.directives.moderator import Moderator

logger = logging.getLogger("sophrosyne.environment")
# How long close waits for background work (which then stops at its next statement); threads are daemons.
CLOSE_WAIT_S = 2.0


class Environment:
    """The fine-grained API over one database, seen through one role."""

    def __init__(
        self,
        database: Database,
        *,
        settings: Settings | None = None,
        role: Role | None = None,
        descriptions: Path | None = None,
        values: ValueCache | None = None,
    ) -> None:
        self.db = database
        self.settings = settings or database.settings
        self.role = role or Role()
        self.descriptions = descriptions
        self.values = values or ValueCache()
        self.policy: Policy | None = None
        self._moderator: Moderator | None = None
        self._grounder: Grounder | None = None
        self._role_envs: dict[str, Environment] = {}
        self._seen: Catalog | None = None  # the database's catalog this environment last derived from
        self._catalog: Catalog | None = None
        # The schema the policy was checked against, shared by every role of this database (policy/binding.py).
        self.binding = Binding()
        self._admitted: Catalog | None = None  # what restricted roles' rules apply to
        # Calls run in threads side by side: what is set up once per environment is set up under this lock.
        self._lock = threading.RLock()
        self.secure = SecurePath(
            database, self.role, self.settings, policed=lambda: self._policed_catalog, catalog=lambda: self.catalog
        )
        self._threads: list[threading.Thread] = []
        self._closed = False

    @classmethod
    def open(
        cls,
        target: str | Path,
        *,
        settings: Settings | None = None,
        role: Role | None = None,
        role_name: str | None = None,
        descriptions: Path | None = None,
        name: str | None = None,
        probe: bool = True,
    ) -> Environment:
        """Open a database (URL, file path or `demo`) read-only and wrap it, as the policy's role when one is set.

        `name` is the source's name (default: the file's stem or the URL's database). With `probe` (the
        default) the database is reached and its schema read now, so that a bad target or policy fails here; a
        server passes False, starts at once, and reads the schema in the background."""
        settings = settings or Settings()
        if descriptions is not None and not Path(descriptions).is_dir():
            raise ConfigError(
                f"the descriptions folder {descriptions} does not exist.",
                hint="Give the folder that holds BIRD-style <table>.csv files (database_description/).",
            )
        if str(target) == "demo":  # the embedded HR database, as on the command line
            from importlib import resources

            target = Path(str(resources.files("sophrosyne") / "data" / "demo.sqlite"))
        policy = load_policy(settings.policy_file) if settings.policy_file else None
        if role is None and policy is not None:
            role = policy.role(role_name) if role_name else policy.default_role
        elif role_name and policy is None:
            raise ConfigError(
                f"--role {role_name} needs a policy file.", hint="Pass --policy FILE or set SOPHROSYNE_POLICY_FILE."
            )
        database = open_database(target, settings, name=name, probe=probe)
        env = cls(database, settings=settings, role=role, descriptions=descriptions)
        env.policy = policy
        if probe and policy is not None:
            try:
                _ = env.full_catalog  # checks the policy against the schema
            except BaseException:
                database.close()  # a refused policy leaves no connection behind
                raise
        return env

    def for_role(self, role: Role) -> Environment:
        """The same database, catalog and caches, seen by another role (kept, so each role is set up once)."""
        if role is self.role:
            return self
        with self._lock:
            env = self._role_envs.get(role.name)
            if env is None or env.role is not role:
                env = Environment(
                    self.db, settings=self.settings, role=role, descriptions=self.descriptions, values=self.values
                )
                env.binding = self.binding
                env.policy = self.policy
                self._role_envs[role.name] = env
            return env

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def full_catalog(self) -> Catalog:
        """The database's catalog, current (see liveness.py): what this environment derives is redone when
        the schema changes."""
        catalog = self.db.catalog()
        if catalog is not self._seen:
            if self.descriptions is not None:
                load_bird_descriptions(catalog, self.descriptions)
            # The policy is checked (the first time) and what appeared since is held back from restricted roles.
            admitted = self.binding.admit(catalog, self.policy)
            changed = self._seen is not None
            self._seen, self._admitted, self._catalog, self._moderator = catalog, admitted, None, None
            if changed and self.settings.directives == "directives":
                # The schema changed under a running server: its indexes are rebuilt now, not at the next question.
                self._in_background("sophrosyne-rewarm")
        return catalog

    @property
    def catalog(self) -> Catalog:
        """The catalog as this role sees it."""
        policed = self._policed_catalog
        if self._catalog is None:
            self._catalog = self.role.restrict(policed)
        return self._catalog

    @property
    def _policed_catalog(self) -> Catalog:
        """The catalog this role's rules apply to: the full one, less (for a restricted role) the tables and
        columns that appeared after the policy was checked."""
        full = self.full_catalog
        return full if self.role.unrestricted or self._admitted is None else self._admitted

    # -- tools -------------------------------------------------------------------------------------------

    @bounded_call
    def list_sources(self) -> list[SourceInfo]:
        return [
            SourceInfo(
                name=self.db.name,
                dialect=self.dialect,
                tables=len(self.catalog.tables),
                url=self.db.display_url,
            )
        ]

    @bounded_call
    def list_tables(
        self,
        question: str | None = None,
        knowledge: str | None = None,
        pattern: str | None = None,
        offset: int | None = None,
    ) -> TableList:
        """Tables with a one-line description, row estimate and join keys; same-shape groups shown once.

        On a large schema the listing is paged to fit the token budget (`offset` for the next page, `pattern`
        to filter names: a glob such as `sales_*` or a part of a name); with a question, directives too."""
        catalog = self.catalog
        budget = self.settings.token_budget
        base = TableList(source=shorten(self.db.name, 80), tables=[])
        question, knowledge, cut_inputs = cut_for_directives(
            question, knowledge, self.settings.question_chars, self.settings.knowledge_chars
        )
        try:
            base.directives, base.directive_note = self.moderator.directives(question, knowledge)
        except (NotReady, QueryTimeout, CacheUnavailable) as exc:  # the tables are listed all the same
            base.directive_note = f"No directives this time: {exc.message} {exc.hint or ''}".strip()
        base.directive_note = " ".join(x for x in (cut_inputs, base.directive_note) if x) or None
        if base.directives:
            # Directives take at most part of the budget, so that the tables are listed too.
            listing.cut_directives(base, budget * 2 // 5)

        def build(tables: list[TableSummary], groups: list[TableGroupInfo]) -> TableList:
            return base.model_copy(update={"tables": tables, "groups": groups})

        page = listing.page(
            catalog, build, pattern=pattern, offset=offset or 0, budget=budget, inferred=self._inferred_joins()
        )
        return fit(page, budget)

    @bounded_call
    def describe_table(self, table: str, offset: int | None = None) -> TableDescription:
        """Columns with type, keys, description, null share and real sample values; foreign keys both ways.

        A table too wide for the token budget is shown in pages of columns (`offset` for the next page)."""
        t = self._table(table)
        start = offset or 0
        if start < 0:
            raise InvalidArgument(f"`offset` must be 0 or more, not {start}.", hint="Leave it out to start at the top.")
        limit = self.settings.sample_rows
        result = self.secure.query(_select_all(t, self.dialect, limit), limit=limit)
        inferred = self._inferred_joins()
        own = [*t.foreign_keys, *inferred.get(t.name, [])]
        columns = describing.column_infos(
            t, start, result.columns, result.rows, self.settings.sample_values, self.settings.value_chars, own
        )
        described = TableDescription(
            table=t.name,
            kind=t.kind,
            description=one_line(t.description),
            row_estimate=t.row_estimate,
            rows_at_least=t.rows_at_least,
            columns=columns,
            references=[listing.join_key(fk) for fk in own],
            referenced_by=[
                f"{name}.{', '.join(fk.columns)} -> {', '.join(fk.ref_columns)}"
                + (f" (inferred, {fk.confidence:.2f})" if fk.inferred else "")
                for name, fk in [
                    *self.catalog.references_to(t.name),
                    *((n, fk) for n, fks in inferred.items() for fk in fks if fk.ref_table == t.name),
                ]
            ],
            sampled_rows=len(result.rows),
            reminder=self.moderator.reminder([t.name]),
        )
        return describing.paged(described, start, len(t.columns), self.settings.token_budget)

    @bounded_call
    def get_distinct_values(
        self, table: str, column: str, search: str | None = None, limit: int | None = None
    ) -> DistinctValues:
        """Distinct values with counts; with `search`, an exact match (case and spaces aside) alone, else values
        holding it, then fuzzy neighbours, each with its match kind."""
        t = self._table(table)
        c = self._column(t, column)
        if search is not None:
            not_too_long(search, "search")
        most, capped = count(limit, "limit", self.settings.distinct_limit, MAX_VALUES)
        # The size the role sees decides the strategy: one decided by a filtered table's full size would tell.
        result = self.grounder.distinct_values(t, c, t.row_estimate, search, most, more=limit is not None)
        if capped:
            result.note = " ".join(x for x in (capped, result.note) if x)
        return fit(result, self.settings.token_budget)

    @property
    def grounder(self) -> Grounder:
        if self._grounder is None:
            self._grounder = Grounder(
                self.secure.query, self.settings, self.db.engine, self.values, scope=(self.db.name, self.role.name)
            )
        return self._grounder

    @bounded_call
    def find_rows(
        self, term: str, table: str | None = None, columns: list[str] | None = None, limit: int | None = None
    ) -> FoundRows:
        """Rows where `term` occurs (case-insensitive substring) in text columns, table by table."""
        if not term.strip():
            raise InvalidArgument("find_rows needs a non-empty term.", hint="Pass the word or value to look for.")
        not_too_long(term, "term")
        limit, capped = count(limit, "limit", self.settings.find_rows_limit, MAX_FOUND_ROWS)
        tables = [self._table(table)] if table else [t for t in self.catalog.tables.values() if t.kind == "table"]
        wanted = {x.lower() for x in columns or []}

        def names_of(t: Table) -> list[str]:
            if columns and table:
                return [self._column(t, c).name for c in columns]
            if columns:
                return [c.name for c in t.columns if c.name.lower() in wanted]
            return [c.name for c in t.columns if is_text_type(c.type)]

        found = finding.find_rows(
            term,
            tables,
            names_of,
            lambda sql, most: self.secure.query(sql, limit=most),
            self.db.engine,
            limit=limit,
            value_chars=self.settings.value_chars,
            timeout_s=self.settings.timeout_s,
            note=capped,
        )
        return fit(found, self.settings.token_budget)

    @bounded_call
    def execute_sql(self, sql: str, limit: int | None = None) -> QueryOutput:
        """Run one read-only statement; rows capped, with the SQL as executed."""
        cap, capped = count(limit, "limit", self.settings.row_cap, self.settings.row_cap, "row_cap")
        result, executed, expression = self._secure(sql, limit=cap)
        read = [ref.name for ref in expression.find_all(exp.Table)]
        rows = [[cell(v, self.settings.value_chars) for v in r] for r in result.rows]
        shown, cut_by_budget = fit_rows(result.columns, rows, self.settings.token_budget)
        cut = (
            cut_note(len(shown), None if result.truncated else len(rows), "rows", "token budget")
            if cut_by_budget
            else None
        )
        slow = result.elapsed_ms >= self.settings.slow_query_s * 1000
        output = QueryOutput(
            hints=query_hints(expression, self.catalog, self.db.index_leads()) if slow else [],
            columns=result.columns,
            rows=shown,
            row_count=len(shown),
            truncated=result.truncated or cut_by_budget,
            sql_executed=self.secure.shown_sql(executed, expression),
            elapsed_ms=round(result.elapsed_ms, 2),
            reminder=self._reminder(read),
            note=" ".join(x for x in (capped, result.cut) if x) or None,
            cut=cut,
        )
        return fit(output, self.settings.token_budget)

    @bounded_call
    def search_schema(self, query: str, k: int | None = 10) -> SchemaHits:
        """The columns best matching `query` (BM25 and embeddings over names and descriptions, fused)."""
        if not query.strip():
            raise InvalidArgument("search_schema needs a query.", hint="Describe the column, e.g. 'date of absence'.")
        k, capped = count(k, "k", 10, MAX_HITS)
        text = shorten(query, self.settings.question_chars, at_word=True)
        hits = SchemaHits(query=query, hits=self.moderator.search(text, k), note=capped)
        return fit(hits, self.settings.token_budget)

    def warm(self, wait: bool = False) -> None:
        """Read the schema and build (or load) the directive indexes now, in the background; with `wait`,
        block until they are ready: tools are bounded by `timeout_s`, and a first call on a fresh database
        would otherwise answer without directives while they build (a benchmark waits here first)."""
        self.db.start_reading_catalog()
        if self.settings.directives != "directives":
            if wait:
                _ = self.catalog
        elif wait:
            self.moderator.warm(wait=True)
        else:
            self._in_background("sophrosyne-warm")

    def _in_background(self, name: str) -> None:
        with self._lock:
            if self._closed:
                return
            thread = threading.Thread(target=self._warm_moderator, name=name, daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _warm_moderator(self) -> None:
        try:
            self.moderator.warm(wait=False)
        except Exception as exc:  # the first call that needs them reports the error itself
            if not self._closed:
                logger.warning("could not prepare the directive indexes in advance: %s", exc)

    def close(self) -> None:
        """Close the database (every role's view of it) and wait a moment for the indexes being built in the
        background, which stop at their next statement; closing again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            views = [self, *self._role_envs.values()]
        self.db.close()
        for env in views:
            env._closed = True
            for thread in env._threads:
                thread.join(CLOSE_WAIT_S)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_oracle(self, gold_sql: str | None) -> None:
        """For experiments: the reference SQL that `oracle` directives are computed from."""
        self.moderator.oracle_sql = gold_sql

    @property
    def moderator(self) -> Moderator:
        catalog = self.catalog  # read first: a changed schema resets the moderator
        with self._lock:
            if self._moderator is None:
                # Imported here: directives and their indexes are not needed to run SQL, and load slowly.
                from sophrosyne.directives.moderator import Moderator

                self._moderator = Moderator(
                    catalog,
                    self.settings,
                    self._distinct_sample,
                    self.dialect,
                    shared=self.role.unrestricted,
                    probe=self._value_probe,
                )
            return self._moderator

    # -- join inference (sophrosyne.schema.joins) -------------------------------------------------------------------

    def _inferred_joins(self) -> dict[str, list[ForeignKey]]:
        """Joins the schema does not declare, inferred for this role (names, confirmed by values within
        `join_inference_s`), by table; shown marked as inferred. Declared keys win: none is repeated here."""
        by_table: dict[str, list[ForeignKey]] = {}
        try:
            prepared = self.moderator.prepared
        except NotReady:
            return by_table  # still inferring on a large schema: shown once ready, never worth a late answer
        for join in prepared.joins.joins:
            by_table.setdefault(join.table, []).append(join.as_foreign_key())
        return by_table

    def _value_probe(self, table: str, column: str, values: list[Any]) -> set[Any]:
        """Which of `values` a column holds, read through this role's secured path (join confirmation)."""
        literals = [v for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)][:100]
        known = self.catalog.table(table)
        if not literals or known is None:
            return set()
        query = distinct_query(known, column, len(literals), self.dialect, among=literals)
        return {row[0] for row in self.secure.query(query, limit=len(literals)).rows}

    def _distinct_sample(self, table: str, column: str, limit: int) -> list[Any]:
        """Distinct values of a column for the value index, read through this role's secured path."""
        query = distinct_query(self.catalog.tables[table], column, limit, self.dialect)
        return [row[0] for row in self.secure.query(query, limit=limit).rows]

    @bounded_call
    def explain_sql(self, sql: str) -> QueryPlan:
        """The engine's plan for a read-only statement, with hints about full scans of large tables."""
        result, executed, expression = self._secure(sql, limit=500, explain=True)
        plan, scanned = self.db.engine.read_plan(result.columns, result.rows)
        # Sizes as this role sees them: a filtered table's full size is not its to know.
        hints = plan_hints(expression, self.catalog, self.db.index_leads(), scanned)
        if not self.role.unrestricted:
            # A plan shows filter predicates, index names and base-table sizes: a restricted role gets hints only.
            hidden = QueryPlan(
                sql_executed=self.secure.shown_sql(executed, expression),
                plan=[],
                hints=sorted(set(hints)),
                note="the plan itself is not shown to a restricted role; the hints are.",
            )
            return fit(hidden, self.settings.token_budget)
        return fit(QueryPlan(sql_executed=executed, plan=plan, hints=sorted(set(hints))), self.settings.token_budget)

    # -- the one secured path (sql/secure.py) --------------------------------------------------------------

    def _secure(self, sql: str, *, limit: int, timeout_s: float | None = None, explain: bool = False) -> Secured:
        return self.secure.run(sql, limit=limit, timeout_s=timeout_s, explain=explain)

    def _reminder(self, tables: list[str]) -> str | None:
        # Reminders follow directives, which only a moderator gives: without one there is nothing to remind.
        return self._moderator.reminder(tables) if self._moderator is not None else None

    # -- lookups with helpful errors ------------------------------------------------------------------------

    def _table(self, name: str) -> Table:
        return table_named(self.catalog, name, self.db.name)

    def _column(self, table: Table, name: str) -> Column:
        return column_named(table, name)


def _select_all(table: Table, dialect: str, limit: int) -> str:
    return exp.select("*").from_(table_ref(table)).limit(limit).sql(dialect=dialect)
