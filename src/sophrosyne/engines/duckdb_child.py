"""The child's side of a DuckDB connection (see duckdb_process.py): the zygote that forks the children, the
child that opens the file under its memory cap and answers requests, its thread that interrupts at a
deadline, and the framing both sides speak (pickled, length-prefixed messages)."""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import socket
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
# How often the child's watching thread looks at the deadline when nothing wakes it (see _Watch).
_IDLE_WAKE_S = 1.0


def zygote_main(fd: int) -> None:
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
        send(channel, ("err", exc))
        return
    if sys.platform.startswith("linux"):  # where RLIMIT_DATA counts every private mapping (Linux 4.7 on)
        held = _data_bytes()
        resource.setrlimit(resource.RLIMIT_DATA, (held + memory_bytes, held + memory_bytes))
    watch = _Watch(conn)
    threading.Thread(target=watch.listen, args=(interrupts,), daemon=True).start()
    send(channel, ("ok", None))
    while True:
        try:
            op, args = receive(channel)
        except (EOFError, OSError):
            return
        if op == "close":
            with contextlib.suppress(duckdb.Error):
                conn.close()
            send(channel, ("ok", None))
            return
        if op == "execute":
            watch.arm(args[1])
        elif op == "rollback":
            watch.arm(None)
        _answer(channel, _OPS[op], conn, args)


def send(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    size = len(data).to_bytes(8, "big")
    if len(data) < 1 << 16:
        sock.sendall(size + data)  # one write for the common small message
    else:
        sock.sendall(size)
        sock.sendall(data)  # no copy of a large one


def receive(sock: socket.socket) -> Any:
    size = int.from_bytes(exactly(sock, 8), "big")
    return pickle.loads(exactly(sock, size))


def exactly(sock: socket.socket, size: int) -> bytearray:
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
        send(channel, reply)
    except MemoryError:
        send(channel, ("err", _out_of_memory()))


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
