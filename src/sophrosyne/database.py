"""Databases opened read-only: pooled connections, sessions with a per-statement timeout, and a row cap."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sophrosyne import engines
from sophrosyne.base import deadline
from sophrosyne.engines.catalogs import read_catalog
from sophrosyne.engines.pools import CONNECT_HINT, FilePool, Pool, first_line, open_server_pool
from sophrosyne.engines.reading import Read, read_rows
from sophrosyne.errors import (
    CallCancelled,
    ConfigError,
    ConnectionFailed,
    QueryFailed,
    QueryTimeout,
    SophrosyneError,
)
from sophrosyne.schema.live import LiveCatalog
from sophrosyne.settings import Settings

if TYPE_CHECKING:
    from sophrosyne.engines import Cursor, Engine, Row, ServerEngine
    from sophrosyne.engines.ssh import SSH
    from sophrosyne.engines.tls import TLS
    from sophrosyne.schema.catalog import Catalog

# Words in an engine's message that mean the statement was stopped by its deadline.
_TIMEOUT_MARKERS = (
    "interrupted",
    "statement timeout",
    "canceling statement",
    "max_execution_time",
    "max_statement_time",
    "query execution was interrupted",
)
logger = logging.getLogger("sophrosyne.database")


@dataclass
class QueryResult:
    """Rows of one statement, capped; `truncated` says the engine had more; `cut` says what was cut as the
    rows were read (long values, or rows past the memory bound), in a sentence for the response."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    elapsed_ms: float
    cut: str | None = None


