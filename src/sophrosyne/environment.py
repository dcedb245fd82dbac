"""Environment: the fine-grained tools an agent explores a database with, all on one secured query path."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sophrosyne import guard
from sophrosyne.audit import note_statement
from sophrosyne.catalog import Catalog, Column, ForeignKey, Table, is_text_type, load_bird_descriptions
from sophrosyne.connection import Database, QueryResult, open_database
from sophrosyne.errors import ConfigError, InvalidArgument, QueryFailed, QueryTimeout
from sophrosyne.grounding import Grounder, ValueCache, contains, table_ref
from sophrosyne.hints import query_hints
from sophrosyne.lookup import column_named, explain_error, table_named
from sophrosyne.policy import Policy, Role, load_policy
from sophrosyne.results import (
    CHARS_PER_TOKEN,
    ColumnInfo,
    DistinctValues,
    FoundRows,
    QueryOutput,
    QueryPlan,
    SchemaHits,
    SourceInfo,
    TableDescription,
    TableGroupInfo,
    TableList,
    TableRows,
    TableSummary,
    cell,
    cut_note,
    fit_rows,
    one_line,
    shorten,
)
from sophrosyne.settings import Settings

if TYPE_CHECKING:
    from sophrosyne.moderation import Moderator

LARGE_TABLE_ROWS = 100_000


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
        self._full_catalog: Catalog | None = None
        self._catalog: Catalog | None = None

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
    ) -> Environment:
        """Open a database (URL, file path, or `demo`) read-only and wrap it, as the policy's role when one is set.

        `name` is the source's name (default: the file's stem or the URL's database)."""
        settings = settings or Settings()
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
        env = cls(open_database(target, settings, name=name), settings=settings, role=role, descriptions=descriptions)
        env.policy = policy
        if policy is not None:
            policy.check(env.full_catalog)
        return env

    def for_role(self, role: Role) -> Environment:
        """The same database, catalog and caches, seen by another role (kept, so each role is set up once)."""
        if role is self.role:
            return self
        env = self._role_envs.get(role.name)
        if env is None or env.role is not role:
            env = Environment(
                self.db, settings=self.settings, role=role, descriptions=self.descriptions, values=self.values
            )
            env._full_catalog = self.full_catalog
            env.policy = self.policy
            self._role_envs[role.name] = env
        return env

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def full_catalog(self) -> Catalog:
        if self._full_catalog is None:
            catalog = self.db.catalog()
            if self.descriptions is not None:
                load_bird_descriptions(catalog, self.descriptions)
            self._full_catalog = catalog
        return self._full_catalog

    @property
    def catalog(self) -> Catalog:
        """The catalog as this role sees it."""
        if self._catalog is None:
            self._catalog = self.role.restrict(self.full_catalog)
        return self._catalog

    # -- tools -------------------------------------------------------------------------------------------

    def list_sources(self) -> list[SourceInfo]:
        return [
            SourceInfo(
                name=self.db.name,
                dialect=self.dialect,
                tables=len(self.catalog.tables),
                url=self.db.display_url,
            )
        ]

    def list_tables(self, question: str | None = None, knowledge: str | None = None) -> TableList:
        """Tables with a one-line description, row estimate and join keys; same-shape groups shown once."""
        catalog = self.catalog
        groups = catalog.groups()
        grouped = {name for g in groups for name in g.tables[1:]}
        group_info = [
            TableGroupInfo(
                pattern=g.pattern,
                count=len(g.tables),
                first=g.tables[0],
                last=g.tables[-1],
                columns=len(catalog.tables[g.tables[0]].columns),
            )
            for g in groups
        ]
        # The budget is applied while building, so a 10,000-table schema costs what the response holds.
        budget = self.settings.token_budget * CHARS_PER_TOKEN
        listed = [t for t in catalog.tables.values() if t.name not in grouped]
        shown: list[TableSummary] = []
        used = 0
        inferred = self._inferred_joins()
        for t in listed:
            keys = [_join_key(fk) for fk in [*t.foreign_keys, *inferred.get(t.name, [])]]
            description = one_line(t.description)
            used += len(t.name) + len(description) + 40 + sum(len(k) for k in keys)
            if used > budget and shown:
                break
            shown.append(
                TableSummary(
                    name=t.name, kind=t.kind, description=description, row_estimate=t.row_estimate, join_keys=keys
                )
            )
        cut = None
        if len(shown) < len(listed):
            cut = cut_note(len(shown), len(listed), "tables", "token budget") + (
                " Use search_schema to find the columns you need."
            )
        directives, note = self.moderator.directives(question, knowledge)
        return TableList(
            source=self.db.name, tables=shown, groups=group_info, directives=directives, directive_note=note, cut=cut
        )

    def describe_table(self, table: str) -> TableDescription:
        """Columns with type, keys, description, null share and real sample values; foreign keys both ways."""
        t = self._table(table)
        limit = self.settings.sample_rows
        result = self._query(_select_all(t, self.dialect, limit), limit=limit)
        index = {c.lower(): i for i, c in enumerate(result.columns)}
        by_column = list(zip(*result.rows, strict=True)) if result.rows else []
        inferred = self._inferred_joins()
        own = [*t.foreign_keys, *inferred.get(t.name, [])]
        fk_of = {col.lower(): fk for fk in reversed(own) for col in fk.columns}
        columns = []
        for c in t.columns:
            i = index.get(c.name.lower())
            values = by_column[i] if i is not None and by_column else ()
            nulls = values.count(None)
            counts = Counter(values)
            counts.pop(None, None)
            samples = [cell(v, self.settings.value_chars) for v, _ in counts.most_common(self.settings.sample_values)]
            key = "PK" if c.primary_key else None
            fk = fk_of.get(c.name.lower())
            if fk is not None:
                target = (
                    f"FK -> {fk.ref_table}.{fk.ref_columns[fk.columns.index(c.name)] if c.name in fk.columns else ''}"
                    + (f" (inferred, {fk.confidence:.2f})" if fk.inferred else "")
                )
                key = f"{key}, {target}" if key else target
            desc = "; ".join(p for p in (c.readable_name, c.description, c.value_description) if p)
            columns.append(
                ColumnInfo(
                    name=c.name,
                    type=c.type,
                    key=key,
                    nullable=c.nullable,
                    description=shorten(desc, 200),
                    null_share=round(nulls / len(values), 3) if values else None,
                    samples=samples,
                )
            )
        return TableDescription(
            table=t.name,
            kind=t.kind,
            description=one_line(t.description),
            row_estimate=t.row_estimate,
            columns=columns,
            references=[_join_key(fk) for fk in own],
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

    def get_distinct_values(
        self, table: str, column: str, search: str | None = None, limit: int | None = None
    ) -> DistinctValues:
        """Distinct values with counts; with `search`, values holding it first, then fuzzy matches."""
        t = self._table(table)
        c = self._column(t, column)
        limit = _count(limit, "limit", self.settings.distinct_limit, 1000)
        # The size the role sees decides the strategy: one decided by a filtered table's full size would tell.
        return self.grounder.distinct_values(t, c, t.row_estimate, search, limit)

    @property
    def grounder(self) -> Grounder:
        if self._grounder is None:
            self._grounder = Grounder(
                self._query, self.settings, self.db.engine, self.values, scope=(self.db.name, self.role.name)
            )
        return self._grounder

    def find_rows(
        self, term: str, table: str | None = None, columns: list[str] | None = None, limit: int | None = None
    ) -> FoundRows:
        """Rows where `term` occurs (case-insensitive substring) in text columns, table by table."""
        if not term.strip():
            raise InvalidArgument("find_rows needs a non-empty term.", hint="Pass the word or value to look for.")
        limit = _count(limit, "limit", self.settings.find_rows_limit, 500)
        tables = [self._table(table)] if table else [t for t in self.catalog.tables.values() if t.kind == "table"]
        deadline = time.monotonic() + self.settings.timeout_s
        matches: list[TableRows] = []
        searched = 0
        for t in tables:
            if time.monotonic() > deadline:
                break
            names = (
                [self._column(t, c).name for c in columns]
                if columns and table
                else [c.name for c in t.columns if is_text_type(c.type)]
            )
            if columns and not table:
                names = [c.name for c in t.columns if c.name.lower() in {x.lower() for x in columns}]
            if not names:
                continue
            searched += 1
            types = {c.name: c.type for c in t.columns}
            condition = exp.or_(
                *(contains(self.db.engine, exp.column(n, quoted=True), types.get(n, ""), term) for n in names)
            )
            query = exp.select("*").from_(table_ref(t.name)).where(condition).limit(limit)
            try:
                result = self._query(
                    query.sql(dialect=self.dialect),
                    limit=limit,
                    timeout_s=max(0.05, deadline - time.monotonic()),
                )
            except QueryTimeout:
                break
            if not result.rows:
                continue
            rows = [[cell(v, self.settings.value_chars) for v in r] for r in result.rows]
            matched = sorted(
                {n for n in names for r in result.rows if term.lower() in str(r[result.columns.index(n)] or "").lower()}
                if all(n in result.columns for n in names)
                else set(names)
            )
            matches.append(TableRows(table=t.name, columns=result.columns, rows=rows, matched_columns=matched))
        cut = None
        if searched < len(tables) and time.monotonic() > deadline:
            cut = f"cut: stopped after {self.settings.timeout_s:g} s; {len(tables) - searched} tables not searched."
        budget = self.settings.token_budget
        for m in matches:
            m.rows, was_cut = fit_rows(m.columns, m.rows, budget // max(1, len(matches)))
            if was_cut:
                cut = (cut or "") + f" rows of {m.table} cut to fit the token budget."
        return FoundRows(term=term, matches=matches, searched_tables=searched, cut=(cut or "").strip() or None)

    def execute_sql(self, sql: str, limit: int | None = None) -> QueryOutput:
        """Run one read-only statement; rows capped, with the SQL as executed."""
        cap = _count(limit, "limit", self.settings.row_cap, self.settings.row_cap)
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
        return QueryOutput(
            hints=query_hints(expression, self.catalog, self.db.index_leads()) if slow else [],
            columns=result.columns,
            rows=shown,
            row_count=len(shown),
            truncated=result.truncated or cut_by_budget,
            sql_executed=self._shown_sql(executed, expression),
            elapsed_ms=round(result.elapsed_ms, 2),
            reminder=self._reminder(read),
            cut=cut,
        )

    def search_schema(self, query: str, k: int = 10) -> SchemaHits:
        """The columns best matching `query` (BM25 and embeddings over names and descriptions, fused)."""
        if not query.strip():
            raise InvalidArgument("search_schema needs a query.", hint="Describe the column, e.g. 'date of absence'.")
        k = _count(k, "k", 10, 100)
        return SchemaHits(query=query, hits=self.moderator.search(query, k))

    def set_oracle(self, gold_sql: str | None) -> None:
        """For experiments: the reference SQL that `oracle` directives are computed from."""
        self.moderator.oracle_sql = gold_sql

    @property
    def moderator(self) -> Moderator:
        if self._moderator is None:
            # Imported here: directives and their indexes are not needed to run SQL, and load slowly.
            from sophrosyne.moderation import Moderator

            self._moderator = Moderator(
                self.catalog,
                self.settings,
                self._distinct_sample,
                self.dialect,
                shared=self.role.unrestricted,
                probe=self._value_probe,
            )
        return self._moderator

    # -- join inference (sophrosyne.joins) -------------------------------------------------------------------

    def _inferred_joins(self) -> dict[str, list[ForeignKey]]:
        """Joins the schema does not declare, inferred for this role (names, confirmed by values within
        `join_inference_s`), by table; shown marked as inferred. Declared keys win: none is repeated here."""
        by_table: dict[str, list[ForeignKey]] = {}
        for join in self.moderator.prepared.joins.joins:
            by_table.setdefault(join.table, []).append(join.as_foreign_key())
        return by_table

    def _value_probe(self, table: str, column: str, values: list[Any]) -> set[Any]:
        """Which of `values` a column holds, read through this role's secured path (join confirmation)."""
        literals = [v for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)][:100]
        if not literals:
            return set()
        target = exp.column(column, quoted=True)
        query = (
            exp.select(target)
            .distinct()
            .from_(table_ref(table))
            .where(target.isin(*(exp.convert(v) for v in literals)))
            .limit(len(literals))
            .sql(dialect=self.dialect)
        )
        return {row[0] for row in self._query(query, limit=len(literals)).rows}

    def _distinct_sample(self, table: str, column: str, limit: int) -> list[Any]:
        """Distinct values of a column for the value index, read through this role's secured path."""
        query = (
            exp.select(exp.column(column, quoted=True))
            .distinct()
            .from_(table_ref(table))
            .limit(limit)
            .sql(dialect=self.dialect)
        )
        return [row[0] for row in self._query(query, limit=limit).rows]

    def explain_sql(self, sql: str) -> QueryPlan:
        """The engine's plan for a read-only statement, with hints about full scans of large tables."""
        result, executed, expression = self._secure(sql, limit=500, explain=True)
        plan, scanned = self.db.engine.read_plan(result.columns, result.rows)
        # Sizes as this role sees them: a filtered table's full size is not its to know.
        hints = query_hints(expression, self.catalog, self.db.index_leads())
        hints += [
            f"full scan of {t.name} (~{t.row_estimate:,} rows), a large table: filter on an indexed column "
            "or the leading column of a composite index."
            for t in self.catalog.tables.values()
            if t.name.lower() in scanned
            and (t.row_estimate or 0) >= LARGE_TABLE_ROWS
            # The hint read from the query already names the column: the plan's adds nothing.
            and not any(h.startswith(f"full scan of {t.name} (") for h in hints)
        ]
        if not self.role.unrestricted:
            # A plan shows filter predicates, index names and base-table sizes: a restricted role gets hints only.
            return QueryPlan(
                sql_executed=self._shown_sql(executed, expression),
                plan=[],
                hints=sorted(set(hints)),
                note="the plan itself is not shown to a restricted role; the hints are.",
            )
        return QueryPlan(sql_executed=executed, plan=plan, hints=sorted(set(hints)))

    # -- the one secured path -----------------------------------------------------------------------------

    def _secure(
        self, sql: str, *, limit: int, timeout_s: float | None = None, explain: bool = False
    ) -> tuple[QueryResult, str, exp.Expression]:
        """Guard, then the role's rewrite, then a read-only session: the only way a tool reads data.

        With `explain`, the engine plans the rewritten statement instead of running it.
        """
        expression = guard.check_sql(sql, self.dialect)
        # An unrestricted role reads as it wrote: it needs no catalog, which is slow to read on a large schema.
        rewritten = (
            expression if self.role.unrestricted else self.role.rewrite(expression, self.full_catalog, self.dialect)
        )
        executed = rewritten.sql(dialect=self.dialect)
        sent = f"{self.db.engine.explain} {executed}" if explain else executed
        try:
            result = self.db.run(sent, limit=limit, timeout_s=timeout_s, fenced=self.role.filters_rows)
        except QueryFailed as exc:
            raise explain_error(exc, expression, self.catalog, self.db.name) from None
        if explain:
            note_statement(sql, sent, len(result.rows))
            return result, executed, expression
        if not self.role.unrestricted:
            # The third layer: rows outside the role's scope are dropped even if a rewrite let them through.
            kept = self.role.filter_rows(self.role.scoped_table(expression), result.columns, result.rows)
            result = QueryResult(result.columns, kept, result.truncated, result.elapsed_ms)
        note_statement(sql, executed, len(result.rows))
        return result, executed, expression

    def _reminder(self, tables: list[str]) -> str | None:
        # Reminders follow directives, which only a moderator gives: without one there is nothing to remind.
        return self._moderator.reminder(tables) if self._moderator is not None else None

    def _shown_sql(self, executed: str, expression: exp.Expression) -> str:
        """The SQL as executed, except for a restricted role: its filters may name what it cannot see."""
        return executed if self.role.unrestricted else expression.sql(dialect=self.dialect)

    def _query(self, sql: str, *, limit: int, timeout_s: float | None = None) -> QueryResult:
        return self._secure(sql, limit=limit, timeout_s=timeout_s)[0]

    # -- lookups with helpful errors ------------------------------------------------------------------------

    def _table(self, name: str) -> Table:
        return table_named(self.catalog, name, self.db.name)

    def _column(self, table: Table, name: str) -> Column:
        return column_named(table, name)


def _join_key(fk: ForeignKey) -> str:
    inferred = f" (inferred, {fk.confidence:.2f})" if fk.inferred else ""
    return f"{', '.join(fk.columns)} -> {fk.ref_table}.{', '.join(fk.ref_columns)}{inferred}"


def _count(value: int | None, name: str, default: int, most: int) -> int:
    """A count argument (limit, k): the default when absent, at most `most`; below 1 is the caller's error."""
    if value is None:
        return min(default, most)
    if value < 1:
        raise InvalidArgument(
            f"`{name}` must be 1 or more, not {value}.", hint=f"Leave it out for the default, {default}."
        )
    return min(value, most)


def _select_all(table: Table, dialect: str, limit: int) -> str:
    return exp.select("*").from_(table_ref(table.name)).limit(limit).sql(dialect=dialect)
