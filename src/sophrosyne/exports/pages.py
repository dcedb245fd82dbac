"""An export read a page at a time (resources/read): CSV as text cut at line ends, Parquet as bytes."""

from __future__ import annotations

from typing import BinaryIO

from sophrosyne.errors import InvalidArgument
from sophrosyne.exports.store import ExportRecord

_SCAN = 65_536  # bytes read at once while looking for a line's end


def page_count(record: ExportRecord, page_bytes: int) -> int:
    return max(1, -(-record.bytes // page_bytes))


def read_page(record: ExportRecord, page: int, page_bytes: int) -> str | bytes:
    """Page `page` (from 1) of the export: for CSV the lines that start in it (a line longer than a page makes
    the next pages empty), for Parquet its bytes as they are."""
    pages = page_count(record, page_bytes)
    if not 1 <= page <= pages:
        raise InvalidArgument(
            f"export {record.id} has {pages} pages of {page_bytes:,} bytes; there is no page {page}.",
            hint=f"Read pages 1 to {pages}.",
        )
    start = (page - 1) * page_bytes
    with open(record.path, "rb") as file:
        if record.format != "csv":
            file.seek(start)
            return file.read(page_bytes)
        begin, end = _line_start(file, start), _line_start(file, start + page_bytes)
        file.seek(begin)
        return file.read(max(0, end - begin)).decode("utf-8", "replace")


def _line_start(file: BinaryIO, position: int) -> int:
    """The first line start at or after `position` (0, or just after a newline), or the file's end. A value
    that holds a line break is cut there too: pages are read whole, in order, as one text."""
    if position <= 0:
        return 0
    file.seek(position - 1)
    offset = position - 1
    while chunk := file.read(_SCAN):
        found = chunk.find(b"\n")
        if found >= 0:
            return offset + found + 1
        offset += len(chunk)
    return offset
