"""HTTP worker processes forked from one that has loaded what they all use, and supervised by it.

`serve --http --workers N`: this process binds the port, imports the server's modules and loads the data every
worker reads alike (the MCP SDK, pydantic's models, sqlglot, numpy, the thesaurus, the directive model, the
embedder's table), freezes those objects out of the collector's sight, and forks the workers. A forked worker
shares those pages with its parent and siblings until it writes to them (copy-on-write), where a spawned one
imported its own copy: most of a worker's memory at a small schema. The parent holds no database connection,
no thread and no event loop when it forks (each worker opens its sources, its threads and its loop itself),
and then only supervises: it replaces a worker that dies, passes SIGTERM on so that each drains its calls, and
exits once they have.

On Linux each worker accepts on a listening socket of its own, bound with SO_REUSEPORT to the same port: the
kernel spreads connections over them (one shared socket lets whichever worker wakes first take a whole burst
of them). The parent keeps every socket open, so connections that arrive while a worker is being replaced wait
in its queue for the next one.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sophrosyne.serve.connections import ACCEPT_BACKLOG

logger = logging.getLogger("sophrosyne.server")

# A worker that dies sooner than this after its start is restarted after a pause that doubles each time (up to
# RESTART_PAUSE_MAX_S), so a worker that cannot start does not make the parent fork in a tight loop.
QUICK_DEATH_S = 5.0
RESTART_PAUSE_MAX_S = 10.0
# After SIGTERM, the workers' own drain (drain_s) plus this; then whatever is left is killed.
STOP_MARGIN_S = 3.0
# Threads of the parent (a schema reading the command started) are waited for this long before forking.
THREADS_WAIT_S = 10.0
_SUPERVISED = {signal.SIGTERM, signal.SIGINT, signal.SIGCHLD}
_PR_SET_PDEATHSIG = 1


def listening(probe: socket.socket, count: int) -> list[socket.socket]:
    """`count` listening sockets on the port `probe` is bound to, one per worker (SO_REUSEPORT, Linux), or
    `probe` itself shared by all elsewhere. `probe` is a plain bind, which fails when anything holds the port,
    even another server's SO_REUSEPORT group (which a SO_REUSEPORT bind would join); it is closed here."""
    if not sys.platform.startswith("linux"):
        probe.listen(ACCEPT_BACKLOG)
        return [probe] * count
    host, port = probe.getsockname()[:2]
    family = probe.family
    probe.close()
    sockets = []
    for _ in range(count):
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(ACCEPT_BACKLOG)  # connections wait here until a worker accepts them
        sockets.append(sock)
    return sockets


def freeze_for_fork() -> None:
    """Once everything is loaded: wait for this process's other threads (a thread holding a lock at the fork
    would leave it held for ever in the worker; the command's own, a schema reading of a source it closed, end
    soon), collect, and freeze what is left, so that the workers' collections neither scan these objects nor
    write to their pages."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(THREADS_WAIT_S)
            if thread.is_alive():
                logger.warning("thread %s still runs as the workers are forked", thread.name)
    gc.collect()
    gc.freeze()


@dataclass
class Slot:
    """One worker's place: its socket, its process, and how soon it died last."""

    sock: socket.socket
    pid: int = 0
    started: float = 0.0
    pause_s: float = 0.0
    due: float = 0.0  # when a worker that died is started again


