"""The server's running life: calls in worker threads under deadlines, and draining on SIGTERM."""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from sophrosyne.base import deadline
from sophrosyne.errors import NotReady, QueryTimeout

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.applications import Starlette

    from sophrosyne.environment import Environment
    from sophrosyne.serve.handshake import EarlyStdio

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


async def serve_stdio(server: MCPServer, calls: Calls, drain_s: float, early: EarlyStdio | None = None) -> None:
    """Stdio until the client closes it, or SIGTERM/SIGINT: then calls in flight finish (within `drain_s`).

    With `early`, the wire was taken at start-up (see handshake.py) and the SDK reads and writes through it."""
    async with anyio.create_task_group() as group:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    await calls.drain(drain_s)
                    group.cancel_scope.cancel()
                    return

        async def run() -> None:
            if early is None:
                await server.run_stdio_async()
            else:
                from mcp.server.stdio import stdio_server

                async with stdio_server(stdin=early.stdin, stdout=early.stdout) as (read, write):  # type: ignore[arg-type]
                    lowlevel = server._lowlevel_server
                    await lowlevel.run(read, write, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()

        group.start_soon(on_signal)
        group.start_soon(run)


def keep_streams_on_exit() -> None:
    """The SDK's event streams (sse-starlette) end every open stream when uvicorn is told to exit, cutting
    the answers of calls in flight; they are left to finish, and uvicorn's graceful wait bounds them."""
    with contextlib.suppress(ImportError):
        from sse_starlette.sse import AppStatus

        AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]


async def serve_http(app: Starlette, calls: Calls, host: str, port: int, drain_s: float, log_level: str) -> None:
    """Streamable HTTP with uvicorn; on SIGTERM it stops accepting, and calls in flight finish first."""
    import uvicorn

    from sophrosyne.serve.connections import ACCEPT_BACKLOG, GuardedH11Protocol, raise_descriptor_limit

    class Draining(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            calls.draining = True  # /health says so at once; uvicorn then waits for open requests
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level.lower(),
        timeout_graceful_shutdown=int(drain_s) + 1,
        http=GuardedH11Protocol,  # a request must arrive in time; a client holds only so many connections
        backlog=ACCEPT_BACKLOG,
    )
    raise_descriptor_limit()
    await Draining(config).serve()


def warn_if_exposed(host: str, env: Environment) -> None:
    """Serving beyond this machine with no policy lets anyone who reaches the port read the whole database."""
    if env.policy is None and host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning(
            "serving %s on %s without a policy: anyone who reaches this port can read the whole database; "
            "pass --policy FILE with bearer tokens, or bind 127.0.0.1.",
            env.name,
            host,
        )
