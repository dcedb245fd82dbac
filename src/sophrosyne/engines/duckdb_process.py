"""DuckDB connections in child processes whose memory the operating system caps: the server's side.

DuckDB builds a vector of up to 2,048 rows, each value whole, before the first row is handed over, and
keeps a vector's strings outside its own `memory_limit`: 30 rows of `repeat('x', 100000000)` held 5.9 GB
in one call inside the server, and no reading on our side bounds that. So each connection lives in a
process of its own, with its data capped by RLIMIT_DATA. Past the cap DuckDB's allocation fails and it
answers "Out of Memory Error"; the process lives on, and the server holds only the rows it asked for, no
value longer than the longest any setting keeps.

The processes are forked from one that has DuckDB loaded and nothing else running (a zygote, started with
the first connection), so opening one costs a fork, not an interpreter's start. Requests and answers are
pickled, length-prefixed, over a socket pair; interrupts come over a second one, read by a thread of the
child, which also interrupts a statement at the deadline the session gave (no timer thread per call in the
server). The connection offers what sessions use of a DuckDB connection (execute, fetchone, fetchmany,
fetchall, description, interrupt, rollback, close); the driver's errors come back as its own classes. A
small call is one round trip: `execute` answers with the first rows, and `rollback` is not waited for.
The zygote and the children run duckdb_child.py.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import duckdb

from sophrosyne.engines.duckdb_child import MEMORY_BYTES, exactly, receive, send, zygote_main

# Rows per message when the whole result is asked for.
_FETCH_ALL_BATCH = 1000
# Rows `execute` brings back with its answer: a result of one row then needs no second request.
_PREFETCH = 2
# How long a child may take to answer `close` before it is killed.
_CLOSE_WAIT_S = 2.0
# How long past its deadline a statement's answer is waited for before its process is killed.
KILL_AFTER_S = 1.0


class ProcessConnection:
    """A read-only DuckDB connection to `path` in a child process; see the module's docstring."""

    def __init__(self, path: str, config: dict[str, Any], after_open: Sequence[str] = ()) -> None:
        self._lock = threading.Lock()
        self._interrupt_lock = threading.Lock()
        self.description: list[tuple[Any, ...]] | None = None
        self.broken = False
        self._deadline: float | None = None  # monotonic; the child stops a statement running past it
        self._rows: list[tuple[Any, ...]] = []  # fetched with `execute`, not yet handed out
        self._done = True  # the result has no rows beyond self._rows
        self._unread = 0  # answers to requests sent without waiting (rollback), read before the next one
        self._channel, self._interrupts, self.pid = _ZYGOTE.fork((path, config, list(after_open), MEMORY_BYTES))
        try:
            status, value = receive(self._channel)  # the child's first word: opened, or why not
        except (EOFError, OSError):
            status, value = "err", duckdb.ConnectionException("the DuckDB process ended while opening the file.")
        if status == "err":
            self.close()
            raise value

    def _call(self, op: str, *args: Any) -> Any:
        with self._lock:
            if self.broken:
                raise duckdb.ConnectionException("the DuckDB process of this connection has ended.")
            try:
                send(self._channel, (op, args))
                if self._deadline is not None:
                    # A request sent past the deadline is interrupted at once: it too gets KILL_AFTER_S.
                    self._channel.settimeout(max(self._deadline - time.monotonic(), 0.0) + KILL_AFTER_S)
                for _ in range(self._unread):
                    receive(self._channel)
                self._unread = 0
                status, value = receive(self._channel)
                self._channel.settimeout(None)
            except TimeoutError:
                # Its interrupt did not stop the statement (DuckDB checks it between vectors, not inside one
                # function's call): the process goes, and the statement's work with it.
                self._kill()
                raise duckdb.InterruptException(
                    "INTERRUPT Error: Interrupted! The statement ran past its deadline; its DuckDB process was ended."
                ) from None
            except (EOFError, OSError):
                self.broken = True
                raise duckdb.ConnectionException("the DuckDB process running the statement ended.") from None
        if status == "err":
            raise value
        return value

    def limit(self, timeout_s: float) -> None:
        """Stop each statement from now until `rollback` once `timeout_s` seconds have passed."""
        self._deadline = time.monotonic() + timeout_s

    def execute(self, sql: str, /) -> ProcessConnection:
        left = None if self._deadline is None else self._deadline - time.monotonic()
        self._rows, self._done = [], True  # nothing left of the last result, should this one fail
        self.description, self._rows, self._done = self._call("execute", sql, left, _PREFETCH)
        return self

    def fetchmany(self, size: int = 1, /) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows[:size], self._rows[size:]
        if len(rows) < size and not self._done:
            rows.extend(self._call("fetchmany", size - len(rows)))
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        while True:
            batch = self.fetchmany(_FETCH_ALL_BATCH)
            rows.extend(batch)
            if len(batch) < _FETCH_ALL_BATCH:
                return rows

    def rollback(self) -> None:
        """End the session's transaction, if one is open, without waiting: the child answers meanwhile."""
        self._deadline, self._rows, self._done = None, [], True
        with self._lock:
            if self.broken:
                return
            try:
                send(self._channel, ("rollback", ()))
                self._unread += 1
            except OSError:
                self.broken = True

    def interrupt(self) -> None:
        """Stop the running statement (from any thread): the child's listener interrupts its connection."""
        with self._interrupt_lock, contextlib.suppress(OSError):
            self._interrupts.sendall(b"!")

    def close(self) -> None:
        with self._lock:
            if not self.broken:
                self.broken = True
                self._channel.settimeout(_CLOSE_WAIT_S)
                try:
                    send(self._channel, ("close", ()))
                    for _ in range(self._unread + 1):
                        receive(self._channel)
                except TimeoutError:
                    self._kill()  # not answering: stuck in the engine
                except (EOFError, OSError):
                    pass
            for end in (self._channel, self._interrupts):
                end.close()

    def _kill(self) -> None:
        self.broken = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


