"""One JSONL record per tool call, resource list or read, prompt and completion (who, what, SQL as written and
executed, rows, time, tokens), and summaries."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlglot
from rich.console import Console
from rich.table import Table as RichTable
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sophrosyne.base.text import counted
from sophrosyne.errors import SophrosyneError


@dataclass
class AuditRecord:
    """One tool call. `sql_executed` is the statement after the role's rewrite, as the engine saw it."""

    session: str
    role: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    time: str = ""  # ISO 8601, UTC, set when the call starts
    sql_written: str | None = None
    sql_executed: str | None = None
    dialect: str | None = None
    rows: int | None = None
    ms: float = 0.0
    response_tokens: int | None = None
    error_code: str | None = None
    error_message: str | None = None
    # Who called: the token's subject (`token:` and its hash's start for a static token; None over stdio), and
    # the email its claims give, if any; `role` is the role the token or its claims gave.
    subject: str | None = None
    email: str | None = None

    @property
    def caller(self) -> str:
        """Who called, as a person reads it: the email, else the subject; "-" for a call that names no one."""
        return self.email or self.subject or "-"

    def called_by(self, who: str) -> bool:
        return who == self.subject or (self.email is not None and who.casefold() == self.email.casefold())

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Statement:
    """One statement a tool call sent to the database: as written (or built), as executed, rows back."""

    written: str
    executed: str
    rows: int


_statements: ContextVar[list[Statement] | None] = ContextVar("sophrosyne_statements", default=None)


@contextmanager
def statements() -> Iterator[list[Statement]]:
    """Collect the statements the tool calls inside this block run (each thread or task keeps its own)."""
    collected: list[Statement] = []
    token = _statements.set(collected)
    try:
        yield collected
    finally:
        _statements.reset(token)


