"""get_distinct_values: a column's distinct values from memory, or searched live over the whole table, never a
claim of absence that was not checked."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from typing import Annotated, Any, Protocol

from pydantic import Field
from sqlglot import exp

from sophrosyne.base import deadline
from sophrosyne.base.data_blocks import close_data, open_data
from sophrosyne.base.text import normalize
from sophrosyne.errors import QueryFailed, QueryTimeout, UnknownColumn
from sophrosyne.schema.catalog import Column, Table, table_ref
from sophrosyne.settings import Settings
from sophrosyne.sql.lookup import column_named, table_named
from sophrosyne.sql.queries import contains, prefix
from sophrosyne.sql.secure import SecurePath
from sophrosyne.tools.arguments import MAX_VALUES, count, not_too_long
from sophrosyne.tools.base import Context, Result, Screen, cell, cut_note, data_text, join_notes
from sophrosyne.tools.budget import cut_lists, fit
from sophrosyne.tools.value_cache import BESIDE_EXACT, ColumnValues, Match, ValueCache

# Time kept back from the call's deadline to answer once a live search stops (or a wait for the cache).
# Not the schema's or the listing's margin (schema/live.py, directives/moderator.py): what follows differs.
SEARCH_ANSWER_MARGIN_S = 0.3
# Matching values a live search keeps counting (more are summed into the coverage note only).
LIVE_KEEP = 10_000


class ValueCount(Result):
    value: Any
    count: int
    score: float | None = None
    match: str | None = Field(None, description="how the value matches the search: exact, substring or fuzzy")


class DistinctValues(Result):
    table: str
    column: str
    search: str | None = None
    values: list[ValueCount]
    note: str | None = None
    cut: str | None = None

    def agent_lines(self, nonce: str) -> list[str]:
        what = f" matching {self.search!r}" if self.search else ""
        lines = [
            f"{len(self.values)} distinct values of {self.table}.{self.column}{what} (value: count):",
            open_data(nonce),
        ]
        lines.extend(f"{data_text(v.value)}: {v.count}" + (f" ({v.match})" if v.match else "") for v in self.values)
        lines.append(close_data(nonce))
        lines.extend(x for x in (self.note, self.cut) if x)
        return lines

    def cut_to_budget(self, budget: int) -> None:
        total, base = len(self.values), self.cut

        def note(kept: dict[str, int]) -> None:
            left = total - kept["values"]
            more = f"cut: {left} more values not shown (token budget); pass a smaller limit." if left else None
            self.cut = join_notes(base, more)

        cut_lists(self, ["values"], budget, note)

    def show(self, screen: Screen) -> None:
        what = f" matching {self.search!r}" if self.search else ""
        table = screen.grid(screen.escape(f"{self.table}.{self.column}{what}"), "value", "count", "match")
        for v in self.values:
            # The tool's own word for the match (exact, substring, fuzzy), a fuzzy one with its score.
            score = f" {v.score:.0f}" if v.match == "fuzzy" and v.score is not None else ""
            table.add_row(screen.text(v.value), f"{v.count:,}", f"{v.match}{score}" if v.match else "")
        screen.show(table)
        screen.notes(self.note, self.cut)


class Grounded(Context, Protocol):
    """An environment with its grounder: the value counts it keeps, per role."""

    @property
    def grounder(self) -> Grounder: ...


def get_distinct_values(
    env: Grounded,
    table: Annotated[str, Field(description="Table name.")],
    column: Annotated[str, Field(description="Column name.")],
    search: Annotated[str | None, Field(description="Text to look for (exact, then fuzzy).")] = None,
    limit: Annotated[int | None, Field(description="Most values (default 50).")] = None,
) -> DistinctValues:
    """Distinct values of a column with counts: ground a filter value before writing SQL.

    Example: get_distinct_values(table="departments", column="dept_name", search="operations")
    """
    # With `search`, an exact match (case and spaces aside) alone, else values holding it, then fuzzy
    # neighbours, each with its match kind."""
    t = table_named(env.catalog, table, env.name)
    c = column_named(t, column)
    if search is not None:
        not_too_long(search, "search")
    settings = env.settings
    most, capped = count(limit, "limit", settings.reading.distinct_limit, MAX_VALUES)
    # The size the role sees decides the strategy: one decided by a filtered table's full size would tell.
    result = env.grounder.distinct_values(t, c, t.row_estimate, search, most, more=limit is not None)
    if capped:
        result.note = " ".join(x for x in (capped, result.note) if x)
    return fit(result, settings.limits.token_budget)


