"""export_sql: one read-only statement's whole result written to a file through the secured path, a batch at a time;
the answer is a preview, the counts and a link, never the rows themselves."""

from __future__ import annotations

import datetime as dt
import errno
import time
from typing import Annotated, Any

from pydantic import Field

from sophrosyne.base import deadline, progress
from sophrosyne.errors import ExportTooLarge, InvalidArgument
from sophrosyne.exports.store import LOCAL, ExportRecord, ExportStore, Format, caller, new_label
from sophrosyne.exports.writers import CsvWriter, ParquetWriter, Writer
from sophrosyne.tools.arguments import count
from sophrosyne.tools.base import Context, Link, Result, Screen, cell, table_lines
from sophrosyne.tools.budget import cut_lists, fit
from sophrosyne.tools.execute_sql import own_sql_allowed

SCHEME = "sophrosyne://exports/"
FORMATS: tuple[Format, ...] = ("csv", "parquet")
# Rows of the preview, and the most tokens the answer takes whatever the token budget: an export's answer is a
# link, not its rows.
PREVIEW_ROWS = 5
ANSWER_TOKENS = 500
# Bytes of values read from the database at once, and how often progress is told (seconds).
BATCH_BYTES = 4_000_000
REPORT_EVERY_S = 0.5


class ExportOutput(Result):
    id: str
    uri: str
    format: str
    rows: int
    columns: list[str]
    bytes: int
    truncated: bool
    expires: str
    elapsed_ms: float
    preview: list[list[Any]] = Field(default_factory=list, description="the first rows")
    path: str | None = Field(None, description="the file, for a local caller")
    download: str | None = Field(None, description="the HTTP path that downloads the file with the caller's token")
    sql_executed: str = ""
    note: str | None = None
    cut: str | None = None

    def agent_lines(self, nonce: str) -> list[str]:
        more = " (cut: export_max_rows reached; more rows exist)" if self.truncated else ""
        lines = [
            f"exported {self.rows:,} rows{more}, {len(self.columns)} columns, {self.bytes:,} bytes of {self.format} "
            f"in {self.elapsed_ms:.0f} ms",
            f"resource: {self.uri} (resources/read, in pages; kept until {self.expires})",
        ]
        if self.path:
            lines.append(f"file: {self.path}")
        if self.download:
            lines.append(f"download: GET {self.download} with your bearer token")
        lines.extend(table_lines(self.columns, self.preview, nonce, title="columns and first rows:"))
        lines.extend(x for x in (self.note, self.cut) if x)
        lines.append(f"executed: {self.sql_executed}")
        return lines

    def cut_to_budget(self, budget: int) -> None:
        total_rows, total_columns = len(self.preview), len(self.columns)

        def note(kept: dict[str, int]) -> None:
            rows, columns = kept["preview"], kept["columns"]
            parts = []
            if rows < total_rows:
                parts.append(f"{rows} of {total_rows} preview rows")
            if columns < total_columns:
                self.preview = [row[:columns] for row in self.preview]
                parts.append(f"{columns} of {total_columns} columns")
            self.cut = f"cut: showing {' and '.join(parts)} (token budget); the file has them all." if parts else None

        cut_lists(self, ["preview", "columns"], budget, note)

    def links(self) -> list[Link]:
        mime_type = "text/csv" if self.format == "csv" else "application/vnd.apache.parquet"
        return [Link(uri=self.uri, name=f"export {self.id}", mime_type=mime_type, size=self.bytes)]

    def show(self, screen: Screen) -> None:
        table = screen.grid(None, *(screen.escape(c) for c in self.columns))
        for row in self.preview:
            table.add_row(*(screen.text(v) for v in row))
        screen.show(table)
        screen.notes(*self.agent_lines("")[:3], self.note, self.cut)