def note_statement(written: str, executed: str, rows: int) -> None:
    """Called by the secured query path for every statement; kept only inside `statements()`."""
    collected = _statements.get()
    if collected is not None:
        collected.append(Statement(written, executed, rows))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class AuditLog:
    """Appends records to a JSONL file. Safe for threads (a lock) and processes (flock), one write each."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, record: AuditRecord) -> None:
        if not record.time:
            record.time = now_iso()
        line = (record.to_json() + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"audit log {self.path} is closed")
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                written = os.write(self._fd, line)
                while written < len(line):  # a short write on a full disk or a signal: finish the line
                    written += os.write(self._fd, line[written:])
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextmanager
    def call(
        self,
        session: str,
        role: str,
        tool: str,
        arguments: dict[str, Any],
        subject: str | None = None,
        email: str | None = None,
    ) -> Iterator[AuditRecord]:
        """Time a tool call and write its record on exit, with the error if it raised (and re-raise)."""
        record = AuditRecord(
            session=session,
            role=role,
            tool=tool,
            subject=subject,
            email=email,
            arguments=dict(arguments),
            time=now_iso(),
        )
        start = time.perf_counter()
        try:
            yield record
        except SophrosyneError as error:
            record.error_code, record.error_message = error.code, error.full_message
            raise
        except Exception as error:
            wrapped = getattr(error, "error", None)  # a transport's wrapper around one of ours
            if isinstance(wrapped, SophrosyneError):
                record.error_code, record.error_message = wrapped.code, wrapped.full_message
            else:
                record.error_code, record.error_message = "internal", type(error).__name__
            raise
        finally:
            record.ms = round((time.perf_counter() - start) * 1000, 3)
            self.write(record)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def read_records(path: str | Path) -> Iterator[AuditRecord | None]:
    """The records of a log; None for a line that is not a record (a torn or foreign line)."""
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                yield AuditRecord.from_dict(data) if isinstance(data, dict) else None
            except (json.JSONDecodeError, TypeError):
                yield None


@dataclass
class AuditSummary:
    calls: int = 0
    bad_lines: int = 0
    sessions: int = 0
    first: str | None = None
    last: str | None = None
    calls_per_tool: Counter[str] = field(default_factory=Counter)
    ms_per_tool: dict[str, list[float]] = field(default_factory=dict)
    calls_per_role: Counter[str] = field(default_factory=Counter)
    calls_per_caller: Counter[str] = field(default_factory=Counter)
    tables_touched: Counter[str] = field(default_factory=Counter)
    errors_per_code: Counter[str] = field(default_factory=Counter)
    errors: list[AuditRecord] = field(default_factory=list)  # the most recent, newest last
    slowest: list[AuditRecord] = field(default_factory=list)
    rows: int = 0
    response_tokens: int = 0


def summarize(path: str | Path, *, top: int = 10, caller: str | None = None) -> AuditSummary:
    """Calls per tool, role and caller, tables touched (from the executed SQL), errors and the slowest calls;
    with `caller`, only the calls of the caller of that subject or email (the email's case aside)."""
    summary = AuditSummary()
    sessions: set[str] = set()
    records: list[AuditRecord] = []
    for record in read_records(path):
        if record is None:
            summary.bad_lines += 1
            continue
        if caller is not None and not record.called_by(caller):
            continue
        records.append(record)
        summary.calls += 1
        sessions.add(record.session)
        summary.calls_per_tool[record.tool] += 1
        summary.ms_per_tool.setdefault(record.tool, []).append(float(record.ms or 0))
        summary.calls_per_role[record.role] += 1
        summary.calls_per_caller[record.caller] += 1
        summary.rows += record.rows or 0
        summary.response_tokens += record.response_tokens or 0
        if record.time:
            summary.first = min(summary.first or record.time, record.time)
            summary.last = max(summary.last or record.time, record.time)
        if record.error_code:
            summary.errors_per_code[record.error_code] += 1
            summary.errors.append(record)
        for table in tables_read(record.sql_executed, record.dialect):
            summary.tables_touched[table] += 1
    summary.sessions = len(sessions)
    summary.errors = summary.errors[-top:]
    summary.slowest = sorted(records, key=lambda r: r.ms or 0, reverse=True)[:top]
    return summary


def tables_read(sql: str | None, dialect: str | None = None) -> list[str]:
    """The base tables a statement reads: its table references that are not its own CTEs or `_sec_` CTEs."""
    if not sql:
        return []
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, ValueError):
        return []
    ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE)}
    names = {
        ".".join(p.name for p in t.parts if p.name not in ("main", "public"))
        for t in tree.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and (t.args.get("db") or t.name.lower() not in ctes)
    }
    return sorted(names)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def render_summary(summary: AuditSummary, console: Console) -> None:
    """Print a summary with rich: `sophrosyne audit LOG` calls this."""
    span = f" from {summary.first} to {summary.last}" if summary.first else ""
    console.print(
        f"[bold]{counted(summary.calls, 'call')}[/] in {counted(summary.sessions, 'session')}{span}; "
        f"{counted(summary.rows, 'row')} returned, {counted(summary.response_tokens, 'response token')}"
        + (f"; [yellow]{summary.bad_lines} unreadable lines skipped[/]" if summary.bad_lines else "")
    )
    tools = RichTable(title="Calls per tool")
    tools.add_column("tool")
    for name in ("calls", "p50 ms", "p95 ms"):
        tools.add_column(name, justify="right")
    for tool, count in summary.calls_per_tool.most_common():
        times = summary.ms_per_tool.get(tool, [])
        tools.add_row(tool, str(count), f"{_percentile(times, 0.5):.1f}", f"{_percentile(times, 0.95):.1f}")
    console.print(tools)
    _counts(console, "Calls per role", "role", summary.calls_per_role)
    _counts(console, "Calls per caller", "caller", summary.calls_per_caller)
    _counts(console, "Tables touched", "table", summary.tables_touched)
    if summary.errors_per_code:
        _counts(console, "Errors", "code", summary.errors_per_code)
        recent = RichTable(title="Latest errors")
        for name in ("time", "session", "tool", "code", "message"):
            recent.add_column(name, overflow="fold")
        for r in summary.errors:
            recent.add_row(r.time, r.session, r.tool, r.error_code or "", r.error_message or "")
        console.print(recent)
    slow = RichTable(title="Slowest calls")
    for name in ("ms", "tool", "caller", "role", "sql / arguments"):
        slow.add_column(name, overflow="fold", justify="right" if name == "ms" else "left")
    for r in summary.slowest:
        what = r.sql_written or json.dumps(r.arguments, ensure_ascii=False, default=str)
        slow.add_row(f"{r.ms:.1f}", r.tool, r.caller, r.role, what[:160])
    console.print(slow)


def _counts(console: Console, title: str, label: str, counts: Counter[str]) -> None:
    table = RichTable(title=title)
    table.add_column(label)
    table.add_column("calls", justify="right")
    for key, count in counts.most_common():
        table.add_row(key, str(count))
    console.print(table)
