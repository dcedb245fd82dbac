"""The tool calls in flight: each in a worker thread under its deadline; refused, and waited for, while the server
drains."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from sophrosyne.base import deadline
from sophrosyne.errors import NotReady, QueryTimeout

logger = logging.getLogger("sophrosyne.server")
T = TypeVar("T")

# A call whose work does not notice its deadline (a C routine that cannot be interrupted) is answered this
# much later anyway; its thread is left to end at its next check.
GRACE_S = 1.0
# Time for the answers of the last calls to reach the wire before a drained server stops.
FLUSH_S = 0.5
# Worker threads for tool calls: enough that a slow call never makes a quick one wait for a thread.
WORKER_THREADS = 32


class Calls:
    """The tool calls in flight. Each runs in a worker thread under its own deadline; when its client
    cancels or goes away, the deadline is cancelled, which stops the call's steps and its statement."""

    def __init__(self) -> None:
        self.active = 0
        self.draining = False
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, work: Callable[[], T], timeout_s: float) -> T:
        if self.draining:
            raise NotReady("the server is shutting down.", hint="Connect again in a moment.")
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(WORKER_THREADS)
        call = deadline.Deadline(timeout_s)
        self.active += 1
        try:
            with anyio.fail_after(timeout_s + GRACE_S):
                return await anyio.to_thread.run_sync(
                    functools.partial(_under, call, work), abandon_on_cancel=True, limiter=self._limiter
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
        finally:
            self.active -= 1

    async def drain(self, wait_s: float) -> None:
        """Refuse new calls and wait (at most `wait_s`) for those in flight to finish and be answered."""
        self.draining = True
        logger.info("draining %d call(s) in flight", self.active)
        with anyio.move_on_after(wait_s):
            while self.active:
                await anyio.sleep(0.05)
        # A finished call's answer is still on its way through the SDK to the wire: let it get there.
        await anyio.sleep(FLUSH_S)


def _under(call: deadline.Deadline, work: Callable[[], T]) -> T:
    with deadline.within(call):
        return work()
