"""GET /health: whether the server is up, and, to a caller allowed to see them, its sources and their state.

A source whose schema cannot be read (a file that is not a database, a server that does not answer) is
followed from the start: said on stderr when its reading fails, reported failed with the reason by /health,
and tried again every RETRY_S until it works.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sophrosyne.errors import SophrosyneError
from sophrosyne.serve.auth import roles_of

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.requests import Request
    from starlette.responses import Response

    from sophrosyne.environment import Environment
    from sophrosyne.serve.calls import Calls
    from sophrosyne.sources import Sources

logger = logging.getLogger("sophrosyne.serve.health")

# Seconds between readings of a source that failed: cheap when it fails at once, and soon enough to notice
# a database that came up after the server.
RETRY_S = 5.0


class SourceWatch:
    """The first schema reading of each source, followed in a thread of its own (`start`)."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.failures: dict[str, str] = {}  # source -> why its last reading failed

    def start(self) -> None:
        for name, env in self.sources.environments.items():
            follow = threading.Thread(target=self._follow, args=(name, env), name=f"sophrosyne-watch-{name}")
            follow.daemon = True
            follow.start()

    def _follow(self, name: str, env: Environment) -> None:
        while True:
            try:
                env.read_schema()  # waits for the reading in progress, or starts it again after a failure
            except SophrosyneError as exc:
                reason = str(exc)
            except Exception:  # not an error the environment raises on purpose: the log has the details
                logger.exception("reading the schema of source %s failed", name)
                reason = "internal error; the server log has the details."
            else:
                if self.failures.pop(name, None) is not None:
                    logger.warning("source %s: its schema is read now; it is served.", name)
                return
            if self.failures.get(name) != reason:
                logger.error(
                    "source %s cannot be served: %s (/health reports it failed; it is tried again every %g s)",
                    name,
                    reason,
                    RETRY_S,
                )
            self.failures[name] = reason
            time.sleep(RETRY_S)

    def state(self, name: str, env: Environment) -> str:
        if name in self.failures:
            return "failed"
        return "ready" if env.schema_ready else "loading"


def health_of(
    sources: Sources, calls: Calls, watch: SourceWatch, visible: Collection[str] | None
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of /health. `visible`: the sources the caller may see (None: no details).

    503 while draining (a balancer stops sending) and while a source cannot be served."""
    from sophrosyne.base.version import __version__

    status = "draining" if calls.draining else "failed" if watch.failures else "ok"
    body: dict[str, Any] = {"status": status}
    if visible is not None:
        shown = {name: env for name, env in sources.environments.items() if name in visible}
        body["version"] = __version__
        body["sources"] = {name: watch.state(name, env) for name, env in shown.items()}
        failures = {name: reason for name, reason in watch.failures.items() if name in shown}
        if failures:
            body["failures"] = failures
        body["calls_in_flight"] = calls.active
    return (200 if status == "ok" else 503), body


def add_health(server: MCPServer, sources: Sources, calls: Calls, watch: SourceWatch, require_token: bool) -> None:
    """GET /health. With tokens required, a caller without a valid one is told the status only: the sources'
    names and states are for callers with a token, each seeing the sources its token opens."""
    from starlette.responses import JSONResponse

    def visible_to(request: Request) -> Collection[str] | None:
        if not require_token:
            return sources.names
        roles = roles_of(request.scope.get("user"))
        if roles is None:
            return None
        return [name for name, env in sources.environments.items() if env.policy is None or name in roles]

    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]
    async def health(request: Request) -> Response:
        code, body = health_of(sources, calls, watch, visible_to(request))
        return JSONResponse(body, status_code=code)
