"""Running the MCP server: stdio or streamable HTTP, in one process or several workers, draining on SIGTERM."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.routing import Route

from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError
from sophrosyne.serve.calls import Calls
from sophrosyne.serve.changes import SchemaChanges
from sophrosyne.serve.connections import (
    ACCEPT_BACKLOG,
    ConnectionLimits,
    Guarded,
    GuardedProtocol,
    raise_descriptor_limit,
)
from sophrosyne.serve.front import StreamsOnlyWhenAsked, front_page
from sophrosyne.serve.handshake import EarlyStdio
from sophrosyne.serve.health import SourceWatch
from sophrosyne.serve.server import build_server
from sophrosyne.serve.spec import SERVER_GC_THRESHOLD, ServeSpec, collect_less_often
from sophrosyne.sources import Sources

__all__ = ["SERVER_GC_THRESHOLD", "ServeSpec", "collect_less_often", "http_app", "serve", "serve_workers"]

logger = logging.getLogger("sophrosyne.server")


def serve(
    target: Environment | Sources,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    early: EarlyStdio | None = None,
    allow_python: bool = False,
    on_bound: Callable[[], None] | None = None,
) -> None:
    """Run the server over stdio (default) or streamable HTTP until the client leaves or SIGTERM comes;
    calls in flight then finish (within `timeout_s`) before it exits. `early` is the stdio wire taken at
    start-up, whose thread has answered the handshake meanwhile; `on_bound` is called once the HTTP port is
    bound (a busy port is a ConfigError before it)."""
    sources = target if isinstance(target, Sources) else Sources.single(target)
    require_token = http and any(env.policy is not None for env in sources.environments.values())
    calls = Calls()
    watch = SourceWatch(sources)
    watch.start()  # a source that cannot be read is said on stderr now, and /health reports it
    server = build_server(sources, require_token=require_token, calls=calls, allow_python=allow_python, watch=watch)
    SchemaChanges(sources, _changes_every_s(sources)).install(server, standing_connections=not http)
    drain_s = sources.settings.limits.timeout_s + 1
    if http:
        for env in sources.environments.values():
            warn_if_exposed(host, env)
        app = http_asgi(server, host)
        Guarded.configure(ConnectionLimits.of(sources.settings))
        sock = bind(host, port)
        if on_bound is not None:
            on_bound()
        anyio.run(serve_http, app, calls, sock, drain_s, log_level)
    else:
        anyio.run(serve_stdio, server, calls, drain_s, early)


def _changes_every_s(sources: Sources) -> float:
    """How often the tables are looked at for clients: as often as the schema is checked, at most once a second."""
    return max(1.0, sources.settings.reading.schema_check_s)


SPEC_VARIABLE = "SOPHROSYNE_SERVE_SPEC"


def serve_workers(spec: ServeSpec, workers: int, on_bound: Callable[[], None] | None = None) -> None:
    """Streamable HTTP in several processes: uvicorn starts each from `http_app`, which reads the spec; the
    port is bound here first (as uvicorn.run would), so that a busy port is one line with a hint."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ[SPEC_VARIABLE] = spec.model_dump_json()
    raise_descriptor_limit()  # the workers inherit it
    config = uvicorn.Config(
        "sophrosyne.serve.run:http_app",
        factory=True,
        host=spec.host,
        port=spec.port,
        workers=workers,
        log_level="info",
        timeout_graceful_shutdown=int(spec.drain_s) + 1,
        http=GuardedProtocol,  # each worker sets its limits as it builds its app (http_app)
        backlog=ACCEPT_BACKLOG,
    )
    sock = bind(spec.host, spec.port)
    if on_bound is not None:
        on_bound()
    with contextlib.suppress(KeyboardInterrupt):
        Multiprocess(config, sockets=[sock]).run()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound as uvicorn binds it; a port in use or refused is a ConfigError with a hint,
    not uvicorn's `[Errno 98]`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is in use by another program.",
                hint=f"Pass another --port, or stop what listens there (`ss -ltnp 'sport = :{port}'` names it).",
            ) from None
        if exc.errno == errno.EACCES:
            raise ConfigError(
                f"binding port {port} on {host} was refused: ports below 1024 need privileges.",
                hint="Pass --port 8000 (or any port from 1024 up).",
            ) from None
        raise ConfigError(
            f"cannot bind {host}:{port}: {exc.strerror or exc}.",
            hint="Pass --host 127.0.0.1 (this machine) or 0.0.0.0 (every address of it), and a free --port.",
        ) from None
    sock.set_inheritable(True)
    return sock


def http_app() -> Starlette:
    """The ASGI app of one HTTP worker, built from the spec its parent process left in the environment."""
    collect_less_often()  # a worker process is a server of its own
    spec = ServeSpec.model_validate_json(os.environ[SPEC_VARIABLE])
    sources = spec.open()
    for env in sources.environments.values():
        # Read the schema and build the directive index in the background: the worker answers at once.
        env.warm()
    watch = SourceWatch(sources)
    watch.start()
    require_token = any(env.policy is not None for env in sources.environments.values())
    server = build_server(sources, require_token=require_token, allow_python=spec.allow_python, watch=watch)
    SchemaChanges(sources, _changes_every_s(sources)).install(server, standing_connections=False)
    Guarded.configure(ConnectionLimits.of(sources.settings))
    return http_asgi(server, spec.host)


def http_asgi(server: MCPServer, host: str) -> Starlette:
    """Stateless streamable HTTP: each request stands alone, so any worker serves it. Answers are event
    streams, so a client that gives up closes its stream and the call stops (see keep_streams_on_exit)."""
    keep_streams_on_exit()
    app = server.streamable_http_app(stateless_http=True, host=host)
    app.router.routes.insert(0, Route("/", front_page, methods=["GET"]))
    app.add_middleware(StreamsOnlyWhenAsked)
    return app


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


async def serve_http(app: Starlette, calls: Calls, sock: socket.socket, drain_s: float, log_level: str) -> None:
    """Streamable HTTP with uvicorn; on SIGTERM it stops accepting, and calls in flight finish first."""
    import uvicorn

    class Draining(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            calls.draining = True  # /health says so at once; uvicorn then waits for open requests
            super().handle_exit(sig, frame)

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level.lower(),
        timeout_graceful_shutdown=int(drain_s) + 1,
        http=GuardedProtocol,  # a request must arrive in time; a client holds only so many connections
        backlog=ACCEPT_BACKLOG,
    )
    raise_descriptor_limit()
    await Draining(config).serve(sockets=[sock])


def warn_if_exposed(host: str, env: Environment) -> None:
    """Serving beyond this machine with no policy lets anyone who reaches the port read the whole database."""
    if env.policy is None and host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning(
            "serving %s on %s without a policy: anyone who reaches this port can read the whole database; "
            "pass --policy FILE with bearer tokens, or bind 127.0.0.1.",
            env.name,
            host,
        )
