"""Value grounding: the distinct values of a column, counted once per role and kept, searched by match."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from sophrosyne.catalog import Column, Table, is_text_type
from sophrosyne.connection import QueryResult
from sophrosyne.engines import Engine
from sophrosyne.errors import QueryTimeout
from sophrosyne.results import DistinctValues, ValueCount, cell, cut_note
from sophrosyne.settings import Settings

_WORD = re.compile(r"\w+")
Query = Callable[..., QueryResult]
# Below this many values every value is scored; above it, only values sharing a word with the search.
FULL_SCAN_VALUES = 5_000


@dataclass
class ColumnValues:
    """Every distinct value of a column with its count, as one role sees it."""

    counts: Counter[Any]
    loaded_at: float = field(default_factory=time.monotonic)
    _values: list[Any] = field(default_factory=list)
    _lowered: list[str] = field(default_factory=list)
    _words: dict[str, list[int]] | None = None

    def _prepare(self) -> None:
        if self._words is not None:
            return
        self._values = [v for v in self.counts if v is not None]
        self._lowered = [str(v).lower() for v in self._values]
        words: dict[str, list[int]] = {}
        for i, text in enumerate(self._lowered):
            for word in set(_WORD.findall(text)):
                words.setdefault(word, []).append(i)
        self._words = words

    def search(self, needle: str, limit: int, cutoff: float = 60.0) -> list[tuple[Any, int, float]]:
        """Values holding `needle` first (by count), then the closest fuzzy matches (by score)."""
        from rapidfuzz import fuzz, process  # loaded on the first search, not at start-up

        self._prepare()
        assert self._words is not None
        needle = needle.strip().lower()
        hits: dict[int, float] = {i: 100.0 for i, text in enumerate(self._lowered) if needle in text}
        if len(hits) < limit:
            candidates = self._candidates(needle)
            choices = {i: self._lowered[i] for i in candidates}
            for _, score, i in process.extract(
                needle, choices, scorer=fuzz.WRatio, limit=limit + len(hits), score_cutoff=cutoff
            ):
                hits.setdefault(i, round(min(score, 99.0), 1))
        ranked = sorted(hits.items(), key=lambda h: (-h[1], -self.counts[self._values[h[0]]], self._lowered[h[0]]))
        return [(self._values[i], self.counts[self._values[i]], score) for i, score in ranked[:limit]]

    def _candidates(self, needle: str) -> range | set[int]:
        """Values worth a fuzzy score: all of a small column, else those sharing a (misspelt) word."""
        from rapidfuzz import fuzz, process

        assert self._words is not None
        if len(self._values) <= FULL_SCAN_VALUES:
            return range(len(self._values))
        vocabulary = list(self._words)
        found: set[int] = set()
        for word in set(_WORD.findall(needle)):
            for match, _, _ in process.extract(word, vocabulary, scorer=fuzz.ratio, limit=20, score_cutoff=70):
                found.update(self._words[match])
        return found

    def most_common(self, limit: int) -> list[tuple[Any, int]]:
        return self.counts.most_common(limit)


class ValueCache:
    """Distinct values per (role, table, column), loaded in the background so a tool call stays in budget.

    A column is read once through the caller's secured path (so counts respect the role) and kept for
    `ttl_s`; columns with more than `max_distinct` values are not kept (a live search serves them).
    """

    def __init__(self, *, ttl_s: float = 600.0, max_distinct: int = 200_000) -> None:
        self.ttl_s = ttl_s
        self.max_distinct = max_distinct
        self._values: dict[Hashable, ColumnValues | None] = {}
        self._loading: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> ColumnValues | None:
        with self._lock:
            values = self._values.get(key)
            if values is not None and time.monotonic() - values.loaded_at > self.ttl_s:
                del self._values[key]
                return None
            return values

    def too_many(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._values and self._values[key] is None

    def load(self, key: Hashable, read: Callable[[], Counter[Any] | None], wait_s: float) -> ColumnValues | None:
        """Start loading `key` unless it is loading already; wait up to `wait_s` for it."""
        with self._lock:
            event = self._loading.get(key)
            if event is None:
                event = threading.Event()
                self._loading[key] = event
                threading.Thread(target=self._fill, args=(key, read, event), daemon=True).start()
        event.wait(max(0.0, wait_s))
        return self.get(key)

    def _fill(self, key: Hashable, read: Callable[[], Counter[Any] | None], event: threading.Event) -> None:
        try:
            counts = read()
        except Exception:  # a failed load leaves the live search in charge; it reports its own errors
            with self._lock:
                self._loading.pop(key, None)
            event.set()
            return
        with self._lock:
            too_big = counts is None or len(counts) > self.max_distinct
            self._values[key] = None if too_big else ColumnValues(counts or Counter())
            self._loading.pop(key, None)
        event.set()


class Grounder:
    """get_distinct_values for one environment: cached value counts, or a live search within a budget."""

    def __init__(
        self, query: Query, settings: Settings, engine: Engine, cache: ValueCache, *, scope: tuple[str, str]
    ) -> None:
        self.query = query  # the environment's secured path: guard, the role's rewrite, a read-only session
        self.settings = settings
        self.engine = engine
        self.dialect = engine.name
        self.cache = cache
        self.scope = scope  # (database, role): counts are per role

    def distinct_values(self, t: Table, c: Column, size: int | None, search: str | None, limit: int) -> DistinctValues:
        key = (*self.scope, t.name, c.name)
        values = self.cache.get(key)
        small = (size or 0) <= self.settings.distinct_scan_rows
        if values is None and small and not self.cache.too_many(key):
            values = self.cache.load(key, lambda: self._count_values(t, c.name), self.settings.timeout_s)
        if values is not None:
            if search and search.strip():
                found = [
                    ValueCount(value=cell(v, self.settings.value_chars), count=n, score=score)
                    for v, n, score in values.search(search, limit)
                ]
                note = None if found else _no_match(t.name, c.name, search)
                return DistinctValues(table=t.name, column=c.name, search=search, values=found, note=note)
            common = values.most_common(limit + 1)
            shown = [ValueCount(value=cell(v, self.settings.value_chars), count=n) for v, n in common[:limit]]
            cut = cut_note(limit, len(values.counts), "values", "limit") if len(common) > limit else None
            return DistinctValues(table=t.name, column=c.name, values=shown, cut=cut)
        # A large column: answer live within the budget, then load its values for the next calls.
        if search and search.strip():
            result = self._search_live(t, c, search, limit)
        else:
            result = self._common_live(t, c.name, limit)
        if not self.cache.too_many(key):
            self.cache.load(key, lambda: self._count_values(t, c.name), 0)
        return result

    def _count_values(self, t: Table, column: str) -> Counter[Any] | None:
        """Every distinct value with its count, grouped by the engine; None when there are too many."""
        col = exp.column(column, quoted=True)
        query = exp.select(col, exp.Count(this=exp.Star()).as_("n")).from_(table_ref(t.name)).group_by(col)
        result = self.query(query.sql(dialect=self.dialect), limit=self.cache.max_distinct)
        if result.truncated:
            return None
        return Counter({value: int(n) for value, n in result.rows})

    def _common_live(self, t: Table, column: str, limit: int) -> DistinctValues:
        col = exp.column(column, quoted=True)
        rows = self.settings.distinct_scan_rows
        query = (
            exp.select(col, exp.Count(this=exp.Star()).as_("n"))
            .from_(_prefix(t.name, col, rows))
            .group_by(col)
            .order_by(exp.Ordered(this=exp.column("n"), desc=True))
            .limit(limit + 1)
        )
        try:
            result = self.query(
                query.sql(dialect=self.dialect), limit=limit + 1, timeout_s=self.settings.distinct_budget_s
            )
        except QueryTimeout:
            note = "counting took longer than the budget; the column's values are loading: ask again in a few seconds."
            return DistinctValues(table=t.name, column=column, values=[], note=note)
        values = [ValueCount(value=cell(v, self.settings.value_chars), count=int(n)) for v, n in result.rows]
        note = f"counts from the first {rows:,} rows{_of_rows(t)}; exact counts are loading."
        cut = cut_note(limit, None, "values", "limit") if len(values) > limit else None
        return DistinctValues(table=t.name, column=column, values=values[:limit], note=note, cut=cut)

    def _search_live(self, t: Table, c: Column, search: str, limit: int) -> DistinctValues:
        """Substring matches straight from the engine while the column's values load."""
        col = exp.column(c.name, quoted=True)
        rows = self.settings.distinct_scan_rows
        query = (
            exp.select(col, exp.Count(this=exp.Star()).as_("n"))
            .from_(_prefix(t.name, col, rows))
            .where(contains(self.engine, col, c.type, search))
            .group_by(col)
            .order_by(exp.Ordered(this=exp.column("n"), desc=True))
            .limit(limit)
        )
        # Not complete, so never "no match": the full list of values is loading for the next call.
        note = (
            f"substring matches among the first {rows:,} rows{_of_rows(t)}; all values of this "
            "column are loading: ask again in a few seconds for every match, misspellings included."
        )
        values: list[ValueCount] = []
        try:
            result = self.query(query.sql(dialect=self.dialect), limit=limit, timeout_s=self.settings.distinct_budget_s)
            values = [
                ValueCount(value=cell(v, self.settings.value_chars), count=int(n), score=100.0) for v, n in result.rows
            ]
        except QueryTimeout:
            note = (
                f"the search was stopped after {self.settings.distinct_budget_s:g} s; all values of this column "
                "are loading: ask again in a few seconds."
            )
        return DistinctValues(table=t.name, column=c.name, search=search, values=values, note=note)


