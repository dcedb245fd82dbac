"""SQLAlchemy engines per dialect, opened read-only, with a per-statement timeout and a row cap."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

from sophrosyne.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.errors import ConfigError, ConnectionFailed, QueryFailed, QueryTimeout
from sophrosyne.settings import Settings

FILE_SUFFIXES = {".sqlite": "sqlite", ".sqlite3": "sqlite", ".db": "sqlite", ".duckdb": "duckdb"}
# SQLAlchemy backend name -> sqlglot dialect name.
DIALECTS = {
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
}


@dataclass
class QueryResult:
    """Rows of one statement, capped; `truncated` says the engine had more."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    elapsed_ms: float


class Database:
    """One database, reached only through read-only sessions."""

    def __init__(self, engine: Engine, *, name: str, settings: Settings) -> None:
        self.engine = engine
        self.name = name
        self.settings = settings
        self.backend = engine.dialect.name
        self.dialect = DIALECTS[self.backend]
        self._catalog: Catalog | None = None
        self._lock = threading.Lock()

    @property
    def is_mariadb(self) -> bool:
        # SQLAlchemy learns this on the first connection, so ask late.
        return bool(getattr(self.engine.dialect, "is_mariadb", False))

    @property
    def display_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def catalog(self) -> Catalog:
        """The catalog, read once and kept: schema reads are slow on large databases."""
        with self._lock:
            if self._catalog is None:
                from sophrosyne.catalog import read_catalog

                self._catalog = read_catalog(self)
            return self._catalog

    def refresh_catalog(self) -> Catalog:
        with self._lock:
            self._catalog = None
        return self.catalog()

    def run(self, sql: str, *, limit: int | None = None, timeout_s: float | None = None) -> QueryResult:
        """Run one statement in a read-only session; fetch at most `limit` rows."""
        timeout = timeout_s if timeout_s is not None else self.settings.timeout_s
        started = time.perf_counter()
        with self.session(timeout) as conn:
            try:
                result = conn.exec_driver_sql(self._literal(sql))
                columns = list(result.keys()) if result.returns_rows else []
                if not result.returns_rows:
                    rows, truncated = [], False
                elif limit is None:
                    rows = [tuple(r) for r in result.fetchall()]
                    truncated = False
                else:
                    fetched = result.fetchmany(limit + 1)
                    truncated = len(fetched) > limit
                    rows = [tuple(r) for r in fetched[:limit]]
            except DBAPIError as exc:
                raise self._translate(exc, timeout) from None
        return QueryResult(columns, rows, truncated, (time.perf_counter() - started) * 1000)

    @contextmanager
    def session(self, timeout_s: float) -> Iterator[Connection]:
        """A connection inside a read-only transaction with a statement deadline; always rolled back."""
        try:
            conn = self.engine.connect()
        except DBAPIError as exc:
            raise ConnectionFailed(
                f"cannot connect to {self.display_url}: {_first_line(exc.orig)}",
                hint="Check that the server runs and that the URL, user and database are right.",
            ) from None
        timer: threading.Timer | None = None
        try:
            raw = conn.connection.driver_connection
            if self.backend == "sqlite":
                deadline = time.monotonic() + timeout_s
                raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)  # type: ignore[union-attr]
            elif self.backend == "duckdb":
                timer = threading.Timer(timeout_s, raw.interrupt)  # type: ignore[union-attr]
                timer.daemon = True
                timer.start()
            elif self.backend == "postgresql":
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")
            elif self.backend in ("mysql", "mariadb"):
                if self.is_mariadb:
                    conn.exec_driver_sql(f"SET SESSION max_statement_time = {timeout_s:.3f}")
                else:
                    conn.exec_driver_sql(f"SET SESSION max_execution_time = {int(timeout_s * 1000)}")
                # DDL commits implicitly in MySQL; a read-only session default still refuses it after that.
                conn.exec_driver_sql("SET SESSION TRANSACTION READ ONLY")
                conn.exec_driver_sql("START TRANSACTION READ ONLY")
            yield conn
        finally:
            if timer is not None:
                timer.cancel()
            if self.backend == "sqlite":
                conn.connection.driver_connection.set_progress_handler(None, 0)  # type: ignore[union-attr]
            try:
                conn.rollback()
                if self.backend in ("mysql", "mariadb"):
                    # Session variables outlive the session on a pooled connection: give the deadline back.
                    variable = "max_statement_time" if self.is_mariadb else "max_execution_time"
                    conn.exec_driver_sql(f"SET SESSION {variable} = 0")
            finally:
                conn.close()

    def _literal(self, sql: str) -> str:
        # SQLAlchemy hands the driver an empty parameter set, so "format" drivers read `%` as a parameter marker.
        if self.engine.dialect.paramstyle in ("format", "pyformat"):
            return sql.replace("%", "%%")
        return sql

    def _translate(self, exc: DBAPIError, timeout_s: float) -> Exception:
        message = _first_line(exc.orig)
        lowered = message.lower()
        timeout_markers = (
            "interrupted",
            "statement timeout",
            "canceling statement",
            "max_execution_time",
            "max_statement_time",
            "query execution was interrupted",
        )
        if any(m in lowered for m in timeout_markers):
            return QueryTimeout(
                f"the statement ran longer than the {timeout_s:g} s timeout and was stopped.",
                hint="Add filters or a LIMIT, aggregate before joining, or avoid scanning large tables whole.",
            )
        if "read-only" in lowered or "read only" in lowered or "readonly" in lowered:
            return QueryFailed(f"the database is opened read-only and refused the statement: {message}")
        return QueryFailed(message)

    def close(self) -> None:
        self.engine.dispose()