class Grounder:
    """get_distinct_values for one environment: cached value counts, or a live search within the deadline."""

    def __init__(self, secure: SecurePath, settings: Settings, cache: ValueCache, *, scope: tuple[str, str]) -> None:
        self.query = secure.query  # the environment's secured path: guard, the role's rewrite, a read-only session
        self.settings = settings
        self.engine = secure.engine
        self.dialect = self.engine.name
        self.cache = cache
        self.scope = scope  # (database, role): counts are per role

    def distinct_values(
        self, t: Table, c: Column, size: int | None, search: str | None, limit: int, *, more: bool = False
    ) -> DistinctValues:
        found = self._distinct_values(t, c, size, search, limit, more=more)
        iso = iso_date(search) if search and not _held(found) else None
        if iso is None:
            return found
        # A date written another way ("Nov 3, 2025") is looked up as dates are stored (2025-11-03).
        as_stored = self._distinct_values(t, c, size, iso, limit, more=more)
        if not _held(as_stored):
            return found
        as_stored.values = [v for v in as_stored.values if v.match in _HOLDING]
        as_stored.search = search
        as_stored.note = f"No value holds {search!r} as written; as the date {iso} it does: filter on the stored form."
        return as_stored

    def _distinct_values(
        self, t: Table, c: Column, size: int | None, search: str | None, limit: int, *, more: bool = False
    ) -> DistinctValues:
        key = (*self.scope, t.name, c.name)
        values = self.cache.get(key)
        small = (size or 0) <= self.settings.reading.distinct_scan_rows
        if values is None and small and not self.cache.too_many(key):
            wait = deadline.remaining(self.settings.limits.timeout_s) - SEARCH_ANSWER_MARGIN_S
            values = self.cache.load(key, lambda: self._count_values(t, c.name), wait)
        if values is not None:
            return self._from_memory(t, c, values, search, limit, more)
        # Not in memory (a large column, or one loading): answer live, and load its values for later calls.
        if not self.cache.too_many(key):
            self.cache.load(key, lambda: self._count_values(t, c.name), 0)
        status = self.cache.status(key)
        if search and search.strip():
            return self._search_live(t, c, search, limit, more, status)
        return self._common_live(t, c.name, limit, status)

    def _from_memory(
        self, t: Table, c: Column, values: ColumnValues, search: str | None, limit: int, more: bool
    ) -> DistinctValues:
        if search and search.strip():
            found = values.search(search, limit, more=more)
            note = _found_note(found, t, c, search, more, complete=True)
            return DistinctValues(table=t.name, column=c.name, search=search, values=self._shown(found), note=note)
        common = values.most_common(limit + 1)
        shown = [ValueCount(value=cell(v, self.settings.limits.value_chars), count=n) for v, n in common[:limit]]
        cut = cut_note(limit, len(values.counts), "values", "limit") if len(common) > limit else None
        return DistinctValues(table=t.name, column=c.name, values=shown, cut=cut)

    def _shown(self, found: list[Match]) -> list[ValueCount]:
        return [
            ValueCount(
                value=cell(m.value, self.settings.limits.value_chars), count=m.count, score=m.score, match=m.kind
            )
            for m in found
        ]

    def _count_values(self, t: Table, column: str) -> Counter[Any] | None:
        """Every distinct value with its count, grouped by the engine; None when there are too many."""
        col = exp.column(column, quoted=True)
        query = exp.select(col, exp.Count(this=exp.Star()).as_("n")).from_(table_ref(t)).group_by(col)
        result = self.query(query.sql(dialect=self.dialect), limit=self.cache.max_distinct)
        if result.truncated:
            return None
        return Counter({value: int(n) for value, n in result.rows})

    def _common_live(self, t: Table, column: str, limit: int, status: str | None) -> DistinctValues:
        col = exp.column(column, quoted=True)
        rows = self.settings.reading.distinct_scan_rows
        query = (
            exp.select(col, exp.Count(this=exp.Star()).as_("n"))
            .from_(prefix(t, col, rows))
            .group_by(col)
            .order_by(exp.Ordered(this=exp.column("n"), desc=True))
            .limit(limit + 1)
        )
        later = f"; {status}" if status else ""
        try:
            result = self.query(
                query.sql(dialect=self.dialect), limit=limit + 1, timeout_s=self.settings.reading.distinct_budget_s
            )
        except QueryTimeout:
            note = f"counting took longer than {self.settings.reading.distinct_budget_s:g} s{later}: ask again shortly."
            return DistinctValues(table=t.name, column=column, values=[], note=note)
        values = [ValueCount(value=cell(v, self.settings.limits.value_chars), count=int(n)) for v, n in result.rows]
        note = f"counts from the first {rows:,} rows{_of_rows(t)}{later}."
        cut = cut_note(limit, None, "values", "limit") if len(values) > limit else None
        return DistinctValues(table=t.name, column=column, values=values[:limit], note=note, cut=cut)

    def _search_live(
        self, t: Table, c: Column, search: str, limit: int, more: bool, status: str | None
    ) -> DistinctValues:
        """Values holding the search, read from the whole table, chunk by chunk where the engine allows, until
        the call's deadline: the note says how much was searched, and absence is claimed only when all was."""
        counts, searched, complete = self._scan(t, c, search)
        wanted = normalize(search)
        found = [
            Match(v, n, "exact" if normalize(v) == wanted else "substring", 100.0)
            for v, n in counts.items()
            if v is not None
        ]
        exact = [m for m in found if m.kind == "exact"]
        order = {"exact": 0, "substring": 1}
        found.sort(key=lambda m: (order[m.kind], -m.count, normalize(m.value)))
        if exact and not more:
            found = exact + [m for m in found if m.kind != "exact"][:BESIDE_EXACT]
        found = found[:limit]
        coverage = _coverage(t, searched, complete)
        note = _found_note(found, t, c, search, more, complete=complete, fuzzy=False)
        # Fuzzy neighbours need every value: they come once the values are in memory, if they can be.
        later = f"; {status}" if status and not exact else ""
        note = " ".join(x for x in (note, f"{coverage}{later}.") if x)
        return DistinctValues(table=t.name, column=c.name, search=search, values=self._shown(found), note=note)

    def _scan(self, t: Table, c: Column, search: str) -> tuple[Counter[Any], int | None, bool]:
        """Matching values and their counts, the rows searched (None: unknown), and whether all rows were."""
        col = exp.column(c.name, quoted=True)
        # Words in any spacing: "john  smith" finds "John Smith"; exactness is decided on the values after.
        condition = contains(self.engine, col, c.type, search, any_spacing=bool(search.split()))
        bounds = self._rowid_bounds(t)
        counts: Counter[Any] = Counter()
        if bounds is None:
            query = exp.select(col, exp.Count(this=exp.Star()).as_("n")).from_(table_ref(t)).where(condition)
            try:
                result = self.query(
                    query.group_by(col).sql(dialect=self.dialect),
                    limit=LIVE_KEEP,
                    timeout_s=max(0.05, deadline.remaining(self.settings.limits.timeout_s) - SEARCH_ANSWER_MARGIN_S),
                )
            except QueryTimeout:
                return counts, None, False
            counts.update({v: int(n) for v, n in result.rows})
            return counts, t.row_estimate, not result.truncated
        low, high = bounds
        step = self.settings.reading.distinct_scan_rows
        start = low
        searched = 0
        while start <= high:
            left = deadline.remaining(self.settings.limits.timeout_s) - SEARCH_ANSWER_MARGIN_S
            if left <= 0.05:
                return counts, searched, False
            rowid = exp.column("rowid")
            chunk = exp.and_(condition.copy(), rowid.between(start, start + step - 1))
            query = exp.select(col, exp.Count(this=exp.Star()).as_("n")).from_(table_ref(t)).where(chunk)
            began = time.monotonic()
            try:
                result = self.query(query.group_by(col).sql(dialect=self.dialect), limit=LIVE_KEEP, timeout_s=left)
            except QueryTimeout:
                return counts, searched, False
            for value, n in result.rows:
                counts[value] += int(n)
            searched += step
            start += step
            # Grow the chunk while a chunk is quick: fewer statements, and each still stops in time.
            if time.monotonic() - began < 0.1:
                step *= 2
        return counts, None, True

    def _rowid_bounds(self, t: Table) -> tuple[int, int] | None:
        """SQLite's rowid range, so a large table is searched chunk by chunk; None where there is none."""
        if self.engine.name != "sqlite" or t.kind != "table":
            return None
        query = exp.select(exp.Min(this=exp.column("rowid")), exp.Max(this=exp.column("rowid"))).from_(table_ref(t))
        try:
            result = self.query(query.sql(dialect=self.dialect), limit=1)
        except (QueryFailed, QueryTimeout, UnknownColumn):
            return None  # a WITHOUT ROWID table, or a role's filtered view of it
        low, high = result.rows[0] if result.rows else (None, None)
        if low is None or high is None:
            return None
        return int(low), int(high)


