"""DuckDB connections in child processes whose memory the operating system caps.

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
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import duckdb

# What one DuckDB process may grow by past what it holds once open (RLIMIT_DATA), and the share of it
# DuckDB's own accounting (`memory_limit`: hash tables, sorts, aggregates) may use before it stops a
# statement itself, with its clearer message.
MEMORY_BYTES = 1 << 30
_ACCOUNTED_SHARE = 0.6
# No value longer than this crosses to the server: one more character than the largest read_value_chars,
# so that the reader still sees (and says) that a value was cut.
_LONGEST_VALUE = 100_000_001
# Rows per message when the whole result is asked for.
_FETCH_ALL_BATCH = 1000
# Rows `execute` brings back with its answer: a result of one row then needs no second request.
_PREFETCH = 2
# How often the child's watching thread looks at the deadline when nothing wakes it (see _Watch).
_IDLE_WAKE_S = 1.0
# How long a child may take to answer `close` before it is killed.
_CLOSE_WAIT_S = 2.0


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
            status, value = _receive(self._channel)  # the child's first word: opened, or why not
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
                _send(self._channel, (op, args))
                for _ in range(self._unread):
                    _receive(self._channel)
                self._unread = 0
                status, value = _receive(self._channel)
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
                _send(self._channel, ("rollback", ()))
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
                    _send(self._channel, ("close", ()))
                    for _ in range(self._unread + 1):
                        _receive(self._channel)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)  # not answering: stuck in the engine
                except (EOFError, OSError):
                    pass
            for end in (self._channel, self._interrupts):
                end.close()


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
        return int.from_bytes(_exactly(control, 8), "big")

    def _started(self) -> socket.socket:
        if self._control is not None and self._process is not None and self._process.poll() is None:
            return self._control
        ours, theirs = socket.socketpair()
        # The zygote imports what the children need, and never writes to the server's stdout (MCP's channel).
        self._process = subprocess.Popen(
            [sys.executable, "-c", f"from {__name__} import _zygote_main; _zygote_main({theirs.fileno()})"],
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


def _zygote_main(fd: int) -> None:
    """The zygote: fork a child for each request, until the server closes its end."""
    control = socket.socket(fileno=fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        except OSError:
            return
        if not message:
            return
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                path, config, after_open, memory_bytes = pickle.loads(message)
                _serve(
                    path, config, after_open, memory_bytes, socket.socket(fileno=fds[0]), socket.socket(fileno=fds[1])
                )
            finally:
                os._exit(0)
        for each in fds:
            os.close(each)
        control.sendall(pid.to_bytes(8, "big"))


def _serve(
    path: str,
    config: dict[str, Any],
    after_open: list[str],
    memory_bytes: int,
    channel: socket.socket,
    interrupts: socket.socket,
) -> None:
    """The child: open the database, cap the process's data, then answer the server's requests in turn."""
    accounted = int(memory_bytes * _ACCOUNTED_SHARE) >> 20
    try:
        conn = duckdb.connect(path, read_only=True, config={**config, "memory_limit": f"{accounted}MB"})
        for sql in after_open:
            conn.execute(sql)
    except duckdb.Error as exc:
        _send(channel, ("err", exc))
        return
    if sys.platform.startswith("linux"):  # where RLIMIT_DATA counts every private mapping (Linux 4.7 on)
        held = _data_bytes()
        resource.setrlimit(resource.RLIMIT_DATA, (held + memory_bytes, held + memory_bytes))
    watch = _Watch(conn)
    threading.Thread(target=watch.listen, args=(interrupts,), daemon=True).start()
    _send(channel, ("ok", None))
    while True:
        try:
            op, args = _receive(channel)
        except (EOFError, OSError):
            return
        if op == "close":
            with contextlib.suppress(duckdb.Error):
                conn.close()
            _send(channel, ("ok", None))
            return
        if op == "execute":
            watch.arm(args[1])
        elif op == "rollback":
            watch.arm(None)
        _answer(channel, _OPS[op], conn, args)


def _send(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    size = len(data).to_bytes(8, "big")
    if len(data) < 1 << 16:
        sock.sendall(size + data)  # one write for the common small message
    else:
        sock.sendall(size)
        sock.sendall(data)  # no copy of a large one


def _receive(sock: socket.socket) -> Any:
    size = int.from_bytes(_exactly(sock, 8), "big")
    return pickle.loads(_exactly(sock, size))


def _exactly(sock: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    view = memoryview(data)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if not n:
            raise EOFError("the other end closed")
        got += n
    return data


def _answer(channel: socket.socket, op: Callable[..., Any], conn: Any, args: Sequence[Any]) -> None:
    try:
        reply: tuple[str, Any] = ("ok", op(conn, *args))
    except duckdb.Error as exc:
        reply = ("err", exc)
    except MemoryError:
        reply = ("err", _out_of_memory())
    except Exception as exc:  # a value the driver could not convert, for one
        reply = ("err", duckdb.Error(f"{type(exc).__name__}: {exc}"))
    try:
        _send(channel, reply)
    except MemoryError:
        _send(channel, ("err", _out_of_memory()))


def _out_of_memory() -> duckdb.Error:
    return duckdb.OutOfMemoryException(
        f"Out of Memory Error: the result needed more than the {MEMORY_BYTES >> 20} MB a DuckDB statement may hold"
    )


class _Watch:
    """The child's thread that interrupts its connection: when the server asks, and at the session's deadline.

    It wakes at least every _IDLE_WAKE_S to look at the deadline, so arming one later than its next wake
    costs no write to the wake pipe: a thread woken on every call would contend for the child's GIL."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._wakes_at = 0.0  # when the thread will next look at the deadline, at the latest
        self._wake_read, self._wake_write = os.pipe()

    def arm(self, seconds: float | None) -> None:
        deadline = None if seconds is None else time.monotonic() + seconds
        with self._lock:
            self._deadline = deadline
            early = deadline is not None and deadline < self._wakes_at
        if early:
            os.write(self._wake_write, b"!")

    def listen(self, interrupts: socket.socket) -> None:
        while True:
            now = time.monotonic()
            with self._lock:
                if self._deadline is not None and now >= self._deadline:
                    self._deadline = None
                    self._conn.interrupt()
                self._wakes_at = min(self._deadline or now + _IDLE_WAKE_S, now + _IDLE_WAKE_S)
                wait = self._wakes_at - now
            try:
                ready, _, _ = select.select([interrupts.fileno(), self._wake_read], [], [], wait)
                if self._wake_read in ready:
                    os.read(self._wake_read, 64)
                if interrupts.fileno() in ready:
                    if not interrupts.recv(64):
                        return
                    self._conn.interrupt()
            except OSError:
                return