class _Zygote:
    """The process the children are forked from, started on first use and again if it ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def fork(self, args: tuple[Any, ...]) -> tuple[socket.socket, socket.socket, int]:
        channel, their_channel = socket.socketpair()
        interrupts, their_interrupts = socket.socketpair()
        message, ends = [pickle.dumps(args)], [their_channel.fileno(), their_interrupts.fileno()]
        try:
            with self._lock:
                try:
                    pid = self._ask(message, ends)
                except (EOFError, OSError):
                    self.stop()  # the zygote ended meanwhile: a new one, once
                    pid = self._ask(message, ends)
            return channel, interrupts, pid
        except (EOFError, OSError):
            self.stop()
            channel.close()
            interrupts.close()
            raise duckdb.ConnectionException("cannot start a DuckDB process.") from None
        finally:
            their_channel.close()
            their_interrupts.close()

    def _ask(self, message: list[bytes], ends: list[int]) -> int:
        """(Under the lock.) Have the zygote fork a child that serves over `ends`; the child's pid."""
        control = self._started()
        socket.send_fds(control, message, ends)
        return int.from_bytes(exactly(control, 8), "big")

    def _started(self) -> socket.socket:
        if self._control is not None and self._process is not None and self._process.poll() is None:
            return self._control
        ours, theirs = socket.socketpair()
        # The zygote imports what the children need, and never writes to the server's stdout (MCP's channel).
        self._process = subprocess.Popen(
            [sys.executable, "-c", f"from {zygote_main.__module__} import zygote_main; zygote_main({theirs.fileno()})"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=[theirs.fileno()],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        theirs.close()
        self._control = ours
        return ours

    def stop(self) -> None:
        """End the zygote (its children end as their connections close)."""
        if self._control is not None:
            self._control.close()
        if self._process is not None:
            try:
                self._process.wait(timeout=1.0)  # it ends as its control socket closes
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._control = self._process = None


_ZYGOTE = _Zygote()
atexit.register(_ZYGOTE.stop)