def _of_rows(table: Table) -> str:
    # A restricted role is not told the size of a filtered table.
    if table.row_estimate is None:
        return ""
    return f" of at least {table.row_estimate:,}" if table.rows_at_least else f" of ~{table.row_estimate:,}"


def _coverage(t: Table, searched: int | None, complete: bool) -> str:
    if complete:
        size = f" ~{t.row_estimate:,}" if t.row_estimate is not None and not t.rows_at_least else ""
        return f"Searched all{size} rows of {t.name}"
    if searched:
        return (
            f"Searched the first {searched:,} rows{_of_rows(t)} before the time limit: values in the rest were "
            "not checked"
        )
    return "The search did not finish within the time limit: values were not checked"


# Dates as people write them; the ISO form is how databases store (and compare) dates in text.
_DATE_FORMS = ("%b %d, %Y", "%B %d, %Y", "%b %d %Y", "%B %d %Y", "%d %b %Y", "%d %B %Y", "%m/%d/%Y", "%Y/%m/%d")


_HOLDING = ("exact", "substring")


def _held(found: DistinctValues) -> bool:
    """Whether a search found values that hold it (not only fuzzy neighbours)."""
    return any(v.match in _HOLDING for v in found.values)


def iso_date(text: str) -> str | None:
    """`text` as an ISO date (YYYY-MM-DD) when it is a date written in another common form, else None."""
    written = " ".join(text.replace(".", " ").split())
    for form in _DATE_FORMS:
        try:
            return dt.datetime.strptime(written, form).date().isoformat()
        except ValueError:
            continue
    return None


def _found_note(
    found: list[Match], t: Table, c: Column, search: str, more: bool, *, complete: bool, fuzzy: bool = True
) -> str | None:
    if found and found[0].kind == "exact" and not more:
        if all(m.kind == "exact" for m in found):
            return "Exact match (case and spaces aside); pass a limit to see similar values too."
        return "Exact match first (case and spaces aside), then values that contain it."
    if found:
        return None
    if complete and fuzzy:
        return f"No value of {t.name}.{c.name} resembles {search!r}: do not filter on a guess."
    if complete:
        return f"No value of {t.name}.{c.name} holds {search!r}; other spellings were not checked."
    return f"No value of {t.name}.{c.name} holding {search!r} was found in the rows searched."
