"""Where a database's DB-API connections come from and go back to: a file's own, or SQLAlchemy's for a server."""

from __future__ import annotations

import os
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sophrosyne.errors import ConnectionFailed

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine as SQLAlchemyEngine

    from sophrosyne.engines.base import FileEngine
    from sophrosyne.engines.servers import ServerEngine
    from sophrosyne.engines.ssh import SSH, Tunnel
    from sophrosyne.engines.tls import TLS
    from sophrosyne.settings import Limits

# What to check when a server cannot be reached.
CONNECT_HINT = "Check that the server runs and that the URL, user and database are right."
# A server's connections beyond one per worker thread and Python program: the background work (schema checks,
# the value index, role views) that runs beside the calls.
BACKGROUND_CONNECTIONS = 8
# How long closing a server's pool waits for connections being handed back (a rollback each).
RETURN_WAIT_S = 5.0


class Pool(Protocol):
    """Where a database's DB-API connections come from and go back to."""

    driver: str
    url: str
    errors: tuple[type[Exception], ...]
    # A server's SQLAlchemy engine, whose inspector reads its catalog; None for a file.
    server: SQLAlchemyEngine | None

    def acquire(self) -> Any: ...
    def release(self, raw: Any) -> None: ...
    def close(self) -> None: ...


