"""Distinct values of columns kept in memory: loaded in the background per role, searched exact-first."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from sophrosyne.base.text import normalize

_WORD = re.compile(r"\w+")
# Below this many values every value is scored; above it, only values sharing a word with the search.
FULL_SCAN_VALUES = 5_000
# A column whose load failed is not tried again for this long (its live search serves meanwhile).
RETRY_AFTER_S = 60.0


@dataclass
class Match:
    value: Any
    count: int
    kind: str  # exact, substring or fuzzy
    score: float


# Values that contain the search shown beside an exact match (the agent may be after a longer one).
BESIDE_EXACT = 4


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
        self._lowered = [normalize(v) for v in self._values]
        words: dict[str, list[int]] = {}
        for i, text in enumerate(self._lowered):
            for word in set(_WORD.findall(text)):
                words.setdefault(word, []).append(i)
        self._words = words

    def search(self, needle: str, limit: int, *, more: bool = False, cutoff: float = 60.0) -> list[Match]:
        """An exact match (case and spaces aside) first, then values holding the needle (a few beside an exact
        match, unless `more`), then, when nothing matched exactly, the closest fuzzy neighbours. Each says how it
        matched."""
        self._prepare()
        wanted = normalize(needle)
        exact = [i for i, text in enumerate(self._lowered) if text == wanted]
        found = [(i, "exact", 100.0) for i in exact]
        seen = set(exact)
        holding = [(i, "substring", 100.0) for i, text in enumerate(self._lowered) if wanted in text and i not in seen]
        if exact and not more:
            # The longer values an agent may be after ('Physics Teaching' beside 'Physics'), most frequent first.
            holding.sort(key=lambda f: -self.counts[self._values[f[0]]])
            holding = holding[:BESIDE_EXACT]
        found += holding
        # Neighbours only when nothing matched exactly: beside an exact match they are noise.
        if not exact and len(found) < limit:
            from rapidfuzz import fuzz, process  # loaded on the first fuzzy search, not at start-up

            seen = {i for i, _, _ in found}
            choices = {i: self._lowered[i] for i in self._candidates(wanted) if i not in seen}
            for _, score, i in process.extract(
                wanted, choices, scorer=fuzz.WRatio, limit=limit - len(found), score_cutoff=cutoff
            ):
                found.append((i, "fuzzy", round(min(score, 99.0), 1)))
        return self._ranked(found, limit)

    def _ranked(self, found: list[tuple[int, str, float]], limit: int) -> list[Match]:
        order = {"exact": 0, "substring": 1, "fuzzy": 2}
        found.sort(key=lambda f: (order[f[1]], -f[2], -self.counts[self._values[f[0]]], self._lowered[f[0]]))
        return [Match(self._values[i], self.counts[self._values[i]], kind, score) for i, kind, score in found[:limit]]

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


@dataclass
class Load:
    """How loading one column's values went, while it is not (or cannot be) in memory."""

    event: threading.Event
    started: float = field(default_factory=time.monotonic)
    failed: str | None = None  # why the values are not kept: too many, an error, a timeout

    def status(self) -> str:
        if self.failed:
            return f"its values are not kept in memory ({self.failed})"
        return f"its values are loading in the background ({time.monotonic() - self.started:.0f} s so far)"


class ValueCache:
    """Distinct values per (role, table, column), loaded in the background so a tool call stays in budget.

    A column is read once through the caller's secured path (so counts respect the role) and kept for
    `ttl_s`; columns with more than `max_distinct` values are not kept (a live search serves them), and
    the reason is kept to be told.
    """

    def __init__(self, *, ttl_s: float = 600.0, max_distinct: int = 200_000) -> None:
        self.ttl_s = ttl_s
        self.max_distinct = max_distinct
        self._values: dict[Hashable, ColumnValues] = {}
        self._loads: dict[Hashable, Load] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> ColumnValues | None:
        with self._lock:
            values = self._values.get(key)
            if values is not None and time.monotonic() - values.loaded_at > self.ttl_s:
                del self._values[key]
                return None
            return values

    def status(self, key: Hashable) -> str | None:
        """Why the column's values are not at hand, or None when nothing was tried."""
        with self._lock:
            load = self._loads.get(key)
        return None if load is None else load.status()

    def too_many(self, key: Hashable) -> bool:
        with self._lock:
            load = self._loads.get(key)
            return load is not None and load.failed is not None

    def load(self, key: Hashable, read: Callable[[], Counter[Any] | None], wait_s: float) -> ColumnValues | None:
        """Start loading `key` unless it is loading (or failed lately); wait up to `wait_s` for it."""
        with self._lock:
            load = self._loads.get(key)
            if load is not None and load.failed and time.monotonic() - load.started > RETRY_AFTER_S:
                load = None
            if load is None:
                load = Load(threading.Event())
                self._loads[key] = load
                threading.Thread(target=self._fill, args=(key, read, load), daemon=True).start()
        load.event.wait(max(0.0, wait_s))
        return self.get(key)

    def _fill(self, key: Hashable, read: Callable[[], Counter[Any] | None], load: Load) -> None:
        try:
            counts = read()
        except Exception as exc:  # the live search serves meanwhile; the reason is told
            load.failed = str(getattr(exc, "message", None) or type(exc).__name__).rstrip(".")
            load.event.set()
            return
        with self._lock:
            if counts is None or len(counts) > self.max_distinct:
                load.failed = f"more than {self.max_distinct:,} distinct values"
            else:
                self._values[key] = ColumnValues(counts)
                self._loads.pop(key, None)
        load.event.set()