def _execute(
    conn: Any, sql: str, _seconds: float | None, prefetch: int
) -> tuple[list[tuple[Any, ...]] | None, list[tuple[Any, ...]], bool]:
    """The result's description (DuckDB's type objects do not cross processes; their names do), its first
    `prefetch` rows, and whether that was all of them."""
    conn.execute(sql)
    if not conn.description:
        return None, [], True
    description = [tuple(str(v) if i == 1 else v for i, v in enumerate(d)) for d in conn.description]
    rows = _fetchmany(conn, prefetch)
    return description, rows, len(rows) < prefetch


def _fetchmany(conn: Any, size: int) -> list[tuple[Any, ...]]:
    return [_cut(row) for row in conn.fetchmany(size)]


def _cut(row: tuple[Any, ...]) -> tuple[Any, ...]:
    if not any(isinstance(v, str | bytes) and len(v) > _LONGEST_VALUE for v in row):
        return row
    return tuple(v[:_LONGEST_VALUE] if isinstance(v, str | bytes) else v for v in row)


def _rollback(conn: Any) -> None:
    with contextlib.suppress(duckdb.TransactionException):
        conn.rollback()


def _data_bytes() -> int:
    """The process's data segment now (VmData), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


_OPS: dict[str, Callable[..., Any]] = {
    "execute": _execute,
    "fetchmany": _fetchmany,
    "rollback": _rollback,
}
