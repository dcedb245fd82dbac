"""One record per database engine: how it is opened read-only, its sessions, plans, row estimates and SQL rules."""

from __future__ import annotations

import contextlib
import math
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sophrosyne import catalog_reader
from sophrosyne.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from sophrosyne.catalog import Catalog
    from sophrosyne.connection import Database

__all__ = ["ENGINES", "Cursor", "DuckDB", "Engine", "FileEngine", "MySQL", "PostgreSQL", "SQLite", "ServerEngine"]

Row = Sequence[Any]
# Seconds a server connection may take to open before the server is called unreachable.
CONNECT_TIMEOUT_S = 5
# Seconds a new SQLite connection waits for a writer's lock before the file is called locked.
OPEN_WAIT_S = 1.0


class Cursor(Protocol):
    """The part of a DB-API cursor that sessions use (DuckDB's connection is one too)."""

    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...
    def execute(self, sql: str, /) -> Any: ...
    def fetchone(self) -> Row | None: ...
    def fetchmany(self, size: int, /) -> Sequence[Row]: ...
    def fetchall(self) -> Sequence[Row]: ...


class Engine:
    """What sets one database engine apart, the way sqlglot gives each dialect one class.

    The guard and the policy also check SQL written for sqlglot dialects Sophrosyne does not run on: such a
    dialect gets an instance of this base class, whose defaults are the cautious ones.
    """

    name: str = ""
    # Other names of the same engine: SQLAlchemy backends and URL schemes.
    aliases: ClassVar[tuple[str, ...]] = ()
    # The schema a table name may be qualified with while still naming the catalog's table.
    default_schema: ClassVar[str | None] = None
    # Whether a CTE body sees the CTEs defined after it in the same WITH (without, and with, RECURSIVE).
    ctes_see_later_siblings: ClassVar[bool] = False
    recursive_ctes_see_later_siblings: ClassVar[bool] = False
    # A role's filtered CTE must run before the query's own predicates (see policy/rewrite.py): MATERIALIZED
    # fences it where the engine honours that, a LIMIT stops merging and predicate push-down elsewhere.
    fence_materialized: ClassVar[bool] = False
    fence_limit: ClassVar[str | None] = None
    # Whether `GROUP BY t.pk` lets other columns of `t` be selected only when `t` is a base table (PostgreSQL's
    # functional dependency), so that a role's CTE for `t` needs them grouped too.
    groups_by_key_on_base_tables_only: ClassVar[bool] = False
    # Whether an unaliased computed column is named by its SQL text (so a rewrite must not change that text).
    names_columns_by_text: ClassVar[bool] = False
    # Whether inner joins of fenced CTEs are pinned to the written order (see Rewriter._join_in_written_order).
    joins_fences_in_written_order: ClassVar[bool] = False
    # The statement prefix that asks for a plan, and a plan line naming a table read whole.
    explain: ClassVar[str] = "EXPLAIN"
    full_scan: ClassVar[re.Pattern[str] | None] = None
    # Case-insensitive substring search: ILIKE where there is one, else LIKE where it ignores ASCII case.
    has_ilike: ClassVar[bool] = False
    like_ignores_ascii_case: ClassVar[bool] = False
    # Whether a table name that looks like a file is read as that file (DuckDB's replacement scans).
    reads_file_names: ClassVar[bool] = True
    # Whether a row estimate of 0 may only mean "not counted yet" (InnoDB statistics).
    zero_estimate_unknown: ClassVar[bool] = False

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    def __repr__(self) -> str:
        return f"<engine {self.name}>"

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        """A cursor inside a read-only transaction with a statement deadline; always rolled back.

        `fenced`: the statement joins fenced CTEs of a role (see policy/rewrite.py), which have no indexes
        or column statistics; engines whose planner then picks quadratic nested loops are steered off them.
        """
        raise ConfigError(f"Sophrosyne does not run on {self.name} databases.")
        yield  # pragma: no cover - makes this a generator

    def interrupt(self, raw: Any) -> None:
        """Stop the statement running on connection `raw` (called from another thread); by default, nothing."""

    def read_plan(self, columns: list[str], rows: Sequence[Row]) -> tuple[list[str], set[str]]:
        """The plan as lines of text, and the (lower-cased) tables it reads whole."""
        lines = [" ".join(str(v) for v in row if v is not None) for row in rows]
        pattern = self.full_scan
        scanned = {m.lower() for line in lines for m in pattern.findall(line)} if pattern else set()
        return lines, scanned

    def row_estimates(self, cursor: Cursor) -> dict[str, int]:
        """Row counts from the engine's statistics, by table; tables without any are left out."""
        return {}

    def index_leads(self, cursor: Cursor) -> list[tuple[str, str]] | None:
        """(table, column) for the first column of every index, primary keys included: the columns an
        equality or range can seek on. None where unknown (DuckDB scans by zone maps): no index hints there."""
        return None

    def schemas(self, cursor: Cursor) -> tuple[list[str | None], list[str]]:
        """The schemas on the search path (their tables go by plain name), then the other readable ones."""
        return [None], []

    def schema_fingerprint(self, cursor: Cursor) -> object:
        """Something cheap to read that changes whenever a table or column is added, dropped or changed."""
        return None

    def read_tables(self, db: Database) -> Catalog:
        """Tables, views, columns, keys and comments (row estimates are filled in by catalog_reader)."""
        raise ConfigError(f"Sophrosyne does not run on {self.name} databases.")


