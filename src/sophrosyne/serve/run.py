"""Running the MCP server: stdio or streamable HTTP, in one process or several workers, draining on SIGTERM."""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any, NoReturn

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
from sophrosyne.serve.handshake import EarlyStdio, leave_now
from sophrosyne.serve.health import SourceWatch
from sophrosyne.serve.server import build_server
from sophrosyne.serve.spec import SERVER_GC_THRESHOLD, ServeSpec, collect_less_often
from sophrosyne.serve.workers import (
    LEVEL_VARIABLE,
    SOCKET_VARIABLE,
    become_supervisor,
    fork_workers,
    freeze_for_fork,
    in_worker,
    listening,
    log_as_the_command_does,
)
from sophrosyne.sources import Sources

__all__ = ["SERVER_GC_THRESHOLD", "ServeSpec", "collect_less_often", "http_app_of", "serve", "serve_workers"]

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


def serve_workers(spec: ServeSpec, workers: int, on_bound: Callable[[], None] | None = None) -> NoReturn:
    """Streamable HTTP in `workers` processes forked from this one once it has loaded what they share; then this
    process becomes their supervisor until SIGTERM (or SIGINT) and their drain (see workers.py), and ends. A busy
    port is a ConfigError before anything starts."""
    raise_descriptor_limit()  # the workers inherit it
    sockets = listening(bind(spec.host, spec.port), workers)
    if on_bound is not None:
        on_bound()
    preload(spec)
    freeze_for_fork()
    level = logging.getLevelName(logging.getLogger().level).lower()
    level = level if level in ("critical", "error", "warning", "info", "debug") else "warning"
    pids = fork_workers(sockets, functools.partial(serve_worker, spec, log_level=level))
    respawn = [sys.executable, "-c", f"from {__name__} import serve_spawned_worker; serve_spawned_worker()"]
    env = {**os.environ, SPEC_VARIABLE: spec.model_dump_json(), LEVEL_VARIABLE: level}
    become_supervisor(sockets, pids, spec.drain_s, respawn, env)


SPEC_VARIABLE = "SOPHROSYNE_SERVE_SPEC"


def serve_worker(spec: ServeSpec, sock: socket.socket, log_level: str) -> None:
    """One HTTP worker on its listening socket: its own sources, threads and loop, until SIGTERM and its drain."""
    calls = Calls()
    sources = spec.open()
    app = http_app_of(sources, spec.host, calls=calls, allow_python=spec.allow_python)
    anyio.run(serve_http, app, calls, sock, spec.drain_s, log_level)


def serve_spawned_worker() -> NoReturn:
    """A worker the supervisor starts afresh in place of one that died: the spec, the socket's descriptor and the
    log level are in its environment."""
    collect_less_often()
    log_as_the_command_does(os.environ[LEVEL_VARIABLE])
    in_worker(os.getppid())
    sock = socket.socket(fileno=int(os.environ[SOCKET_VARIABLE]))
    serve_worker(ServeSpec.model_validate_json(os.environ[SPEC_VARIABLE]), sock, os.environ[LEVEL_VARIABLE])
    leave_now()


def preload(spec: ServeSpec) -> None:
    """Import and load in the workers' parent what each would load for itself: the server and its app, built once,
    the data that every database's directives read, and each schema with its indexes; then the sources are
    closed. Nothing is left running: no connection, no thread, no loop (see freeze_for_fork)."""
    sources = spec.open()
    sources.settings.paths.audit_log = None  # the server built here answers no call: no audit file opened for it
    try:
        for env in sources.environments.values():
            warn_if_exposed(spec.host, env)
        require_token = any(env.policy is not None for env in sources.environments.values())
        http_asgi(build_server(sources, require_token=require_token, allow_python=spec.allow_python), spec.host)
        if sources.settings.inference.directives == "directives":
            load_directive_data(sources.settings.inference.embedder)
        for env in sources.environments.values():
            # Each schema read and its directive indexes built or loaded once here: what that loads or caches for
            # every database alike is then shared, and each worker loads the indexes from the cache folder. Not
            # DuckDB's: its statements run in a process that a worker must not share with the others.
            if env.dialect != "duckdb":
                with contextlib.suppress(Exception):  # each worker says what its own reading meets
                    env.warm(wait=True)
    finally:
        sources.close()


def load_directive_data(embedder: str) -> None:
    """What every database's directives read alike, each loaded once per process on first use: the moderator's
    modules, the fitted model, the thesaurus, and WordLlama's token table and tokenizer (16 MB; a static table,
    no thread: another embedder's runtime keeps a thread pool, which a fork would leave behind, so each worker
    loads that one itself)."""
    import sophrosyne.directives.moderator  # noqa: F401
    from sophrosyne.directives.model import fitted_model
    from sophrosyne.directives.thesaurus import load_thesaurus
    from sophrosyne.index.embedders import embedder_named

    fitted_model()
    load_thesaurus()
    if embedder == "wordllama":
        with contextlib.suppress(Exception):  # a worker that needs it says why it cannot load it
            embedder_named(embedder).embed(["employees", "departments"])


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


def http_app_of(sources: Sources, host: str, *, calls: Calls, allow_python: bool) -> Starlette:
    """The ASGI app of an HTTP worker: each schema read and the directive indexes loaded in the background from
    now on, /health following them."""
    for env in sources.environments.values():
        env.warm()  # the server answers at once; a call that needs the schema waits for it
    watch = SourceWatch(sources)
    watch.start()  # a source that cannot be read is said on stderr now, and /health reports it
    require_token = any(env.policy is not None for env in sources.environments.values())
    server = build_server(sources, require_token=require_token, calls=calls, allow_python=allow_python, watch=watch)
    SchemaChanges(sources, _changes_every_s(sources)).install(server, standing_connections=False)
    Guarded.configure(ConnectionLimits.of(sources.settings))
    return http_asgi(server, host)


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
