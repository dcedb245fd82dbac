"""Databases opened read-only: pooled connections, sessions with a per-statement timeout, and a row cap."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sophrosyne import engines
from sophrosyne.errors import ConfigError, ConnectionFailed, QueryFailed, QueryTimeout, SophrosyneError
from sophrosyne.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine as SQLAlchemyEngine

    from sophrosyne.catalog import Catalog
    from sophrosyne.engines import Cursor, Engine, FileEngine, ServerEngine

# Words in an engine's message that mean the statement was stopped by its deadline.
_TIMEOUT_MARKERS = (
    "interrupted",
    "statement timeout",
    "canceling statement",
    "max_execution_time",
    "max_statement_time",
    "query execution was interrupted",
)
_CONNECT_HINT = "Check that the server runs and that the URL, user and database are right."


@dataclass
class QueryResult:
    """Rows of one statement, capped; `truncated` says the engine had more."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    elapsed_ms: float


class Pool(Protocol):
    """Where a database's DB-API connections come from and go back to."""

    driver: str
    url: str
    errors: tuple[type[Exception], ...]

    def acquire(self) -> Any: ...
    def release(self, raw: Any) -> None: ...
    def close(self) -> None: ...


class Database:
    """One database, reached only through read-only sessions."""

    def __init__(self, engine: Engine, pool: Pool, *, name: str, settings: Settings) -> None:
        self.engine = engine
        self.pool = pool
        self.name = name
        self.settings = settings
        self._catalog: Catalog | None = None
        self._index_leads: dict[str, set[str]] | None = None
        self._index_leads_read = False
        self._lock = threading.Lock()

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of the engine."""
        return self.engine.name

    @property
    def driver(self) -> str:
        """The DB-API driver the connections run on."""
        return self.pool.driver

    @property
    def display_url(self) -> str:
        """The database's URL, without a password."""
        return self.pool.url

    def catalog(self) -> Catalog:
        """The catalog, read once and kept: schema reads are slow on large databases."""
        with self._lock:
            if self._catalog is None:
                from sophrosyne.catalog_reader import read_catalog

                self._catalog = read_catalog(self)
            return self._catalog

    def index_leads(self) -> dict[str, set[str]] | None:
        """Lower-cased table -> lower-cased first columns of its indexes, read once (for performance hints);
        None where the engine does not say."""
        if not self._index_leads_read:
            try:
                with self.session(self.settings.timeout_s) as cursor:
                    pairs = self.engine.index_leads(cursor)
            except SophrosyneError:
                pairs = None  # no hints rather than a failed tool call
            leads: dict[str, set[str]] | None = None
            if pairs is not None:
                leads = {}
                for table, column in pairs:
                    leads.setdefault(table.lower(), set()).add(column.lower())
            self._index_leads, self._index_leads_read = leads, True
        return self._index_leads

    def refresh_catalog(self) -> Catalog:
        with self._lock:
            self._catalog = None
        return self.catalog()

    def run(
        self, sql: str, *, limit: int | None = None, timeout_s: float | None = None, fenced: bool = False
    ) -> QueryResult:
        """Run one statement in a read-only session; fetch at most `limit` rows. `fenced`: see Engine.session."""
        timeout = timeout_s if timeout_s is not None else self.settings.timeout_s
        started = time.perf_counter()
        with self.session(timeout, fenced=fenced) as cursor:
            cursor.execute(sql)
            description = cursor.description
            columns = [str(d[0]) for d in description] if description else []
            if not description:
                rows, truncated = [], False
            elif limit is None:
                rows, truncated = [tuple(r) for r in cursor.fetchall()], False
            else:
                fetched = cursor.fetchmany(limit + 1)
                truncated = len(fetched) > limit
                rows = [tuple(r) for r in fetched[:limit]]
        return QueryResult(columns, rows, truncated, (time.perf_counter() - started) * 1000)

    @contextmanager
    def session(self, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        """A cursor inside a read-only transaction with a statement deadline; the engine's errors are translated."""
        raw = self.pool.acquire()
        try:
            with self.engine.session(raw, timeout_s, fenced=fenced) as cursor:
                yield cursor
        except self.pool.errors as exc:
            raise _translate(exc, timeout_s) from None
        finally:
            self.pool.release(raw)

    def close(self) -> None:
        self.pool.close()


class FilePool:
    """Native connections to one database file, kept for reuse; each serves one thread at a time.

    Opening a connection costs little, but SQLite parses the schema again on each new one, which adds up on
    large schemas; a few idle connections are kept, and more are opened when threads need them.
    """

    keep = 4

    def __init__(self, engine: FileEngine, path: Path) -> None:
        self.engine = engine
        self.path = path
        self.driver = engine.driver
        self.url = f"{engine.name}:///{path}"
        self.errors: tuple[type[Exception], ...] = (engine.error(),)
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def acquire(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        try:
            return self.engine.connect(self.path)
        except self.errors as exc:
            raise ConnectionFailed(f"cannot open {self.path}: {_first_line(exc)}", hint="Check the file.") from None

    def release(self, raw: Any) -> None:
        with self._lock:
            if len(self._idle) < self.keep:
                self._idle.append(raw)
                return
        raw.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for raw in idle:
            raw.close()


class ServerPool:
    """SQLAlchemy's pool of one server database (it checks a connection is alive before handing it out)."""

    def __init__(self, engine: SQLAlchemyEngine) -> None:
        self.engine = engine
        self.driver = str(engine.dialect.driver)
        self.url = engine.url.render_as_string(hide_password=True)
        self.errors: tuple[type[Exception], ...] = (engine.dialect.loaded_dbapi.Error,)

    def acquire(self) -> Any:
        from sqlalchemy.exc import DBAPIError

        # The pool raises the driver's own errors on connect, unwrapped.
        errors: tuple[type[Exception], ...] = (DBAPIError, *self.errors)
        try:
            return self.engine.raw_connection()
        except errors as exc:
            cause = exc.orig if isinstance(exc, DBAPIError) else exc
            raise ConnectionFailed(f"cannot connect to {self.url}: {_first_line(cause)}", hint=_CONNECT_HINT) from None

    def release(self, raw: Any) -> None:
        raw.close()  # back to the pool, which rolls back whatever is left

    def close(self) -> None:
        self.engine.dispose()


def open_database(target: str | Path, settings: Settings | None = None, *, name: str | None = None) -> Database:
    """Open a database from a SQLAlchemy URL or a path to a .sqlite/.db/.duckdb file, read-only."""
    settings = settings or Settings()
    text = str(target)
    if "://" not in text:
        return _open_file(text, settings, name)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text)
    except ArgumentError:
        raise ConfigError(f"`{text}` is not a valid SQLAlchemy URL.") from None
    backend = url.get_backend_name()
    engine = engines.named(backend)
    if engine is None:
        raise ConfigError(
            f"the `{backend}` engine is not supported.",
            hint="Use sqlite, duckdb, postgresql or mysql/mariadb URLs.",
        )
    if not isinstance(engine, engines.ServerEngine):
        if not url.database or url.database == ":memory:":
            raise ConfigError(f"`{text}` names no database file.", hint=f"Give the file, as in {backend}:///hr.db.")
        return _open_file(url.database, settings, name)
    return _open_server(engine, url, settings, name)


def _open_file(text: str, settings: Settings, name: str | None) -> Database:
    path = Path(text).expanduser()
    engine = engines.for_file(path)
    if engine is None:
        raise ConfigError(
            f"`{text}` is neither a SQLAlchemy URL nor a {', '.join(engines.file_suffixes())} file.",
            hint="Give a file path, or a URL such as postgresql://user@host/db or mysql://root@host/db.",
        )
    if not path.is_file():
        raise ConfigError(f"database file `{text}` does not exist.", hint="Check the path.")
    return Database(engine, FilePool(engine, path.resolve()), name=name or path.stem, settings=settings)


def _open_server(engine: ServerEngine, url: Any, settings: Settings, name: str | None) -> Database:
    import sqlalchemy as sa
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    url, connect_args = engine.prepare_url(url)
    try:
        sa_engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ConfigError(f"cannot open `{url.render_as_string()}`: {exc}") from None
    pool = ServerPool(sa_engine)
    pool.release(pool.acquire())  # fail now, with a clear message, rather than at the first tool call
    return Database(engine, pool, name=name or (url.database or url.get_backend_name()), settings=settings)


def _translate(exc: Exception, timeout_s: float) -> SophrosyneError:
    message = _first_line(exc)
    lowered = message.lower()
    if any(m in lowered for m in _TIMEOUT_MARKERS):
        return QueryTimeout(
            f"the statement ran longer than the {timeout_s:g} s timeout and was stopped.",
            hint="Add filters or a LIMIT, aggregate before joining, or avoid scanning large tables whole.",
        )
    if "read-only" in lowered or "read only" in lowered or "readonly" in lowered:
        return QueryFailed(f"the database is opened read-only and refused the statement: {message}")
    return QueryFailed(message)


def _first_line(exc: BaseException | None) -> str:
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    # MySQL drivers carry (errno, message); the number means nothing to an agent.
    text = str(args[1] if len(args) == 2 and isinstance(args[0], int) else exc or "").strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["Database", "FilePool", "Pool", "QueryResult", "ServerPool", "open_database"]