class FileEngine(Engine):
    """An engine over one local file, reached through its own DB-API driver (no SQLAlchemy: it starts fast)."""

    file_suffixes: ClassVar[tuple[str, ...]] = ()
    driver: ClassVar[str] = ""
    reads_file_names = False

    def connect(self, path: Path) -> Any:
        """A new read-only connection to the file, usable from any thread (one at a time)."""
        raise NotImplementedError

    def error(self) -> type[Exception]:
        """The driver's base error class."""
        raise NotImplementedError

    def probe(self, raw: Any) -> None:
        """Read something from a new connection, so a file that is no database fails here, not later."""


class ServerEngine(Engine):
    """An engine behind a URL, reached through SQLAlchemy's URL parsing, pool and inspector."""

    # The DB-API driver used, and the driver names of a URL that are replaced by it.
    driver: ClassVar[str] = ""
    replaced_drivers: ClassVar[tuple[str, ...]] = ()
    # URL schemes SQLAlchemy knows by another name (`postgres://`, as Heroku and libpq write it).
    backend_names: ClassVar[dict[str, str]] = {}
    reads_file_names = False

    def prepare_url(self, url: URL) -> tuple[URL, dict[str, Any]]:
        """The URL to connect with (the driver chosen) and the driver's connect arguments."""
        scheme, _, driver = url.drivername.partition("+")
        backend = self.backend_names.get(scheme.lower(), scheme)
        if not driver or driver in self.replaced_drivers:
            driver = self.driver
        if f"{backend}+{driver}" != url.drivername:
            url = url.set(drivername=f"{backend}+{driver}")
        return url, {}

    def read_tables(self, db: Database) -> Catalog:
        return catalog_reader.read_inspected(db)


class SQLite(FileEngine):
    name = "sqlite"
    file_suffixes = (".sqlite", ".sqlite3", ".db")
    driver = "sqlite3"
    default_schema = "main"
    ctes_see_later_siblings = True
    recursive_ctes_see_later_siblings = True
    fence_materialized = True
    # A LIMIT also stops SQLite pushing the query's conditions down into the CTE.
    fence_limit = "-1"
    names_columns_by_text = True
    explain = "EXPLAIN QUERY PLAN"
    # The rewrite pins a role's tables as main.<table>: the schema is skipped.
    full_scan = re.compile(r"(?:^|\s)SCAN (?:TABLE )?(?:main\.)?\"?(\w+)")
    like_ignores_ascii_case = True

    def connect(self, path: Path) -> Any:
        # mode=ro makes SQLite itself refuse writes; query_only is a second lock on the same door.
        # A file locked by a writer is waited for briefly on opening; a session waits as long as its deadline.
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False, timeout=OPEN_WAIT_S)
        conn.execute("PRAGMA query_only = 1")
        # ATTACH and VACUUM INTO create files even on a read-only connection: allow no attached database.
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        # SQLite's own LOWER folds ASCII only; agents search names such as 'École' too.
        conn.create_function("lower", 1, _unicode_lower, deterministic=True)
        # REGEXP and floor() as SQLAlchemy's SQLite driver provided them, which queries written here rely on.
        conn.create_function("regexp", 2, _regexp, deterministic=True)
        conn.create_function("floor", 1, _floor, deterministic=True)
        return conn

    def error(self) -> type[Exception]:
        return sqlite3.Error

    def interrupt(self, raw: Any) -> None:
        raw.interrupt()  # thread-safe: the running statement ends with "interrupted"

    def probe(self, raw: Any) -> None:
        raw.execute("PRAGMA schema_version").fetchone()  # reads the header: "file is not a database"

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        deadline = time.monotonic() + timeout_s
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        raw.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
        cursor = raw.cursor()
        try:
            yield cursor
        finally:
            cursor.close()
            raw.set_progress_handler(None, 0)
            raw.rollback()

    def row_estimates(self, cursor: Cursor) -> dict[str, int]:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
        if cursor.fetchone() is None:
            return {}
        cursor.execute("SELECT tbl, stat FROM sqlite_stat1")
        estimates: dict[str, int] = {}
        for table, stat in cursor.fetchall():
            head = str(stat or "").split(" ")[0]
            if head.isdigit():
                estimates[table] = max(estimates.get(table, 0), int(head))
        return estimates

    def index_leads(self, cursor: Cursor) -> list[tuple[str, str]] | None:
        cursor.execute(
            "SELECT m.name, ii.name FROM sqlite_master AS m, pragma_index_list(m.name) AS il, "
            "pragma_index_info(il.name) AS ii WHERE m.type = 'table' AND ii.seqno = 0"
        )
        leads = [(str(t), str(c)) for t, c in cursor.fetchall()]
        # An INTEGER PRIMARY KEY is the rowid itself, with no index of its own.
        cursor.execute(
            "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
            "WHERE m.type = 'table' AND p.pk = 1"
        )
        return leads + [(str(t), str(c)) for t, c in cursor.fetchall()]

    def schema_fingerprint(self, cursor: Cursor) -> object:
        cursor.execute("PRAGMA schema_version")  # bumped by SQLite on every schema change
        return tuple(cursor.fetchone() or ())

    def read_tables(self, db: Database) -> Catalog:
        return catalog_reader.read_sqlite(db)