def contains(engine: Engine, column: exp.Column, type_name: str, needle: str) -> exp.Expression:
    """`column` holds `needle`, ignoring case, as cheaply as the engine allows (wildcards in it are literal)."""
    text: exp.Expression = column if is_text_type(type_name) else exp.cast(column, exp.DataType.build("TEXT"))
    escaped = needle.strip().lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
    pattern = exp.Literal.string(f"%{escaped}%")
    like: exp.Expression
    if engine.has_ilike:
        like = exp.ILike(this=text, expression=pattern)
    elif engine.like_ignores_ascii_case and needle.isascii():
        like = exp.Like(this=text, expression=pattern)
    else:
        like = exp.Like(this=exp.Lower(this=text), expression=pattern)
    return exp.Escape(this=like, expression=exp.Literal.string("!"))


def table_ref(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _prefix(table: str, col: exp.Column, rows: int) -> exp.Subquery:
    """The first `rows` rows of one column: what a live answer on a large table may read."""
    return exp.select(col.copy()).from_(table_ref(table)).limit(rows).subquery("_scan")


def _of_rows(table: Table) -> str:
    # A restricted role is not told the size of a filtered table.
    return f" of ~{table.row_estimate:,}" if table.row_estimate is not None else ""


def _no_match(table: str, column: str, search: str) -> str:
    return f"no value of {table}.{column} resembles {search!r}: do not filter on a guess."
