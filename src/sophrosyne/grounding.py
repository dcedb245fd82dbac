"""Value grounding: the distinct values of a column, counted once per role and kept, searched by match."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz, process


@dataclass
class ColumnValues:
    """Every distinct value of a column with its count, as one role sees it."""

    counts: Counter[Any]
    loaded_at: float = field(default_factory=time.monotonic)
    _keys: list[str] | None = None
    _lowered: list[str] | None = None
    _values: list[Any] = field(default_factory=list)

    def keys(self) -> tuple[list[str], list[str]]:
        if self._keys is None:
            values = [v for v in self.counts if v is not None]
            self._keys = [str(v) for v in values]
            self._lowered = [k.lower() for k in self._keys]
            self._values = values
        assert self._lowered is not None
        return self._keys, self._lowered

    def search(self, needle: str, limit: int, cutoff: float = 60.0) -> list[tuple[Any, int, float]]:
        """Values holding `needle` first (by count), then the closest fuzzy matches (by score)."""
        keys, lowered = self.keys()
        needle = needle.strip().lower()
        hits: dict[int, float] = {i: 100.0 for i, k in enumerate(lowered) if needle in k}
        if len(hits) < limit:
            for _, score, i in process.extract(
                needle, lowered, scorer=fuzz.WRatio, limit=limit + len(hits), score_cutoff=cutoff
            ):
                hits.setdefault(i, round(min(score, 99.0), 1))
        ranked = sorted(hits.items(), key=lambda h: (-h[1], -self.counts[self._values[h[0]]], keys[h[0]]))
        return [(self._values[i], self.counts[self._values[i]], score) for i, score in ranked[:limit]]

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
            counts = None
            failed = True
        else:
            failed = False
        with self._lock:
            if not failed:
                too_big = counts is None or len(counts) > self.max_distinct
                self._values[key] = None if too_big else ColumnValues(counts or Counter())
            self._loading.pop(key, None)
        event.set()