@dataclass
class Supervisor:
    """The parent: forks a worker per socket, which runs `work` on it (see in_worker), replaces those that die,
    and on SIGTERM or SIGINT passes SIGTERM on, waits for their drain (within `drain_s` and a margin), kills what
    is left and returns."""

    sockets: list[socket.socket]
    work: Callable[[socket.socket], None]
    drain_s: float
    slots: list[Slot] = field(default_factory=list)

    def run(self) -> None:
        # Blocked here, the signals are waited for below, and a worker forked meanwhile starts with them blocked
        # (it unblocks them once its own handlers are set): none is lost between a fork and a handler.
        signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISED)
        try:
            self.slots = [Slot(sock) for sock in self.sockets]
            for slot in self.slots:
                self._start(slot)
            stop = self._supervise()
            self._stop(stop)
        finally:
            for sock in set(self.sockets):
                sock.close()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _SUPERVISED)

    def _supervise(self) -> int:
        """Until SIGTERM or SIGINT (returned): reap workers that end and start them again."""
        while True:
            now = time.monotonic()
            waiting = [slot.due - now for slot in self.slots if slot.pid == 0]
            timeout = max(0.0, min(waiting)) if waiting else None
            info = signal.sigtimedwait(_SUPERVISED, timeout) if timeout is not None else signal.sigwaitinfo(_SUPERVISED)
            if info is not None and info.si_signo in (signal.SIGTERM, signal.SIGINT):
                return info.si_signo
            for slot, status in self._reap():
                lived = time.monotonic() - slot.started
                quick = lived < QUICK_DEATH_S
                slot.pause_s = min(RESTART_PAUSE_MAX_S, max(0.5, slot.pause_s * 2)) if quick else 0.0
                slot.due = time.monotonic() + slot.pause_s
                logger.warning(
                    "worker %d ended (%s) after %.1f s; a new one starts%s",
                    slot.pid,
                    _exit_reason(status),
                    lived,
                    f" in {slot.pause_s:.1f} s" if slot.pause_s else "",
                )
                slot.pid = 0
            for slot in self.slots:
                if slot.pid == 0 and slot.due <= time.monotonic():
                    self._start(slot)

    def _reap(self) -> list[tuple[Slot, int]]:
        ended: list[tuple[Slot, int]] = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return ended
            if pid == 0:
                return ended
            ended += [(slot, status) for slot in self.slots if slot.pid == pid]

    def _start(self, slot: Slot) -> None:
        others = [sock for sock in set(self.sockets) if sock is not slot.sock]
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for sock in others:
                    sock.close()
                in_worker(parent)
                self.work(slot.sock)
                code = 0
            except BaseException:
                logger.exception("the worker failed")
            finally:
                os._exit(code)
        slot.pid, slot.started = pid, time.monotonic()

    def _stop(self, received: int) -> None:
        """SIGTERM to every worker (each drains), the listening sockets closed, then wait; a second SIGINT
        is passed on as SIGINT (uvicorn then stops at once), and what is left at the deadline is killed."""
        self._signal_all(signal.SIGTERM)
        for sock in set(self.sockets):
            sock.close()
        deadline = time.monotonic() + self.drain_s + STOP_MARGIN_S
        while any(slot.pid for slot in self.slots):
            left = deadline - time.monotonic()
            if left <= 0:
                self._signal_all(signal.SIGKILL)
                for slot in self.slots:
                    if slot.pid:
                        with contextlib.suppress(ChildProcessError):
                            os.waitpid(slot.pid, 0)
                        slot.pid = 0
                return
            info = signal.sigtimedwait(_SUPERVISED, left)
            if info is not None and info.si_signo == signal.SIGINT and received == signal.SIGINT:
                self._signal_all(signal.SIGINT)
            for slot, _ in self._reap():
                slot.pid = 0

    def _signal_all(self, signum: int) -> None:
        for slot in self.slots:
            if slot.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signum)


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.waitstatus_to_exitcode(status)}"


def in_worker(parent: int) -> None:
    """(In a worker, just forked.) Its signals: SIGTERM and SIGINT end it at once until uvicorn serves (nothing to
    drain yet); uvicorn sets its own while it serves and raises what it caught once it has drained, which ends
    the worker then, its objects left unfreed (see handshake.leave_now). It ends with its parent too."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _leave)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the line above
        _leave()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SUPERVISED)


def _leave(*_: object) -> None:
    logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(0)
