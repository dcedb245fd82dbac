"""The tool calls in flight: each in a worker thread under its deadline, a fair share of the threads per client;
refused, and waited for, while the server drains."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Literal, TypeVar

import anyio
import anyio.to_thread

from sophrosyne.base import deadline
from sophrosyne.errors import Busy, NotReady, QueryTimeout
from sophrosyne.settings import Settings

logger = logging.getLogger("sophrosyne.server")
T = TypeVar("T")

# A call whose work does not notice its deadline (a C routine that cannot be interrupted) is answered this
# much later anyway; its thread is left to end at its next check.
GRACE_S = 1.0
# Time for the answers of the last calls to reach the wire before a drained server stops.
FLUSH_S = 0.5
# Who is calling: set for each request by caller.ClientKey (a token's hash, an address or a session).
CLIENT: ContextVar[str] = ContextVar("sophrosyne_client", default="local")

Pool = Literal["tools", "programs"]


class FairShare:
    """The threads of one pool, shared by clients: each client runs at most `cap` calls and waits for more in
    its own queue, clients taking turns as threads free up; the last `reserve` free threads go only to a
    client with no call running, so a newcomer finds one while others flood."""

    def __init__(self, size: int, per_client: int, queue: int, wait_s: float) -> None:
        self.size = size
        self.reserve = max(1, size // 4)
        self.cap = max(1, min(per_client, size - self.reserve))
        self.queue = queue
        self.wait_s = wait_s
        self.busy = 0
        self.running: dict[str, int] = {}
        self._waiting: dict[str, deque[anyio.Event]] = {}  # in turn order: the last served goes last
        self.threads: anyio.CapacityLimiter | None = None

    def _may_start(self, client: str) -> bool:
        held, free = self.running.get(client, 0), self.size - self.busy
        return held < self.cap and free > 0 and (held == 0 or free > self.reserve)

    def _take(self, client: str) -> None:
        self.busy += 1
        self.running[client] = self.running.get(client, 0) + 1

    async def enter(self, client: str) -> None:
        """Take a thread for `client`: at once, or after its turn in its queue; Busy if it cannot."""
        if client not in self._waiting and self._may_start(client):
            self._take(client)
            return
        waiting = self._waiting.setdefault(client, deque())
        if len(waiting) >= self.queue:
            if not waiting:
                del self._waiting[client]
            raise self._busy(client, waited=False)
        turn = anyio.Event()
        waiting.append(turn)
        try:
            with anyio.move_on_after(self.wait_s):
                await turn.wait()
        except BaseException:
            if turn.is_set():  # handed a thread as it was cancelled: give it back
                self.leave(client)
            raise
        finally:
            if not turn.is_set():
                waiting.remove(turn)
                if not waiting and self._waiting.get(client) is waiting:
                    del self._waiting[client]
        if not turn.is_set():
            raise self._busy(client, waited=True)

    def leave(self, client: str) -> None:
        """Give back a thread of `client`, and hand free threads to the clients waiting, in turn."""
        self.busy -= 1
        held = self.running.pop(client) - 1
        if held:
            self.running[client] = held
        handed = True
        while handed:
            handed = False
            for waiter in self._waiting:
                if self._may_start(waiter):
                    waiting = self._waiting.pop(waiter)
                    if len(waiting) > 1:
                        self._waiting[waiter] = waiting  # back of the line: the others' turn first
                    self._take(waiter)
                    waiting.popleft().set()
                    handed = True
                    break

    def _busy(self, client: str, *, waited: bool) -> Busy:
        held, queued = self.running.get(client, 0), len(self._waiting.get(client, ()))
        if held == 0:
            why = f"this call waited {self.wait_s:g} s for a thread" if waited else "no thread is free"
            return Busy(
                f"the server is busy with other clients' calls: {why}, and it was not started.",
                hint="Send it again in a moment.",
            )
        why = f"waited {self.wait_s:g} s for one of them to end" if waited else f"found {queued} waiting already"
        return Busy(
            f"you have {held} call{'s' if held > 1 else ''} running (at most {self.cap} run at once); this call "
            f"{why} and was not started.",
            hint=f"Wait for the answers of your calls in flight before sending more: at most {self.cap} at once.",
        )


class Calls:
    """The tool calls in flight. Each runs in a worker thread of its pool under its own deadline; when its client
    cancels or goes away, the deadline is cancelled, which stops the call's steps and its statement.

    A call holds its client's share until its work has really ended, not only until it is answered: a call
    answered at its deadline whose thread still runs keeps counting, so a client cannot pile up threads."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.active = 0
        self.draining = False
        self.settings = settings or Settings()
        self._pools: dict[Pool, FairShare] = {}

    def configure(self, settings: Settings) -> None:
        """Size the pools from `settings` (before the first call; later, nothing changes)."""
        if not self._pools:
            self.settings = settings

    def pool(self, name: Pool) -> FairShare:
        if name not in self._pools:
            limits = self.settings.limits
            size = limits.worker_threads if name == "tools" else limits.python_programs
            self._pools[name] = FairShare(size, limits.client_calls, limits.client_queue, limits.client_wait_s)
        return self._pools[name]

    async def run(self, work: Callable[[], T], timeout_s: float, pool: Pool = "tools") -> T:
        if self.draining:
            raise NotReady("the server is shutting down.", hint="Connect again in a moment.")
        share, client = self.pool(pool), CLIENT.get()
        self.active += 1
        try:
            await share.enter(client)
            owner = threading.Lock()  # taken by whichever side gives the thread back: the work's or this
            try:
                if self.draining:
                    raise NotReady("the server is shutting down.", hint="Connect again in a moment.")
                return await self._in_thread(share, client, owner, work, timeout_s)
            finally:
                if owner.acquire(blocking=False):  # the work never began
                    share.leave(client)
        finally:
            self.active -= 1

    async def _in_thread(
        self, share: FairShare, client: str, owner: threading.Lock, work: Callable[[], T], timeout_s: float
    ) -> T:
        if share.threads is None:
            share.threads = anyio.CapacityLimiter(share.size)
        call = deadline.Deadline(timeout_s)
        # The thread is handed back on the event loop, where the shares live, without the worker waiting for it.
        leave = functools.partial(asyncio.get_running_loop().call_soon_threadsafe, share.leave, client)
        try:
            with anyio.fail_after(timeout_s + GRACE_S):
                return await anyio.to_thread.run_sync(
                    functools.partial(_under, call, work, leave, owner),
                    abandon_on_cancel=True,
                    limiter=share.threads,
                )
        except TimeoutError:
            call.cancel()
            raise QueryTimeout(
                f"the call ran longer than the {timeout_s:g} s time limit and was stopped.",
                hint="Narrow the request (a shorter question, a table, a pattern or a LIMIT) and ask again.",
            ) from None
        except anyio.get_cancelled_exc_class():
            call.cancel()  # the client cancelled or disconnected: stop the work and the statement
            raise

    async def drain(self, wait_s: float) -> None:
        """Refuse new calls and wait (at most `wait_s`) for those in flight to finish and be answered."""
        self.draining = True
        logger.info("draining %d call(s) in flight", self.active)
        with anyio.move_on_after(wait_s):
            while self.active:
                await anyio.sleep(0.05)
        # A finished call's answer is still on its way through the SDK to the wire: let it get there.
        await anyio.sleep(FLUSH_S)


def _under(call: deadline.Deadline, work: Callable[[], T], leave: Callable[[], object], owner: threading.Lock) -> T:
    """(In the worker thread.) The work under its deadline; the thread goes back to its client's share when the
    work ends, even if the call was answered (or its client left) before. `leave` only schedules that on the
    event loop: queued before the worker's result, it runs before the caller resumes, and the worker does not
    wait on the loop (a second round trip between the threads per call)."""
    if not owner.acquire(blocking=False):
        raise NotReady("the call was given up before it began.")
    try:
        with deadline.within(call):
            return work()
    finally:
        with contextlib.suppress(RuntimeError):  # the event loop is closed: the server stopped
            leave()