class DuckDB(FileEngine):
    name = "duckdb"
    file_suffixes = (".duckdb",)
    driver = "duckdb"
    default_schema = "main"
    fence_materialized = True
    has_ilike = True
    reads_file_names = True

    def connect(self, path: Path) -> Any:
        import duckdb

        # No files, network or extensions, and no Python variables standing in for tables.
        config: dict[str, str | bool | int | float | list[str]] = {
            "enable_external_access": False,
            "python_enable_replacements": False,
        }
        if "?" not in str(path):
            return duckdb.connect(str(path), read_only=True, config=config)
        # DuckDB names the write-ahead log of `a?b` as `a.wal?b`, a path outside the database, which it may
        # not open without external access: the access is closed right after opening (and cannot be opened
        # again while the database runs), before any statement.
        del config["enable_external_access"]
        conn = duckdb.connect(str(path), read_only=True, config=config)
        conn.execute("SET enable_external_access = false")
        return conn

    def error(self) -> type[Exception]:
        import duckdb

        return duckdb.Error

    def interrupt(self, raw: Any) -> None:
        raw.interrupt()

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        import duckdb

        timer = threading.Timer(timeout_s, raw.interrupt)
        timer.daemon = True
        timer.start()
        try:
            # The connection is its own cursor: cursor() would open another connection, which interrupt()
            # does not reach.
            yield raw
        finally:
            timer.cancel()
            # No transaction is open in the usual case: statements here commit themselves.
            with contextlib.suppress(duckdb.TransactionException):
                raw.rollback()

    def read_plan(self, columns: list[str], rows: Sequence[Row]) -> tuple[list[str], set[str]]:
        lines = [line for row in rows for line in str(row[-1]).splitlines() if line.strip()]
        text = "\n".join(lines)
        scanned: set[str] = set()
        if "Seq Scan" in text or "SEQ_SCAN" in text:
            scanned = {m.split(".")[-1].lower() for m in re.findall(r"Table: ([^\s│]+)", text)}
        return lines, scanned

    def schema_fingerprint(self, cursor: Cursor) -> object:
        cursor.execute(
            "SELECT count(*), sum(hash(schema_name || '.' || table_name || '.' || column_name || ':' || data_type)) "
            "FROM duckdb_columns() WHERE database_name = current_database()"
        )
        return tuple(cursor.fetchone() or ())

    def read_tables(self, db: Database) -> Catalog:
        # Row estimates come with the tables: DuckDB keeps them in its own catalog.
        return catalog_reader.read_duckdb(db)