class Database:
    """One database, reached only through read-only sessions."""

    def __init__(self, engine: Engine, pool: Pool, *, name: str, settings: Settings) -> None:
        self.engine = engine
        self.pool = pool
        self.name = name
        self.settings = settings
        self.closed = False
        self._live = LiveCatalog(
            name,
            self._read_catalog,
            fingerprint=self.fingerprint,
            moved=self.file_moved,
            check_every_s=settings.reading.schema_check_s,
        )
        self._index_leads: dict[str, set[str]] | None = None
        self._index_leads_read = False

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
        """The catalog, read in the background and kept current (see schema/live.py)."""
        return self._live.get()

    @property
    def catalog_ready(self) -> bool:
        return self._live.ready

    def start_reading_catalog(self) -> None:
        """Read the schema now, in the background, so that the first call finds it ready."""
        self._live.start()

    def index_leads(self) -> dict[str, set[str]] | None:
        """Lower-cased table -> lower-cased first columns of its indexes, read once (for performance hints);
        None where the engine does not say."""
        if not self._index_leads_read:
            try:
                with self.session(self.settings.limits.timeout_s) as cursor:
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
        return self._live.refresh()

    def _read_catalog(self) -> Catalog:
        """The schema, as the engine reads it; a database that cannot be reached says so as on a direct
        connection, not as the driver's exception (a source of a sources file or `serve` is read here first)."""
        source = engines.CatalogSource(
            session=self.session,
            run=self._first_row,
            dialect=self.dialect,
            timeout_s=self.settings.limits.timeout_s,
            schemas=self.settings.reading.schemas,
            exact_count_rows=self.settings.reading.exact_count_rows,
            server=self.pool.server,
        )
        try:
            return read_catalog(self.engine, source)
        except ConnectionFailed as exc:
            raise ConnectionFailed(f"source `{self.name}`: {exc.message}", hint=exc.hint) from None
        except Exception as exc:
            # Only SQLAlchemy raises its DBAPIError, and a file's pool never loads it: importing it here to
            # catch it would cost a file's first reading half a second.
            loaded = sys.modules.get("sqlalchemy.exc")
            if loaded is None or not isinstance(exc, loaded.DBAPIError):
                raise
            said = str(exc.orig or exc).strip().splitlines()
            raise ConnectionFailed(
                f"cannot read the schema of `{self.name}` ({self.display_url}): "
                f"{said[0] if said else type(exc).__name__}",
                hint=CONNECT_HINT,
            ) from None

    def _first_row(self, sql: str) -> Sequence[Row]:
        return self.run(sql, limit=1).rows

    def file_moved(self) -> bool:
        """For a file: whether it was replaced since the pool last looked (ConnectionFailed if it is gone)."""
        check = getattr(self.pool, "replaced", None)
        return bool(check()) if check is not None else False

    def fingerprint(self, timeout_s: float) -> object:
        """What identifies the schema now: the file's identity (for a file) and the engine's fingerprint."""
        with self.session(timeout_s) as cursor:
            # The pool checked the file as it handed out this connection: its identity is the current one.
            fingerprint = self.engine.schema_fingerprint(cursor, self.settings.reading.schemas)
            return (getattr(self.pool, "identity", None), fingerprint)

    def run(
        self,
        sql: str,
        *,
        limit: int | None = None,
        timeout_s: float | None = None,
        fenced: bool = False,
        values: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Run one statement in a read-only session; fetch at most `limit` rows. `fenced`: see Engine.session;
        `values`: the statement's parameters, bound by the driver (Engine.reading).

        The statement gets what is left of the call's deadline, if less than its own timeout."""
        started = time.perf_counter()
        with self.streaming(sql, timeout_s=timeout_s, fenced=fenced, values=values) as (columns, results):
            # Rows a few at a time, long values cut as they arrive: the memory a result holds is bounded too.
            read = (
                read_rows(
                    results,
                    limit,
                    value_chars=self.settings.limits.read_value_chars,
                    result_bytes=self.settings.limits.read_result_bytes,
                )
                if columns
                else Read([], False)
            )
        elapsed = (time.perf_counter() - started) * 1000
        logger.debug("%s: %d rows in %.1f ms: %.200s", self.name, len(read.rows), elapsed, sql)
        return QueryResult(columns, read.rows, read.more, elapsed, read.note())

    @contextmanager
    def streaming(
        self,
        sql: str,
        *,
        timeout_s: float | None = None,
        fenced: bool = False,
        values: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[list[str], Cursor]]:
        """Run one statement in a read-only session: its column names (none for a statement without rows) and
        the cursor its rows are read from, as few at a time as asked, while the block runs. The engine's
        errors, raised as rows are read too, are translated; the statement gets what is left of the call's
        deadline, if less than its own timeout (`timeout_s`, default the setting)."""
        deadline.check("the statement")
        timeout = deadline.remaining(timeout_s if timeout_s is not None else self.settings.limits.timeout_s)
        with (
            self.session(timeout, fenced=fenced) as cursor,
            self.engine.reading(cursor, sql, time.monotonic() + timeout, values) as results,
        ):
            description = results.description
            yield [str(d[0]) for d in description] if description else [], results

    @contextmanager
    def session(self, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        """A cursor inside a read-only transaction with a statement deadline; the engine's errors are translated."""
        if self.closed:
            # A background reading (the schema, an index) that outlived its database opens nothing new.
            raise ConnectionFailed(f"{self.name} was closed.", hint="Open the database again.")
        raw = self.pool.acquire()
        running = deadline.current()
        try:
            if running is None:
                with self.engine.session(raw, timeout_s, fenced=fenced) as cursor:
                    yield cursor
            else:
                with (
                    running.interruptible(lambda: self.engine.interrupt(raw)),
                    self.engine.session(raw, timeout_s, fenced=fenced) as cursor,
                ):
                    yield cursor
        except self.pool.errors as exc:
            if running is not None and running.cancelled:
                raise CallCancelled("the call was cancelled by its client; its statement was stopped.") from None
            # The limit the caller knows: the call's, when the statement ran out of the call's time.
            limit = running.seconds if running is not None and running.expired else timeout_s
            raise _translate(exc, limit) from None
        finally:
            if self.closed:
                # Closed meanwhile: the connection is shut, not handed back to a pool that is gone.
                discard = getattr(raw, "invalidate", None) or raw.close
                discard()
            else:
                self.pool.release(raw)

    def close(self) -> None:
        self.closed = True
        self.pool.close()


DEMO = "demo"


def demo_path() -> Path:
    """The embedded HR demo database."""
    from importlib import resources

    return Path(str(resources.files("sophrosyne") / "data" / "demo.sqlite"))


def open_database(
    target: str | Path,
    settings: Settings | None = None,
    *,
    name: str | None = None,
    probe: bool = True,
    tls: TLS | None = None,
    ssh: SSH | None = None,
) -> Database:
    """Open a database from a SQLAlchemy URL, a path to a .sqlite/.db/.duckdb file, or `demo`, read-only.

    A path is opened exactly as given (`#`, `?` and spaces are part of the name). With `probe` a first
    connection is made now, so a bad target fails here with its reason; a server skips it and reports the
    reason on each call until the target works (a file locked at start-up, a server still starting). `tls`: a
    source's TLS options (engines/tls.py), for a server only; they override the URL's own. `ssh`: the SSH server
    the database server is reached through (engines/ssh.py), with the URL's host and port as that server sees
    them."""
    settings = settings or Settings()
    text = str(target)
    if text == DEMO:
        return _open_file(str(demo_path()), settings, name or DEMO, probe)
    if "://" not in text:
        _no_tls(tls or ssh, text)
        return _open_file(text, settings, name, probe)
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
        _no_tls(tls or ssh, text)
        return _open_file(url.database, settings, name, probe)
    return _open_server(engine, url, settings, name, probe, tls, ssh)


def _no_tls(options: object, target: str) -> None:
    if options is not None:
        raise ConfigError(f"`{target}` is a database file: `tls` and `ssh` sections are for a server's URL.")


def _open_file(text: str, settings: Settings, name: str | None, probe: bool) -> Database:
    path = Path(text).expanduser()
    engine = engines.for_file(path)
    if engine is None:
        raise ConfigError(
            f"`{text}` is neither a SQLAlchemy URL nor a {', '.join(engines.file_suffixes())} file.",
            hint="Give a file path, or a URL such as postgresql://user@host/db or mysql://root@host/db.",
        )
    if path.is_dir():
        raise ConfigError(f"`{text}` is a folder, not a database file.", hint="Give the database file in it.")
    if not path.exists():
        raise ConfigError(f"database file `{text}` does not exist.", hint="Check the path.")
    pool = FilePool(engine, path.resolve())
    if probe:
        pool.release(pool.acquire())
    return Database(engine, pool, name=name or path.stem, settings=settings)


def _open_server(
    engine: ServerEngine,
    url: Any,
    settings: Settings,
    name: str | None,
    probe: bool,
    tls: TLS | None,
    ssh: SSH | None,
) -> Database:
    pool = open_server_pool(engine, url, settings.limits, probe=probe, tls=tls, ssh=ssh)
    return Database(engine, pool, name=name or (url.database or url.get_backend_name()), settings=settings)


def _translate(exc: Exception, timeout_s: float) -> SophrosyneError:
    message = first_line(exc)
    lowered = message.lower()
    if any(m in lowered for m in _TIMEOUT_MARKERS):
        return QueryTimeout(
            f"the statement ran longer than the {timeout_s:g} s timeout and was stopped.",
            hint="Add filters or a LIMIT, aggregate before joining, or avoid scanning large tables whole.",
        )
    if "out of memory" in lowered:  # DuckDB past its process's cap (engines/duckdb_process.py), for one
        return QueryFailed(
            "the statement needed more memory than one statement may hold and was stopped; its message:",
            quoted=message,
            hint="Select shorter values (e.g. substr()) or fewer rows, filter first, or aggregate before joining.",
        )
    # The engine's words may quote data (`invalid input syntax for type integer: "…"`): they are its, not ours.
    if "read-only" in lowered or "read only" in lowered or "readonly" in lowered:
        return QueryFailed("the database is opened read-only and refused the statement; its message:", quoted=message)
    return QueryFailed("the database failed the statement; its message:", quoted=message)


__all__ = ["Database", "QueryResult", "open_database"]