class FilePool:
    """Native connections to one database file, kept for reuse; each serves one thread at a time.

    Opening a connection costs little, but SQLite parses the schema again on each new one, which adds up on
    large schemas; a few idle connections are kept, and more are opened when threads need them. The path
    is checked at each hand-out: a file replaced under it is opened anew, a removed one is an error until
    it is back. An engine whose connections lock the file (DuckDB) has its idle ones closed after
    `engine.idle_close_s` without a call, so that other processes may write to the file meanwhile.
    """

    keep = 4
    server: SQLAlchemyEngine | None = None

    def __init__(self, engine: FileEngine, path: Path) -> None:
        self.engine = engine
        self.path = path
        self.driver = engine.driver
        self.url = f"{engine.name}:///{path}"
        self.errors: tuple[type[Exception], ...] = (engine.error(),)
        self._idle: list[Any] = []
        self._opened: dict[int, object] = {}  # id of a connection -> identity of the file it opened
        self._lock = threading.Lock()
        self.identity: object = self._stat()
        self._last_release = 0.0
        self._closer: threading.Timer | None = None
        self._closed = False

    def _stat(self) -> object:
        """The file's identity (device and inode): a file replaced under the same path has another."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise ConnectionFailed(
                f"the database file {self.path} is gone (removed or moved while being served).",
                hint="Put the file back, or serve its new path; calls work again as soon as it is there.",
            ) from None
        except OSError as exc:
            raise ConnectionFailed(f"cannot read {self.path}: {exc.strerror}.", hint="Check the file.") from None
        return (st.st_dev, st.st_ino)

    def replaced(self) -> bool:
        """Whether the path now holds another file than the connections opened (raises if it holds none)."""
        return self._stat() != self.identity

    def acquire(self) -> Any:
        # A connection keeps reading the file it opened even once that file is replaced or removed: check
        # the path first, and open the file there now rather than serve the old one.
        identity = self._stat()
        stale: list[Any] = []
        with self._lock:
            if identity != self.identity:
                stale, self._idle = self._idle, []
                self.identity = identity
            raw = self._idle.pop() if self._idle else None
        for old in stale:
            self._close(old)
        if raw is not None:
            return raw
        raw = self.open()
        with self._lock:
            self._opened[id(raw)] = identity
        return raw

    def open(self) -> Any:
        """A new connection, checked by reading the file, with the reason in plain words when it fails."""
        try:
            raw = self.engine.connect(self.path)
            self.engine.probe(raw)
            return raw
        except self.errors as exc:
            raise open_failure(self.path, first_line(exc)) from None

    def release(self, raw: Any) -> None:
        if getattr(raw, "broken", False):  # a DuckDB process that ended: not kept for the next call
            self._close(raw)
            return
        with self._lock:
            # A connection handed back after close (a background reading that outlived its database) is shut,
            # not kept by a pool nobody closes again.
            current = self._opened.get(id(raw)) == self.identity and not self._closed
            if current and len(self._idle) < self.keep:
                self._idle.append(raw)
                self._last_release = time.monotonic()
                self._close_when_idle()
                return
        self._close(raw)

    def _close_when_idle(self) -> None:
        """(Under the lock.) Close the idle connections once none was used for `idle_close_s`."""
        wait = self.engine.idle_close_s
        if wait is None or self._closer is not None:
            return
        due = self._last_release + wait - time.monotonic()
        # The timer holds the pool weakly: a pending timer does not keep connections alive past the pool.
        self._closer = threading.Timer(max(0.0, due), _close_idle_of, (weakref.ref(self),))
        self._closer.daemon = True
        self._closer.start()

    def _close_idle(self) -> None:
        wait = self.engine.idle_close_s or 0.0
        with self._lock:
            self._closer = None
            if time.monotonic() - self._last_release < wait:
                self._close_when_idle()  # used meanwhile: wait for its own pause
                return
            idle, self._idle = self._idle, []
        for raw in idle:
            self._close(raw)

    def _close(self, raw: Any) -> None:
        with self._lock:
            self._opened.pop(id(raw), None)
        raw.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            closer, self._closer = self._closer, None
        if closer is not None:
            closer.cancel()
        for raw in idle:
            self._close(raw)


def _close_idle_of(pool: weakref.ref[FilePool]) -> None:
    alive = pool()
    if alive is not None:
        alive._close_idle()


def open_failure(path: Path, message: str) -> ConnectionFailed:
    """Why a database file could not be opened, in words a user acts on (the driver's words after)."""
    lowered = message.lower()
    kind = "SQLite or DuckDB"
    if "not a database" in lowered or "not a valid duckdb" in lowered or "invalid" in lowered:
        return ConnectionFailed(
            f"{path} is not a {kind} database ({message}).",
            hint="Give a .sqlite/.db/.duckdb database file, or a URL such as postgresql://user@host/db.",
        )
    if "locked" in lowered or "lock on file" in lowered:
        return ConnectionFailed(
            f"{path} is locked by another process ({message}).",
            hint="Wait for the process writing to it to finish, or serve a copy of the file.",
        )
    if not os.access(path, os.R_OK):
        return ConnectionFailed(f"cannot read {path}: permission denied.", hint="Give the server read access.")
    return ConnectionFailed(f"cannot open {path}: {message}", hint="Check the file.")


class ServerPool:
    """SQLAlchemy's pool of one server database (it checks a connection is alive before handing it out).

    Closing disposes of the pool, which shuts the connections checked in; one still checked out (a background
    reading, a statement running) is shut as it comes back. SQLAlchemy would otherwise put it back into the
    disposed pool, open, for the garbage collector to find later (psycopg warns of each one)."""

    def __init__(
        self, engine: SQLAlchemyEngine, kind: ServerEngine, connect_timeout_s: float, tunnel: Tunnel | None = None
    ) -> None:
        from sqlalchemy import event

        self.engine = engine
        self.tunnel = tunnel  # the SSH tunnel the connections go through, closed with the pool
        self.connect_timeout_s = connect_timeout_s
        # Where the server is, for what to check when it cannot be reached.
        self.address = f"{engine.url.host or 'localhost'}:{engine.url.port or kind.default_port}"
        if tunnel is not None:
            self.address = f"{tunnel.target[0]}:{tunnel.target[1]} through the SSH server {tunnel.where}"
        self.server: SQLAlchemyEngine | None = engine  # the same, as every pool offers it (None for a file)
        self.driver = str(engine.dialect.driver)
        self.url = engine.url.render_as_string(hide_password=True)
        self.errors: tuple[type[Exception], ...] = (engine.dialect.loaded_dbapi.Error,)
        self.closed = False
        self._returning = 0  # connections being handed back now (a rollback, then into the pool)
        self._state = threading.Condition()
        # On the engine, so that it holds for every pool it has (disposing makes a new one): the catalog's
        # inspector takes its connections from the engine itself, not through `acquire`.
        event.listen(engine, "checkin", self._shut_if_closed)

    def acquire(self) -> Any:
        from sqlalchemy.exc import DBAPIError

        # The pool raises the driver's own errors on connect, unwrapped.
        errors: tuple[type[Exception], ...] = (DBAPIError, *self.errors)
        try:
            return self.engine.raw_connection()
        except ConnectionFailed as exc:  # the host's name did not resolve, the tunnel failed (see bound_connects)
            raise ConnectionFailed(f"cannot connect to {self.url}: {exc.message}", hint=exc.hint) from None
        except errors as exc:
            cause = first_line(exc.orig if isinstance(exc, DBAPIError) else exc)
            raise self._failure(cause) from None

    def _failure(self, cause: str) -> ConnectionFailed:
        lowered = cause.lower()
        if "timed out" in lowered or "timeout" in lowered:
            cause = f"no answer from {self.address} within {self.connect_timeout_s:g} s ({cause})"
        if any(word in lowered for word in ("certificate", "ssl", "tls")):
            return ConnectionFailed(
                f"cannot connect to {self.url}: TLS failed: {cause}",
                hint=f"Check that the source's tls.ca is the CA that signed the certificate of the server at "
                f"{self.address}, that the URL's host is a name that certificate holds (mode verify-full; verify-ca "
                "checks the CA only), and, where the server asks for one, tls.cert and tls.key (docs/connections.md).",
            )
        return ConnectionFailed(
            f"cannot connect to {self.url}: {cause}",
            hint=f"Check that the server runs and answers at {self.address} (a firewall or a proxy may accept "
            "a connection and pass nothing on), and that the URL, user, password, database and TLS options are "
            f"right; connect_timeout_s (now {self.connect_timeout_s:g} s) is how long opening may take.",
        )

    def release(self, raw: Any) -> None:
        with self._state:
            if self.closed:
                raw.invalidate()  # shut, not handed back to a pool that is gone
                return
            self._returning += 1
        try:
            raw.close()  # back to the pool, which rolls back whatever is left
        finally:
            with self._state:
                self._returning -= 1
                self._state.notify_all()

    def _shut_if_closed(self, dbapi_connection: Any, record: Any) -> None:
        if self.closed and dbapi_connection is not None:
            record.invalidate()  # the connection is shut; the record goes back empty

    def close(self) -> None:
        with self._state:
            self.closed = True
            # A connection being handed back now lands in the pool before it is disposed of, not after.
            self._state.wait_for(lambda: self._returning == 0, timeout=RETURN_WAIT_S)
        try:
            self.engine.dispose()
        finally:
            if self.tunnel is not None:
                self.tunnel.close()


def open_server_pool(
    engine: ServerEngine, url: Any, limits: Limits, *, probe: bool, tls: TLS | None, ssh: SSH | None
) -> ServerPool:
    """The pool of a server's database at `url` (SQLAlchemy's), its connects bounded (see bound_connects), with
    the source's TLS options and through its SSH tunnel if it has them; with `probe`, one connection made now."""
    from sophrosyne.engines.catalogs import CATALOG_READ_S

    # Once open, no read or write of a connection waits longer than the longest statement (a catalog's reading
    # included), and a little more: past that the server is gone.
    read_timeout_s = max(limits.timeout_s, CATALOG_READ_S) + limits.connect_timeout_s
    url, connect_args = engine.prepare_url(url, limits.connect_timeout_s, read_timeout_s)
    if tls is not None:
        connect_args |= engine.tls_args(tls)
    tunnel, shown = None, url.render_as_string(hide_password=True)
    if ssh is not None:
        from sophrosyne.engines.ssh import Tunnel

        tunnel = Tunnel(ssh, (url.host or "localhost", url.port or engine.default_port), limits.connect_timeout_s)
        url, redirect = engine.through_tunnel(url, tunnel.open())
        connect_args |= redirect
    try:
        pool = _pool(engine, url, connect_args, limits, tunnel, read_timeout_s)
        pool.url = shown  # the server's own URL, not the tunnel's port on 127.0.0.1 where the URL was changed for it
        if probe:
            pool.release(pool.acquire())  # fail now, with a clear message, rather than at the first tool call
        return pool
    except BaseException:
        if tunnel is not None:
            tunnel.close()
        raise


def _pool(
    engine: ServerEngine,
    url: Any,
    connect_args: dict[str, Any],
    limits: Limits,
    tunnel: Tunnel | None,
    read_timeout_s: float,
) -> ServerPool:
    import sqlalchemy as sa
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    from sophrosyne.errors import ConfigError

    try:
        # Each worker thread and each Python program may hold a connection at once: SQLAlchemy's default pool
        # (5, and 10 more for 30 s) made a flood of slow calls wait on connections the fair share gave others.
        server = sa.create_engine(
            url,
            pool_pre_ping=True,
            pool_size=limits.worker_threads + limits.python_programs,
            max_overflow=BACKGROUND_CONNECTIONS,
            connect_args=connect_args,
        )
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ConfigError(f"cannot open `{url.render_as_string(hide_password=True)}`: {exc}") from None
    bound_connects(server, engine, limits.connect_timeout_s, read_timeout_s, tunnel)
    return ServerPool(server, engine, limits.connect_timeout_s, tunnel)


def bound_connects(
    server: SQLAlchemyEngine, kind: ServerEngine, connect_timeout_s: float, read_s: float, tunnel: Tunnel | None
) -> None:
    """Bound each new connection of `server`: its host's name looked up within the connect timeout (the
    drivers bound the rest of the opening themselves, see each engine's prepare_url), then its reads and
    writes by `read_s` once it is open. Through an SSH tunnel, the tunnel's SSH connection is checked (and
    opened again if it dropped) instead of a name looked up: the name is the SSH server's to resolve."""
    from sqlalchemy import event

    from sophrosyne.engines.servers import resolve

    def before(dialect: Any, record: Any, args: Any, params: dict[str, Any]) -> None:
        if tunnel is not None:
            tunnel.ensure()
        else:
            resolve(params.get("host"), connect_timeout_s)

    def after(raw: Any, record: Any) -> None:
        kind.connected(raw, read_s)

    event.listen(server, "do_connect", before)
    event.listen(server, "connect", after)


def first_line(exc: BaseException | None) -> str:
    """The driver's message, its first line (its class name when it has none)."""
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    # MySQL drivers carry (errno, message); the number means nothing to an agent.
    text = str(args[1] if len(args) == 2 and isinstance(args[0], int) else exc or "").strip()
    return text.splitlines()[0] if text else type(exc).__name__