def open_database(target: str | Path, settings: Settings | None = None, *, name: str | None = None) -> Database:
    """Open a database from a SQLAlchemy URL or a path to a .sqlite/.db/.duckdb file, read-only."""
    settings = settings or Settings()
    text = str(target)
    path = Path(text).expanduser()
    if "://" not in text:
        suffix = path.suffix.lower()
        if suffix not in FILE_SUFFIXES:
            raise ConfigError(
                f"`{text}` is neither a SQLAlchemy URL nor a .sqlite, .sqlite3, .db or .duckdb file.",
                hint="Give a file path, or a URL such as postgresql://user@host/db or mysql://root@host/db.",
            )
        if not path.is_file():
            raise ConfigError(f"database file `{text}` does not exist.", hint="Check the path.")
        engine = _file_engine(path.resolve(), FILE_SUFFIXES[suffix])
        return Database(engine, name=name or path.stem, settings=settings)
    try:
        url = make_url(text)
    except ArgumentError:
        raise ConfigError(f"`{text}` is not a valid SQLAlchemy URL.") from None
    backend = url.get_backend_name()
    if backend not in DIALECTS:
        raise ConfigError(
            f"the `{backend}` engine is not supported.",
            hint="Use sqlite, duckdb, postgresql or mysql/mariadb URLs.",
        )
    if backend == "postgresql" and url.get_driver_name() in ("psycopg2", "postgresql"):
        url = url.set(drivername="postgresql+psycopg")
    if backend in ("mysql", "mariadb") and url.get_driver_name() in ("mysqldb", "mysql", "mariadb"):
        url = url.set(drivername=f"{backend}+pymysql")
    if backend in ("sqlite", "duckdb") and url.database and url.database != ":memory:":
        return open_database(url.database, settings, name=name)
    connect_args: dict[str, Any] = {}
    if backend == "postgresql":
        # Every transaction of these sessions starts read-only, even one begun after a stray COMMIT.
        # Options given in the URL (a search_path, say) are kept beside it.
        given = url.query.get("options")
        extra = given if isinstance(given, str) else " ".join(given or ())
        connect_args["options"] = f"{extra} -c default_transaction_read_only=on".strip()
        url = url.difference_update_query(["options"])
    try:
        engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ConfigError(f"cannot open `{url.render_as_string()}`: {exc}") from None
    database = Database(engine, name=name or (url.database or backend), settings=settings)
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        raise ConnectionFailed(
            f"cannot connect to {database.display_url}: {_first_line(exc.orig)}",
            hint="Check that the server runs and that the URL, user and database are right.",
        ) from None
    return database


def _file_engine(path: Path, kind: str) -> Engine:
    if kind == "duckdb":
        # No files, network or extensions, and no Python variables standing in for tables.
        duck = sa.create_engine(
            f"duckdb:///{path}",
            connect_args={"read_only": True, "config": {"enable_external_access": False}},
        )

        @sa.event.listens_for(duck, "connect")
        def _no_replacements(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.execute("SET python_enable_replacements = false")

        return duck
    # mode=ro makes SQLite itself refuse writes; query_only is a second lock on the same door.
    engine = sa.create_engine(f"sqlite:///file:{path}?mode=ro&uri=true", connect_args={"check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _read_only(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute("PRAGMA query_only = 1")
        # ATTACH and VACUUM INTO create files even on a read-only connection: allow no attached database.
        dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        # SQLite's own LOWER folds ASCII only; agents search names such as 'École' too.
        dbapi_conn.create_function("lower", 1, _unicode_lower, deterministic=True)

    return engine


def _unicode_lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _first_line(exc: BaseException | None) -> str:
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    # MySQL drivers carry (errno, message); the number means nothing to an agent.
    text = str(args[1] if len(args) == 2 and isinstance(args[0], int) else exc or "").strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["Catalog", "Column", "Database", "ForeignKey", "QueryResult", "Table", "open_database"]
