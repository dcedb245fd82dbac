"""HTTP worker processes forked from one that has loaded what they all use, then supervised by a small process.

`serve --http --workers N`: this process binds the port, imports the server's modules and loads the data every
worker reads alike (the MCP SDK, pydantic's models, sqlglot, numpy, the thesaurus, the directive model, the
embedder's table, each schema once), freezes those objects out of the collector's sight, and forks the workers. A
forked worker shares those pages with its siblings until it writes to them (copy-on-write), where a spawned one
imported its own copy: most of a worker's memory at a small schema. No database connection, thread or event
loop crosses the fork: each worker opens its sources, its threads and its loop itself.

Then this process becomes a small supervisor (exec, same pid: the workers stay its children). Kept loaded only
to fork replacements, it would hold the original of every page each worker has written, for nothing (30 MB
of 200 at the demo, 2 workers, 32 clients). The supervisor replaces a worker that dies with one it starts
afresh (its own imports, as uvicorn's were), passes SIGTERM on so that each drains its calls, and exits once
they have.

On Linux each worker accepts on a listening socket of its own, bound with SO_REUSEPORT to the same port: the
kernel spreads connections over them (one shared socket lets whichever worker wakes first take a whole burst
of them). The supervisor keeps every socket open, so connections that arrive while a worker is being replaced
wait in its queue for the next one.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

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
    from sophrosyne.serve.connections import ACCEPT_BACKLOG

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


def fork_workers(sockets: list[socket.socket], work: Callable[[socket.socket], None]) -> list[int]:
    """A worker forked per socket, running `work` on it; their pids. SIGTERM, SIGINT and SIGCHLD are blocked
    from here on (the supervisor waits for them), and each worker unblocks them once its handlers are set: none
    is lost between a fork and a handler."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISED)
    parent, pids = os.getpid(), []
    for sock in sockets:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for other in set(sockets) - {sock}:
                    other.close()
                in_worker(parent)
                work(sock)
                code = 0
            except BaseException:
                logger.exception("the worker failed")
            finally:
                os._exit(code)
        pids.append(pid)
    return pids


def become_supervisor(
    sockets: list[socket.socket], pids: list[int], drain_s: float, respawn: list[str], env: dict[str, str]
) -> NoReturn:
    """Replace this process's image with the supervisor's (`supervise`): same pid, same children, the sockets
    and the blocked signals kept. `respawn` starts a worker afresh, in the environment `env` (the supervisor's
    own: not on its command line, which anyone on the machine may read) with the socket's descriptor in
    SOCKET_VARIABLE."""
    for sock in sockets:
        sock.set_inheritable(True)
    plan = {"fds": [sock.fileno() for sock in sockets], "pids": pids, "drain_s": drain_s, "respawn": respawn}
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    command = f"from {__name__} import supervise; supervise()"
    path = os.pathsep.join(p for p in sys.path if p)  # this package, from where this process found it
    os.execve(sys.executable, [sys.executable, "-c", command, json.dumps(plan)], {**env, "PYTHONPATH": path})


SOCKET_VARIABLE = "SOPHROSYNE_WORKER_SOCKET"
LEVEL_VARIABLE = "SOPHROSYNE_WORKER_LOG_LEVEL"


def log_as_the_command_does(level: str) -> None:
    """A process started afresh logs on stderr at the command's level, in its format (cli/terminal.py)."""
    number = getattr(logging, level.upper(), logging.WARNING)
    logging.basicConfig(stream=sys.stderr, level=number, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def supervise() -> None:
    """(The supervisor, after become_supervisor.) Until SIGTERM or SIGINT and the workers' drain."""
    log_as_the_command_does(os.environ.get(LEVEL_VARIABLE, "warning"))
    plan = json.loads(sys.argv[1])
    sockets: dict[int, socket.socket] = {}
    for fd in plan["fds"]:
        sockets.setdefault(fd, socket.socket(fileno=fd))
    now = time.monotonic()
    slots = [Slot(sockets[fd], pid, now) for fd, pid in zip(plan["fds"], plan["pids"], strict=True)]
    Supervisor(slots, plan["drain_s"], plan["respawn"], dict(os.environ)).run()


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
    """Replaces the workers that die (started with `respawn`), and on SIGTERM or SIGINT passes SIGTERM on, waits
    for their drain (within `drain_s` and a margin), kills what is left and returns."""

    slots: list[Slot]
    drain_s: float
    respawn: list[str]
    env: dict[str, str]

    def run(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISED)
        try:
            self._stop(self._supervise())
        finally:
            for sock in self._sockets():
                sock.close()

    def _sockets(self) -> list[socket.socket]:
        return list({id(slot.sock): slot.sock for slot in self.slots}.values())

    def _supervise(self) -> int:
        """Until SIGTERM or SIGINT (returned): reap workers that end and start them again."""
        while True:
            now = time.monotonic()
            waiting = [slot.due - now for slot in self.slots if slot.pid == 0]
            if waiting:
                info = signal.sigtimedwait(_SUPERVISED, max(0.0, min(waiting)))
            else:
                info = signal.sigwaitinfo(_SUPERVISED)
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
        """A worker afresh on the slot's socket, the others' closed in it, its signals unblocked."""
        fd = slot.sock.fileno()
        closed = [(os.POSIX_SPAWN_CLOSE, sock.fileno()) for sock in self._sockets() if sock.fileno() != fd]
        env = {**self.env, SOCKET_VARIABLE: str(fd)}
        slot.pid = os.posix_spawn(self.respawn[0], self.respawn, env, file_actions=closed, setsigmask=())
        slot.started = time.monotonic()

    def _stop(self, received: int) -> None:
        """SIGTERM to every worker (each drains), the listening sockets closed, then wait; a second SIGINT
        is passed on as SIGINT (uvicorn then stops at once), and what is left at the deadline is killed."""
        self._signal_all(signal.SIGTERM)
        for sock in self._sockets():
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
    """(In a worker, forked or started afresh.) Its signals: SIGTERM and SIGINT end it at once until uvicorn
    serves (nothing to drain yet); uvicorn sets its own while it serves and raises what it caught once it has
    drained, which ends the worker then, its objects left unfreed (see handshake.leave_now). It ends with its
    parent too."""
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
