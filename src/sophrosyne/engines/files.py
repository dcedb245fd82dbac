"""The engines over a local file, on their own DB-API drivers: SQLite and DuckDB."""

from __future__ import annotations

import contextlib
import math
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sophrosyne.base import patterns
from sophrosyne.engines import catalog_reader
from sophrosyne.engines.base import OPEN_WAIT_S, Cursor, FileEngine, Row

if TYPE_CHECKING:
    from sophrosyne.database import Database
    from sophrosyne.schema.catalog import Catalog


# The longest string or blob SQLite builds or reads in a session ("string or blob too big" past it).
LONGEST_VALUE_BYTES = 64 << 20


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
    # Values of different types compare by SQLite's type order: nothing is converted, nothing fails.
    compares_without_failing = True
    names_columns_by_text = True
    explain = "EXPLAIN QUERY PLAN"
    # The rewrite pins a role's tables as main.<table>: the schema is skipped.
    full_scan = re.compile(r"(?:^|\s)SCAN (?:TABLE )?(?:main\.)?\"?(\w+)")
    like_ignores_ascii_case = True

    def connect(self, path: Path) -> Any:
        # mode=ro makes SQLite itself refuse writes; query_only is a second lock on the same door.
        # A file locked by a writer is waited for briefly on opening; a session waits as long as its deadline.
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False, timeout=OPEN_WAIT_S, factory=_Connection
        )
        conn.execute("PRAGMA query_only = 1")
        # ATTACH and VACUUM INTO create files even on a read-only connection: allow no attached database.
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        # No single string or blob past this, built by a statement or read from the file: one value of
        # printf('%.*c', 900000000, 'x') would otherwise hold a gigabyte before a row is handed over.
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LONGEST_VALUE_BYTES)
        # SQLite's own LOWER folds ASCII only; agents search names such as 'École' too.
        conn.create_function("lower", 1, _unicode_lower, deterministic=True)
        # REGEXP and floor() as SQLAlchemy's SQLite driver provided them, which queries written here rely on;
        # REGEXP on RE2, in time linear in the value (see patterns.py).
        conn.create_function("regexp", 2, conn.regexp, deterministic=True)
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
        raw.refused_pattern = None
        try:
            yield cursor
        except sqlite3.OperationalError:
            if raw.refused_pattern is None:
                raise
            # SQLite says only "user-defined function raised exception": say which pattern, and why.
            raise sqlite3.OperationalError(f"REGEXP {raw.refused_pattern}") from None
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
    names_columns_by_rendering = True
    # A DuckDB connection, even read-only, holds the file's lock: no other process could open the file to
    # write while the server is idle. Opening one costs about 165 ms, so idle ones go only after a pause.
    idle_close_s = 1.0

    def connect(self, path: Path) -> Any:
        from sophrosyne.engines.duckdb_process import ProcessConnection

        # No files, network or extensions, no Python variables standing in for tables, and no spilling to a
        # temporary folder beside the database: a statement past its memory stops with DuckDB's error.
        config: dict[str, str | bool | int | float | list[str]] = {
            "enable_external_access": False,
            "python_enable_replacements": False,
            "temp_directory": "",
        }
        if "?" not in str(path):
            return ProcessConnection(str(path), config)
        # DuckDB names the write-ahead log of `a?b` as `a.wal?b`, a path outside the database, which it may
        # not open without external access: the access is closed right after opening (and cannot be opened
        # again while the database runs), before any statement.
        del config["enable_external_access"]
        return ProcessConnection(str(path), config, after_open=["SET enable_external_access = false"])

    def error(self) -> type[Exception]:
        import duckdb

        return duckdb.Error

    def interrupt(self, raw: Any) -> None:
        raw.interrupt()

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        import duckdb

        raw.limit(timeout_s)  # its process stops a statement past this
        try:
            # The connection is its own cursor: cursor() would open another connection, which interrupt()
            # does not reach.
            yield raw
        finally:
            # No transaction is open in the usual case: statements here commit themselves. This also ends
            # the session's time limit.
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


def _unicode_lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


class _Connection(sqlite3.Connection):
    """A SQLite connection whose REGEXP keeps the reason it refused a pattern, for the error it causes."""

    refused_pattern: str | None = None

    def regexp(self, pattern: Any, value: Any) -> bool | None:
        if value is None or pattern is None:
            return None
        try:
            compiled = patterns.regex(str(pattern))
        except patterns.PatternError as exc:
            self.refused_pattern = f"{exc} (REGEXP runs on RE2, which has no backreferences or lookaround)"
            raise
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        return compiled.search(text) is not None


def _floor(value: Any) -> Any:
    return None if value is None else math.floor(value)