def export_sql(
    env: Context,
    sql: Annotated[str, Field(description="One read-only SELECT.")],
    format: Annotated[Format, Field(description="File format.")] = "csv",
    name: Annotated[str | None, Field(description="Download's file name.")] = None,
    limit: Annotated[int | None, Field(description="Most rows.")] = None,
) -> ExportOutput:
    """A statement's WHOLE result written to a file, not here: a preview, counts and a link. For when all
    rows are wanted.

    Example: export_sql(sql="SELECT * FROM orders", format="parquet")
    """
    # The file is the caller's (exports/store.py: the Python API's and a local server's, or an HTTP token's).
    settings = env.settings
    bounds = settings.exports
    own_sql_allowed(env)
    if format not in FORMATS:
        raise InvalidArgument(f"format `{format}` is not one of {', '.join(FORMATS)}.", hint="Use csv or parquet.")
    cap, capped = count(limit, "limit", bounds.export_max_rows, bounds.export_max_rows, "export_max_rows")
    store, owner = ExportStore(settings), caller()
    started = time.perf_counter()
    with deadline.bounded(bounds.export_timeout_s):
        record, preview, executed = _write(env, store, sql, format, cap, owner, name)
    # A local caller reads the file where it is; a remote one downloads it (the server's paths are not its).
    local = owner == LOCAL
    output = ExportOutput(
        id=record.id,
        uri=SCHEME + record.id,
        format=record.format,
        rows=record.rows,
        columns=record.columns,
        bytes=record.bytes,
        truncated=record.truncated,
        expires=_iso(record.expires(bounds.export_keep_s)),
        elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
        preview=[[cell(v, settings.limits.value_chars) for v in row] for row in preview],
        path=str(record.path) if local else None,
        download=None if local else f"/exports/{record.id}",
        sql_executed=executed,
        note=capped,
    )
    return fit(output, min(settings.limits.token_budget, ANSWER_TOKENS))


def _write(
    env: Context, store: ExportStore, sql: str, format: Format, cap: int, owner: str, name: str | None
) -> tuple[ExportRecord, list[Any], str]:
    """Stream the rows into the partial file, within the bounds; publish it, or leave nothing behind."""
    bounds = env.settings.exports
    secure = env.secure
    preview: list[Any] = []
    truncated = False
    # The statement is checked (guard, rewrite) and sent before a file is made: a refused one leaves none.
    with (
        secure.stream(sql, timeout_s=bounds.export_timeout_s) as streamed,
        store.writing(owner, format) as pending,
    ):
        writer: Writer = (CsvWriter if format == "csv" else ParquetWriter)(pending.file, streamed.columns)
        written, told = 0, time.monotonic()
        try:
            for rows, size in streamed.batches(BATCH_BYTES):
                if written + len(rows) > cap:
                    rows, truncated = rows[: cap - written], True
                if len(preview) < PREVIEW_ROWS:
                    preview.extend(rows[: PREVIEW_ROWS - len(preview)])
                writer.write(rows, size)
                written += len(rows)
                if writer.written > bounds.export_max_bytes:
                    raise _too_large(bounds.export_max_bytes, written)
                if time.monotonic() - told >= REPORT_EVERY_S:
                    told = time.monotonic()
                    progress.report(f"export_sql: {written:,} rows, {writer.written:,} bytes written")
                if truncated:
                    break
            writer.close()
        except BaseException as exc:
            writer.abort()
            if not isinstance(exc, OSError) or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            raise ExportTooLarge(
                "the export folder's disk is full: the export was stopped and its file removed.",
                hint="Export fewer rows or columns, or ask the server's operator for room (export_dir).",
            ) from None
        if writer.written > bounds.export_max_bytes:
            raise _too_large(bounds.export_max_bytes, written)
        record = store.finish(
            pending,
            label=new_label(name, f"export-{pending.id[:8]}"),
            rows=written,
            columns=streamed.columns,
            truncated=truncated,
            source=env.name,
            role=secure.role.name,
        )
    return record, preview, secure.shown_sql(streamed.executed, streamed.expression)


def _too_large(most: int, rows: int) -> ExportTooLarge:
    return ExportTooLarge(
        f"the export passed export_max_bytes ({most:,} bytes) after {rows:,} rows: it was stopped and its file "
        "removed.",
        hint="Select fewer columns or rows (a WHERE, or limit=), or aggregate first.",
    )


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
