"""`notifications/resources/list_changed` when the tables of a source change, so a client lists them anew.

Each table a role may read is a resource (serve/features.py). While clients are connected, the sources' table
names are read every `every_s` seconds (the live schema's own fingerprint check decides whether the catalog is
read again, see schema/live.py); when a source gains or loses a table, every client hears it: on the
2026-07-28 protocol through its `subscriptions/listen` stream, on earlier ones over its connection (stdio,
where the connection stands; stateless HTTP keeps no connection to send on, and does not claim the feature).

The notice says only that the list changed, never what: each client lists again, through its own role.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server.lowlevel import NotificationOptions
from mcp.shared.subscriptions import ResourcesListChanged

from sophrosyne.serve.features import connection_of

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.mcpserver import MCPServer

    from sophrosyne.environment import Environment
    from sophrosyne.sources import Sources

logger = logging.getLogger("sophrosyne.serve")


class SchemaChanges:
    """Watches the sources' table names while the server runs and tells connected clients when they change."""

    def __init__(self, sources: Sources, every_s: float) -> None:
        self.sources = sources
        self.every_s = every_s
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.seen: dict[str, frozenset[str]] = {}
        self._bus: Any = None
        self.standing = False
        self._task: asyncio.Task[None] | None = None

    def install(self, server: MCPServer, *, standing_connections: bool) -> None:
        """Hear every request (to know the connections and start watching); with `standing_connections`
        (stdio), also claim `resources.listChanged` to clients of the handshake era."""
        self._bus = server._subscriptions  # the SDK's fan-out to subscriptions/listen streams
        self.standing = standing_connections
        server.middleware.append(self)
        if standing_connections:
            lowlevel = server._lowlevel_server
            capabilities = lowlevel.get_capabilities

            def claimed(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
                options = notification_options or NotificationOptions()
                options.resources_changed = True
                return capabilities(options, *args, **kwargs)

            lowlevel.get_capabilities = claimed  # type: ignore[method-assign]

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if self.standing:
            with contextlib.suppress(TypeError):  # a session the SDK cannot refer to weakly is not kept
                self.connections.add(connection_of(ctx))
        # Someone can hear a change: the client of a standing connection, or one that opened a listen stream
        # (over stateless HTTP nobody else can, and the server does no work for nobody).
        if self._task is None and (self.standing or ctx.method == "subscriptions/listen"):
            self._task = asyncio.get_running_loop().create_task(self._watch(), name="sophrosyne-schema-changes")
        if ctx.method == "subscriptions/listen":
            # A change is measured from the moment the stream opens (it stays open: no answer to wait for).
            with contextlib.suppress(Exception):
                if await anyio.to_thread.run_sync(self.check):
                    await self.notify()
        result = await call_next(ctx)
        if ctx.method == "resources/list":
            # What a client was given is what a change is measured against.
            with contextlib.suppress(Exception):
                if await anyio.to_thread.run_sync(self.check):
                    await self.notify()  # the other clients have not heard of it yet
        return result

    async def _watch(self) -> None:
        while True:
            await anyio.sleep(self.every_s)
            try:
                changed = await anyio.to_thread.run_sync(self.check)
            except Exception:  # a source that cannot be read now is told by its calls and /health, not here
                logger.debug("checking the sources' tables failed", exc_info=True)
                continue
            if changed:
                await self.notify()

    def check(self) -> bool:
        """Whether a source gained or lost a table since the last check (the first look only remembers)."""
        changed = False
        for name, env in self.sources.environments.items():
            tables = _tables(env)
            if tables is None:
                continue
            if name in self.seen and self.seen[name] != tables:
                logger.info("the tables of %s changed: clients are told to list resources again", name)
                changed = True
            self.seen[name] = tables
        return changed

    async def notify(self) -> None:
        with contextlib.suppress(Exception):
            await self._bus.publish(ResourcesListChanged())
        for connection in list(self.connections):
            with contextlib.suppress(Exception):  # a client that left is no reason to stop telling the others
                await connection.send_resource_list_changed()


def _tables(env: Environment) -> frozenset[str] | None:
    """The table names of the source's schema, or None while its first reading is not done."""
    if not env.schema_ready:
        return None
    return frozenset(env.full_catalog.tables)
