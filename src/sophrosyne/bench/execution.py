"""Running gold and predicted SQL for scoring, as the official evaluation scripts run it: raw rows, a deadline."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sophrosyne.database import Database

# BIRD: `meta_time_out` 30 s (bird-bench/mini_dev, evaluation/evaluation_ex.py, run_sqls_parallel).
BIRD_TIMEOUT_S = 30.0
# Spider: `TIMEOUT = 60` (taoyds/test-suite-sql-eval, exec_eval.py).
SPIDER_TIMEOUT_S = 60.0


@dataclass
class Execution:
    """The rows of one statement (in the engine's order), or why there are none."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class Runner:
    """Runs statements against one database: a SQLite file through the plain `sqlite3` driver (as BIRD's and
    Spider's scripts do, with none of the functions the environment adds), or a server URL read-only.

    `lenient_text` decodes invalid UTF-8 by dropping bytes, as Spider's `get_cursor_from_path` sets
    `text_factory = lambda b: b.decode(errors="ignore")`; BIRD's scripts keep sqlite3's default."""

    def __init__(self, target: str | Path, *, lenient_text: bool = False) -> None:
        self.target = str(target)
        self.lenient_text = lenient_text
        self._is_file = "://" not in self.target
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []  # every thread's, closed together
        self._database: Database | None = None
        self._lock = threading.Lock()

    def run(self, sql: str, timeout_s: float) -> Execution:
        started = time.perf_counter()
        try:
            if self._is_file:
                rows, columns = self._run_file(sql, timeout_s)
            else:
                rows, columns = self._run_server(sql, timeout_s)
        except _Deadline:
            return Execution(error=f"timed out after {timeout_s:g} s", timed_out=True, seconds=timeout_s)
        except Exception as exc:  # any engine error scores 0, as in the official scripts
            message = str(getattr(exc, "message", "") or exc).strip().splitlines()
            return Execution(error=message[0] if message else type(exc).__name__, seconds=_since(started))
        return Execution(rows=rows, columns=columns, seconds=_since(started))

    def timed(self, sql: str, timeout_s: float) -> float:
        """Seconds to run and fetch a statement on a fresh connection, as mini-dev's R-VES times it
        (evaluation/evaluation_ves.py, `execute_sql(..., return_time=True)`: connect, execute, fetchall, close)."""
        if not self._is_file:
            started = time.perf_counter()
            result = self.run(sql, timeout_s)
            if result.error:
                raise _Failed(result.error)
            return _since(started)
        conn = self._connect()
        try:
            started = time.perf_counter()
            with _deadline(conn, timeout_s):
                conn.execute(sql).fetchall()
            return _since(started)
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        path = Path(self.target)
        if not path.is_file():
            raise FileNotFoundError(f"no database file {path}")
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        if self.lenient_text:
            conn.text_factory = lambda b: b.decode(errors="ignore")
        return conn

    def _run_file(self, sql: str, timeout_s: float) -> tuple[list[tuple[Any, ...]], list[str]]:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            with self._lock:
                self._connections.append(conn)
        with _deadline(conn, timeout_s):
            cursor = conn.execute(sql)
            rows = [tuple(r) for r in cursor.fetchall()]
            columns = [str(d[0]) for d in cursor.description or ()]
        return rows, columns

    def _run_server(self, sql: str, timeout_s: float) -> tuple[list[tuple[Any, ...]], list[str]]:
        from sophrosyne.database import open_database
        from sophrosyne.errors import QueryTimeout

        with self._lock:
            if self._database is None:
                self._database = open_database(self.target)
        try:
            result = self._database.run(sql, timeout_s=timeout_s)
        except QueryTimeout:
            raise _Deadline from None
        return list(result.rows), list(result.columns)

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()
        if self._database is not None:
            self._database.close()
            self._database = None


class _Deadline(Exception):
    """The statement passed its deadline and was interrupted."""


class _Failed(Exception):
    """A statement failed while it was being timed."""


@contextmanager
def _deadline(conn: sqlite3.Connection, timeout_s: float) -> Iterator[None]:
    """Interrupt the statement once `timeout_s` has passed (checked every 1,000 virtual machine steps)."""
    stop = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > stop), 1000)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc) and time.monotonic() > stop:
            raise _Deadline from None
        raise
    finally:
        conn.set_progress_handler(None, 0)


def _since(started: float) -> float:
    return time.perf_counter() - started


class Runners:
    """One runner per database target, opened on first use and closed together."""

    def __init__(self, targets: dict[str, str], *, lenient_text: bool = False) -> None:
        self.targets = targets
        self.lenient_text = lenient_text
        self._runners: dict[str, Runner] = {}
        self._lock = threading.Lock()

    def __call__(self, db_id: str) -> Runner:
        with self._lock:
            runner = self._runners.get(db_id)
            if runner is None:
                runner = self._runners[db_id] = Runner(self.targets[db_id], lenient_text=self.lenient_text)
            return runner

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()
        self._runners.clear()

    def __enter__(self) -> Runners:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
