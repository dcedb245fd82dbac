"""Value grounding: the distinct values of a column, counted once per role and kept, searched by match."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz, process

_WORD = re.compile(r"\w+")
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