class PostgreSQL(ServerEngine):
    name = "postgres"
    aliases = ("postgresql",)
    driver = "psycopg"
    replaced_drivers = ("psycopg2", "postgresql")
    backend_names: ClassVar[dict[str, str]] = {"postgres": "postgresql"}
    default_schema = "public"
    recursive_ctes_see_later_siblings = True
    fence_materialized = True
    groups_by_key_on_base_tables_only = True
    full_scan = re.compile(r"Seq Scan on \"?(\w+)")
    has_ilike = True

    def prepare_url(self, url: URL) -> tuple[URL, dict[str, Any]]:
        url, connect_args = super().prepare_url(url)
        # Every transaction of these sessions starts read-only, even one begun after a stray COMMIT.
        # Options given in the URL (a search_path, say) are kept beside it.
        given = url.query.get("options")
        extra = given if isinstance(given, str) else " ".join(given or ())
        connect_args["options"] = f"{extra} -c default_transaction_read_only=on".strip()
        if "connect_timeout" not in url.query:
            connect_args["connect_timeout"] = CONNECT_TIMEOUT_S  # an unreachable host fails in seconds
        return url.difference_update_query(["options"]), connect_args

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        cursor = raw.cursor()
        try:
            # Settings local to this transaction, in one round trip: read-only (as SET TRANSACTION READ ONLY;
            # the connection's default already is) and the statement deadline.
            settings = {"transaction_read_only": "on", "statement_timeout": str(int(timeout_s * 1000))}
            if fenced:
                # A MATERIALIZED CTE has no statistics: an equality on it is guessed to keep 0.5% of the rows,
                # and the planner then rescans one CTE per row of another (1.3 s against 9 ms on BIRD's
                # toxicology). Without nested loops it hashes; where nothing else works it still nests, at a
                # cost so high that JIT compilation would start (0.45 s): JIT is off for these statements.
                settings |= {"enable_nestloop": "off", "jit": "off"}
            cursor.execute("SELECT " + ", ".join(f"set_config('{k}', '{v}', true)" for k, v in settings.items()))
            yield cursor
        finally:
            cursor.close()
            raw.rollback()

    def interrupt(self, raw: Any) -> None:
        # The server's own cancel request, on a connection of its own: the session's stays busy meanwhile.
        raw.driver_connection.cancel_safe(timeout=3.0)

    def row_estimates(self, cursor: Cursor) -> dict[str, int]:
        # Tables of the current schema by name, the others as schema.name (as the catalog names them).
        cursor.execute(
            "SELECT CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END, "
            "c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE {_PG_USER_SCHEMAS} AND c.relkind IN ('r', 'p', 'm')"
        )
        return {name: int(n) for name, n in cursor.fetchall() if n is not None and n >= 0}

    def index_leads(self, cursor: Cursor) -> list[tuple[str, str]] | None:
        cursor.execute(
            "SELECT c.relname, a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] "
            "WHERE n.nspname = current_schema()"
        )
        return [(str(t), str(c)) for t, c in cursor.fetchall()]

    def schemas(self, cursor: Cursor) -> tuple[list[str | None], list[str]]:
        cursor.execute("SELECT current_schemas(false)")
        row = cursor.fetchone()
        path: list[str | None] = list(row[0]) if row and row[0] else []
        cursor.execute(
            f"SELECT n.nspname FROM pg_namespace n WHERE {_PG_USER_SCHEMAS} "
            "AND has_schema_privilege(n.oid, 'USAGE') ORDER BY n.nspname"
        )
        return path, [name for (name,) in cursor.fetchall() if name not in path]

    def schema_fingerprint(self, cursor: Cursor) -> object:
        # One pass over the columns of user tables: a new, dropped or renamed table or column, or a changed
        # type, changes the sum; statistics and data do not.
        cursor.execute(
            "SELECT count(*), sum(hashtext(n.nspname || '.' || c.relname || '.' || a.attname || ':' "
            "|| a.atttypid::text)) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE {_PG_USER_SCHEMAS} AND a.attnum > 0 AND NOT a.attisdropped "
            "AND c.relkind IN ('r', 'v', 'm', 'p', 'f')"
        )
        return tuple(cursor.fetchone() or ())


