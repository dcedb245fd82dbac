"""Rows written to an export file a batch at a time: CSV (the csv module) and Parquet (pyarrow, row groups of a
bounded size), never the whole result in memory."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from sophrosyne.errors import InvalidArgument

if TYPE_CHECKING:
    import pyarrow as pa

# A Parquet column's type is chosen from its first rows (this many, or this many bytes of values); a row group is
# written once this many rows, or this many bytes of them as Arrow arrays, wait in memory.
TYPED_FROM_ROWS = 10_000
TYPED_FROM_BYTES = 8_000_000
ROW_GROUP_ROWS = 50_000
ROW_GROUP_BYTES = 16_000_000


class Writer(Protocol):
    """Writes rows to its file; `written` is the file's size so far, rows waiting in memory aside."""

    def write(self, rows: Sequence[Sequence[Any]], size: int) -> None: ...

    @property
    def written(self) -> int: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


def text(value: Any) -> str:
    """A value as CSV text: NULL empty, booleans true/false, numbers as written, dates in ISO 8601, blobs as
    \\x and hex (PostgreSQL's form), lists and documents as JSON."""
    if value is None:
        return ""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return repr(value)
    if isinstance(value, Decimal):
        written = str(value)
        return format(value, "f") if "E" in written else written
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


_AS_IS = frozenset({str, int, float, type(None)})


class CsvWriter:
    """RFC 4180 CSV in UTF-8 with a header line; NULL and the empty string are both an empty field."""

    def __init__(self, file: BinaryIO, columns: list[str]) -> None:
        self.file = file
        self.width = len(columns)
        self._size = 0
        self._emit([columns])

    def _emit(self, rows: Sequence[Sequence[str]]) -> None:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\r\n").writerows(rows)
        data = buffer.getvalue().encode("utf-8", "replace")
        self.file.write(data)
        self._size += len(data)

    def write(self, rows: Sequence[Sequence[Any]], size: int) -> None:
        # The csv module writes text, integers, floats (as repr) and None (empty) as text() would: only the
        # other kinds are converted here, value by value.
        self._emit([[v if type(v) in _AS_IS else text(v) for v in row] for row in rows])

    @property
    def written(self) -> int:
        return self._size

    def close(self) -> None:
        self.file.flush()

    def abort(self) -> None:
        """Stop without finishing the file (it is removed): nothing is held."""


class ParquetWriter:
    """Parquet through pyarrow, compressed with Zstandard. Each column's type is chosen from the first rows
    (integers, floats, decimals, text, blobs, dates, times, booleans; text for anything else or for a column of
    mixed kinds); a later value that does not fit its column's type stops the export with the column named.
    From then on each batch becomes Arrow arrays as it arrives (compact, unlike Python's rows), and a row group
    is written once ROW_GROUP_ROWS rows or ROW_GROUP_BYTES bytes of them wait."""

    def __init__(self, file: BinaryIO, columns: list[str]) -> None:
        self.file = file
        self.columns = columns
        self._first: list[Sequence[Any]] = []  # the rows the types are chosen from
        self._first_bytes = 0
        self._held: list[Any] = []  # record batches of the next row group
        self._held_rows = self._held_bytes = 0
        self._writer: Any = None
        self._schema: pa.Schema | None = None

    def write(self, rows: Sequence[Sequence[Any]], size: int) -> None:
        if self._schema is not None:
            self._hold(rows)
            return
        self._first.extend(rows)
        self._first_bytes += size
        if len(self._first) >= TYPED_FROM_ROWS or self._first_bytes >= TYPED_FROM_BYTES:
            self._start()

    @property
    def written(self) -> int:
        return self.file.tell()

    def _start(self) -> None:
        """Choose the columns' types from the first rows, open the file's writer, and take those rows."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows, self._first = self._first, []
        values = list(zip(*rows, strict=True)) if rows else [() for _ in self.columns]
        names = unique_names(self.columns)
        self._schema = pa.schema([pa.field(n, _type_of(v)) for n, v in zip(names, values, strict=True)])
        self._writer = pq.ParquetWriter(self.file, self._schema, compression="zstd")
        self._hold(rows)

    def _hold(self, rows: Sequence[Sequence[Any]]) -> None:
        import pyarrow as pa

        assert self._schema is not None
        if not rows:
            return
        values = list(zip(*rows, strict=True))
        arrays = [_array(v, self.columns[i], f.type) for i, (v, f) in enumerate(zip(values, self._schema, strict=True))]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self._schema)
        self._held.append(batch)
        self._held_rows += batch.num_rows
        self._held_bytes += batch.nbytes
        if self._held_rows >= ROW_GROUP_ROWS or self._held_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        held, self._held, self._held_rows, self._held_bytes = self._held, [], 0, 0
        if held:
            self._writer.write_table(pa.Table.from_batches(held, schema=self._schema))

    def close(self) -> None:
        try:
            if self._schema is None:
                self._start()
            self._flush()
            self._writer.close()
        except BaseException:
            self.abort()
            raise
        self.file.flush()

    def abort(self) -> None:
        """Stop without finishing the file (it is removed): pyarrow's writer is closed now, not when collected."""
        writer, self._writer, self._first, self._held = self._writer, None, [], []
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()


def unique_names(columns: Sequence[str]) -> list[str]:
    """The column names, each repeat numbered (`id`, `id_2`): pandas and DuckDB read a repeated name badly."""
    seen: set[str] = set()
    names = []
    for name in columns:
        unique, n = name, 1
        while unique.lower() in seen:
            n += 1
            unique = f"{name}_{n}"
        seen.add(unique.lower())
        names.append(unique)
    return names


def _type_of(values: Sequence[Any]) -> pa.DataType:
    """The Parquet type of a column, from its first values (TYPED_FROM_ROWS)."""
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.string()
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        fits = all(-(2**63) <= v < 2**63 for v in values if v is not None)
        return pa.int64() if fits else pa.string()
    if kinds <= {int, float}:
        return pa.float64()
    if kinds <= {Decimal, int}:
        exponents = [v.as_tuple().exponent for v in values if isinstance(v, Decimal) and v.is_finite()]
        scale = max((-e for e in exponents if isinstance(e, int)), default=0)
        return pa.decimal128(38, max(0, min(scale, 18)))
    if kinds <= {bytes, bytearray, memoryview}:
        return pa.binary()
    if kinds == {dt.datetime}:
        aware = any(v.tzinfo is not None for v in values if v is not None)
        return pa.timestamp("us", tz="UTC" if aware else None)
    if kinds == {dt.date}:
        return pa.date32()
    if kinds == {dt.time}:
        return pa.time64("us")
    if kinds == {dt.timedelta}:
        return pa.duration("us")
    return pa.string()


def _array(values: Sequence[Any], column: str, kind: pa.DataType) -> pa.Array:
    import pyarrow as pa

    if pa.types.is_string(kind):
        return pa.array([None if v is None else v if type(v) is str else text(v) for v in values], type=kind)
    if pa.types.is_binary(kind):
        values = [bytes(v) if isinstance(v, bytearray | memoryview) else v for v in values]
    try:
        return pa.array(values, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        raise InvalidArgument(
            f"column `{column}` holds values of another kind than its first rows ({kind}), which Parquet cannot "
            "hold in one column.",
            hint=f"CAST `{column}` to one type in the SELECT (as text, for one), or export as CSV.",
        ) from None
