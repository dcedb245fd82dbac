"""A statement's rows read a few at a time, each long value cut as it arrives and the result's bytes bounded.

The row cap bounds the answer; this bounds the memory: 30 rows of `repeat('x', 100000000)` held 2.6 to 5.9 GB
in one call. Each engine hands rows over as they are asked for (see Engine.reading: server-side cursors on
PostgreSQL and MySQL, whose drivers read a whole result first otherwise).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import chain
from typing import Any
from uuid import UUID

from sophrosyne.engines.base import Cursor

# Rows fetched at most at once, and the share of the byte bound one fetch may bring in at the largest row
# size seen so far: the first fetch is one row, whose size sets the next.
_MOST_AT_ONCE = 10_000
_FETCH_SHARE = 8
_MEASURED = 100


@dataclass
class Read:
    """Rows as read, with what was cut on the way."""

    rows: list[tuple[Any, ...]]
    more: bool  # the result had more rows than were kept (past the limit, or past the byte bound)
    values_cut: int = 0  # values longer than the bound, cut as they arrived
    stopped_at_bytes: int | None = None  # the byte bound, when reading stopped there

    def note(self) -> str | None:
        """What the reader should know of the cuts, in one sentence; None when nothing was cut."""
        parts = []
        if self.values_cut:
            parts.append(f"{self.values_cut:,} values were too long to read whole and were cut as they were read")
        if self.stopped_at_bytes is not None:
            parts.append(
                f"reading stopped after {len(self.rows):,} rows, at the {self.stopped_at_bytes:,}-byte bound on "
                "a result held in memory"
            )
        if not parts:
            return None
        return "; ".join(parts) + " (select shorter values, e.g. substr(), or fewer rows)."


def read_rows(cursor: Cursor, limit: int | None, *, value_chars: int, result_bytes: int) -> Read:
    """At most `limit` rows (all without one), each value cut to `value_chars` characters (or bytes), and no
    more rows once their values pass `result_bytes` (the first row is always kept, cut)."""
    wanted = None if limit is None else limit + 1  # one more tells whether there were more
    rows: list[Any] = []  # the driver's rows (tuples), each kept as it came unless a value was cut
    total = cut = largest = 0
    batch = 1
    while wanted is None or len(rows) < wanted:
        asked = batch if wanted is None else min(batch, wanted - len(rows))
        fetched = cursor.fetchmany(asked)
        size, longest = _batch_size(fetched)
        if longest <= value_chars and (not rows or total + size <= result_bytes):
            # The common case, measured a batch at a time: nothing to cut, the bound not reached.
            rows.extend(fetched)
            total += size
            largest = max(largest, longest, size // max(len(fetched), 1))
        else:
            for raw in fetched:
                raw_size = _row_size(raw)
                row, size, cuts = (raw, raw_size, 0) if raw_size <= value_chars else _cut(raw, value_chars)
                if rows and total + size > result_bytes:
                    return Read(rows[:limit] if limit is not None else rows, True, cut, result_bytes)
                rows.append(row)
                total, cut, largest = total + size, cut + cuts, max(largest, raw_size)
        if len(fetched) < asked:
            break
        batch = max(1, min(_MOST_AT_ONCE, result_bytes // _FETCH_SHARE // max(largest, 1)))
    more = limit is not None and len(rows) > limit
    return Read(rows[:limit] if limit is not None else rows, more, cut)


def batches(cursor: Cursor, batch_bytes: int) -> Iterator[tuple[Sequence[Any], int]]:
    """Every row of the result, whole, in batches of about `batch_bytes` of values each (the first batch is one
    row, whose size sets the next), with each batch's size in bytes: for a result written elsewhere as it is
    read, which the memory never holds whole."""
    batch, largest = 1, 0
    while True:
        fetched = cursor.fetchmany(batch)
        if not fetched:
            return
        size, _ = _batch_size(fetched)
        yield fetched, size
        if len(fetched) < batch:
            return
        largest = max(largest, size // len(fetched))
        batch = max(1, min(_MOST_AT_ONCE, batch_bytes // max(largest, 1)))


def _batch_size(rows: Sequence[Any]) -> tuple[int, int]:
    """About how many bytes the rows hold, and the longest text or blob among them: comprehensions over all
    the values at once, a call to _size only for the values of other kinds than the common ones."""
    values = list(chain.from_iterable(rows))
    lengths = [len(v) for v in values if type(v) in _SIZED]
    others = [_size(v) for v in values if type(v) not in _SIZED and type(v) not in _SMALL]
    plain = len(values) - len(lengths) - len(others)
    return sum(lengths) + sum(others) + 8 * plain, max(lengths, default=0)


# Kinds measured by their length, and kinds of about 8 bytes whatever their value.
_SIZED = frozenset({str, bytes, bytearray, memoryview})
_SMALL = frozenset({int, float, bool, type(None), Decimal, dt.date, dt.datetime, dt.time, dt.timedelta, UUID})


def _row_size(row: Any) -> int:
    """About how many bytes a row holds; the common values are measured here, without a call each."""
    size = 0
    for value in row:
        kind = type(value)
        if kind is str or kind is bytes:
            size += len(value)
        elif kind is int or kind is float or value is None:
            size += 8
        else:
            size += _size(value)
    return size


def _cut(raw: Any, most: int) -> tuple[tuple[Any, ...], int, int]:
    """The row with each value longer than `most` cut (a row no longer than `most` in all has none), its
    size after, and how many values were cut."""
    values = []
    size = cuts = 0
    for value in raw:
        n = _size(value)
        if n > most and isinstance(value, str | bytes | bytearray | memoryview):
            value = value[:most] if isinstance(value, str) else bytes(value[:most])
            n, cuts = most, cuts + 1
        values.append(value)
        size += n
    return tuple(values), size, cuts


def _size(value: Any, depth: int = 0) -> int:
    """About how many bytes a value holds: characters of text, bytes of a blob, the parts of a list or
    dictionary (DuckDB's lists and structs, PostgreSQL's arrays and JSON), 8 for anything else."""
    if isinstance(value, str | bytes | bytearray | memoryview):
        return len(value)
    if depth < 4 and isinstance(value, list | tuple | dict):
        items = list(value.items()) if isinstance(value, dict) else value
        # A long list is measured by its first elements: measuring each would cost as much as reading it.
        sample = items[:_MEASURED]
        measured = sum(_size(v, depth + 1) for v in sample)
        return 8 * len(items) + (measured * len(items) // len(sample) if sample else 0)
    return 8