class MySQL(ServerEngine):
    """MySQL and MariaDB: one SQL dialect, two names for the statement deadline."""

    name = "mysql"
    aliases = ("mariadb",)
    driver = "pymysql"
    replaced_drivers = ("mysqldb", "mysql", "mariadb")
    # The largest LIMIT there is: it keeps every row yet stops the CTE being merged into the query.
    fence_limit = "18446744073709551615"
    joins_fences_in_written_order = True
    names_columns_by_text = True
    zero_estimate_unknown = True

    def prepare_url(self, url: URL) -> tuple[URL, dict[str, Any]]:
        url, connect_args = super().prepare_url(url)
        if "connect_timeout" not in url.query:
            connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
        return url, connect_args

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        cursor = raw.cursor()
        mariadb = "mariadb" in str(getattr(cursor.connection, "server_version", "")).lower()
        variable = "max_statement_time" if mariadb else "max_execution_time"
        # MariaDB joins LIMIT-fenced derived tables, which have no keys, by block nested loops under its
        # default join_cache_level 2 (a three-table join: 210 s against 0.4 s direct); level 4 hashes them.
        # MySQL 8 hashes such joins by itself and has no such variable.
        hashed = fenced and mariadb
        try:
            deadline = f"{timeout_s:.3f}" if mariadb else str(int(timeout_s * 1000))  # seconds vs milliseconds
            cursor.execute(f"SET SESSION {variable} = {deadline}")
            if hashed:
                cursor.execute("SET SESSION join_cache_level = 4")
            # DDL commits implicitly in MySQL; a read-only session default still refuses it after that.
            cursor.execute("SET SESSION TRANSACTION READ ONLY")
            cursor.execute("START TRANSACTION READ ONLY")
            yield cursor
        finally:
            try:
                raw.rollback()
                # Session variables outlive the session on a pooled connection: give the deadline back.
                cursor.execute(f"SET SESSION {variable} = 0")
                if hashed:
                    cursor.execute("SET SESSION join_cache_level = DEFAULT")
            finally:
                cursor.close()

    def interrupt(self, raw: Any) -> None:
        import pymysql

        # MySQL stops a statement only when asked from another connection, by the thread id of the first.
        busy = raw.driver_connection
        killer = pymysql.connect(
            host=busy.host, port=busy.port, user=busy.user, password=busy.password, connect_timeout=3
        )
        try:
            with killer.cursor() as cursor:
                cursor.execute(f"KILL QUERY {int(busy.thread_id())}")
        finally:
            killer.close()

    def read_plan(self, columns: list[str], rows: Sequence[Row]) -> tuple[list[str], set[str]]:
        lines, scanned = super().read_plan(columns, rows)
        if "table" in columns and "type" in columns:
            i, j = columns.index("table"), columns.index("type")
            scanned = {str(row[i]).lower() for row in rows if str(row[j]).upper() == "ALL"}
        return lines, scanned

    def row_estimates(self, cursor: Cursor) -> dict[str, int]:
        cursor.execute("SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = DATABASE()")
        return {name: int(n) for name, n in cursor.fetchall() if n is not None}

    def index_leads(self, cursor: Cursor) -> list[tuple[str, str]] | None:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.statistics "
            "WHERE table_schema = DATABASE() AND seq_in_index = 1"
        )
        return [(str(t), str(c)) for t, c in cursor.fetchall()]

    def schema_fingerprint(self, cursor: Cursor) -> object:
        cursor.execute(
            "SELECT COUNT(*), SUM(CRC32(CONCAT_WS('.', table_name, column_name, column_type))) "
            "FROM information_schema.columns WHERE table_schema = DATABASE()"
        )
        return tuple(cursor.fetchone() or ())


# The schemas of PostgreSQL's own catalogs; every other schema holds user tables.
_PG_USER_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"

ENGINES: tuple[Engine, ...] = (SQLite(), DuckDB(), PostgreSQL(), MySQL())
_NAMED = {name: engine for engine in ENGINES for name in (engine.name, *engine.aliases)}


def named(name: str) -> Engine | None:
    """The engine Sophrosyne runs on under this name or alias (case-insensitive), or None."""
    return _NAMED.get(name.lower())


@lru_cache(maxsize=64)
def for_dialect(dialect: str) -> Engine:
    """The record of a sqlglot dialect: an engine's own, or the cautious defaults for any other dialect."""
    return named(dialect) or Engine(dialect.lower())


def for_file(path: Path) -> FileEngine | None:
    """The file engine that opens files with this suffix, or None."""
    suffix = path.suffix.lower()
    return next((e for e in ENGINES if isinstance(e, FileEngine) and suffix in e.file_suffixes), None)


def file_suffixes() -> list[str]:
    return [s for e in ENGINES if isinstance(e, FileEngine) for s in e.file_suffixes]


def _unicode_lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _regexp(pattern: str, value: str | None) -> bool | None:
    return None if value is None else re.search(pattern, value) is not None


def _floor(value: Any) -> Any:
    return None if value is None else math.floor(value)
