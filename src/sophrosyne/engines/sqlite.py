"""SQLite, on Python's own driver: read-only sessions, interrupts, estimates, index leads and its catalog."""

from __future__ import annotations

import datetime as dt
import math
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from sophrosyne.base import patterns
from sophrosyne.engines.base import OPEN_WAIT_S, CatalogSource, Cursor, FileEngine
from sophrosyne.engines.catalogs import read_timeout
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table

# The longest string or blob SQLite builds or reads in a session ("string or blob too big" past it).
LONGEST_VALUE_BYTES = 64 << 20


class SQLite(FileEngine):
    name = "sqlite"
    parameter_style = "named"
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
    # A failed statement leaves SQLite's transaction open: the catalog's counts share one session (a session of
    # its own per table cost 0.75 s of CPU at 5,000 tables without statistics, the counts themselves 0.13 s).
    counts_in_one_session = True

    def bind_value(self, value: Any) -> Any:
        # sqlite3's own date adapter is deprecated; dates are stored as ISO text, compared as such.
        return value.isoformat() if isinstance(value, dt.date) else value

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

    def schema_fingerprint(self, cursor: Cursor, schemas: str | None) -> object:
        cursor.execute("PRAGMA schema_version")  # bumped by SQLite on every schema change
        return tuple(cursor.fetchone() or ())

    def read_tables(self, source: CatalogSource) -> Catalog:
        return read_sqlite(source)


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


# Its catalog -------------------------------------------------------------------------------------------------
# Read with PRAGMA functions, giving what SQLAlchemy's inspector gave before (types named by the same
# affinity rules, foreign keys in the same order), so that schemas and their index keys stay the same.

_USER_OBJECTS = "m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite~_%' ESCAPE '~'"
# Declared type names SQLite knows by name, and the name each is shown as.
_SQLITE_TYPES = {
    **dict.fromkeys(re.findall(r"\w+", "BIGINT BLOB BOOLEAN CHAR DATE DATETIME DOUBLE DECIMAL FLOAT INTEGER JSON")),
    **dict.fromkeys(re.findall(r"\w+", "JSONB NUMERIC REAL SMALLINT TEXT TIME TIMESTAMP VARCHAR NVARCHAR NCHAR")),
    "BOOL": "BOOLEAN",
    "INT": "INTEGER",
    "DATE_CHAR": "DATE",
    "DATETIME_CHAR": "DATETIME",
    "TIME_CHAR": "TIME",
}
_STRING_TYPES = {"CHAR", "VARCHAR", "NVARCHAR", "NCHAR", "TEXT"}
_SCALED_TYPES = {"NUMERIC", "DECIMAL"}
# A table-level FOREIGN KEY clause in CREATE TABLE text: it orders and de-duplicates the keys.
_FK_CLAUSE = re.compile(
    r'(?:CONSTRAINT\s+(?:"(.+?)"|(\w+))\s+)?'
    r"FOREIGN\s+KEY\s*\(\s*(.+?)\s*\)\s+"
    r'REFERENCES\s+(?:(?:"(.+?)")|([a-z0-9_]+))\s*\(\s*((?:"[^"]+"|[a-z0-9_]+)(?:(?:\s*,\s*|\s+)(?:"[^"]+"|[a-z0-9_]+))*\s*)\)',
    re.I,
)
_FK_NAME = re.compile(r'(?:"(.+?)")|([a-z0-9_]+)', re.I)


def read_sqlite(source: CatalogSource) -> Catalog:
    with source.session(read_timeout(source)) as cursor:
        cursor.execute(f"SELECT m.name, m.type, m.sql FROM sqlite_master AS m WHERE {_USER_OBJECTS}")
        objects = cursor.fetchall()
        cursor.execute(
            'SELECT m.name, p.name, p.type, p."notnull", p.pk, p.hidden '
            f"FROM sqlite_master AS m JOIN pragma_table_xinfo(m.name, 'main') AS p WHERE {_USER_OBJECTS} "
            "ORDER BY m.name, p.cid"
        )
        columns = cursor.fetchall()
        cursor.execute(
            'SELECT m.name, f.id, f."table", f."from", f."to" '
            f"FROM sqlite_master AS m JOIN pragma_foreign_key_list(m.name, 'main') AS f WHERE {_USER_OBJECTS} "
            "ORDER BY m.name, f.id, f.seq"
        )
        references = cursor.fetchall()
    tables = {name: Table(name=name, columns=[], kind=kind) for name, kind, _ in objects}
    positions: dict[str, list[tuple[int, str]]] = {}
    for table_name, name, declared, notnull, pk, hidden in columns:
        if hidden == 1:  # a virtual table's hidden column
            continue
        tables[table_name].columns.append(Column(name=name, type=_sqlite_type(declared, hidden), nullable=not notnull))
        if pk:
            positions.setdefault(table_name, []).append((pk, name))
    for table_name, pk_columns in positions.items():
        table = tables[table_name]
        table.primary_key = [name for _, name in sorted(pk_columns, key=lambda p: p[0])]
        for column in table.columns:
            column.primary_key = column.name in table.primary_key
    keys_of = {name.lower(): table.primary_key for name, table in tables.items()}
    by_table: dict[str, dict[int, ForeignKey]] = {}
    for table_name, fk_id, ref_table, column, ref_column in references:
        keys = by_table.setdefault(table_name, {})
        if fk_id not in keys:
            # A key naming no column refers to the primary key of the table it names.
            ref_columns = [] if ref_column else list(keys_of.get(str(ref_table).lower(), []))
            keys[fk_id] = ForeignKey([], ref_table, ref_columns)
        keys[fk_id].columns.append(column)
        if ref_column:
            keys[fk_id].ref_columns.append(ref_column)
    sql_of = {name: sql for name, _, sql in objects}
    for table_name, keys in by_table.items():
        tables[table_name].foreign_keys = [
            fk for fk in _ordered_foreign_keys(list(keys.values()), sql_of.get(table_name) or "") if fk.ref_table
        ]
    return Catalog(tables=dict(sorted(tables.items())), dialect=source.dialect)


@lru_cache(maxsize=1024)  # 20,000 tables have 160,000 columns and a few dozen declared types
def _sqlite_type(declared: str, hidden: int) -> str:
    """The type name of a declared SQLite type, by SQLite's affinity rules (an empty one is shown as NULL)."""
    declared = (declared or "").upper()
    if hidden:  # a generated column's type reads "INTEGER GENERATED ALWAYS"
        declared = declared.replace("GENERATED", "").replace("ALWAYS", "").strip()
    match = re.match(r"([\w ]+)(\(.*?\))?", declared)
    name, args = (match.group(1), match.group(2)) if match else ("", "")
    if name in _SQLITE_TYPES:
        kind = _SQLITE_TYPES[name] or name
    elif "INT" in name:
        kind = "INTEGER"
    elif "CHAR" in name or "CLOB" in name or "TEXT" in name:
        kind = "TEXT"
    elif "BLOB" in name or not name:
        kind = "NULL"
    elif "REAL" in name or "FLOA" in name or "DOUB" in name:
        kind = "REAL"
    else:
        kind = "NUMERIC"
    numbers = [str(int(n)) for n in re.findall(r"\d+", args or "")]
    if kind in _STRING_TYPES and len(numbers) == 1 and numbers[0] != "0":
        return f"{kind}({numbers[0]})"
    if kind in _SCALED_TYPES and 0 < len(numbers) <= 4:
        return f"{kind}({', '.join(numbers[:2])})"
    return kind


def _ordered_foreign_keys(keys: list[ForeignKey], sql: str) -> list[ForeignKey]:
    """Keys declared by FOREIGN KEY clauses first, in the order of the CREATE TABLE text, then the others;
    keys with the same columns and target once."""
    by_signature = {(*fk.columns, fk.ref_table, *fk.ref_columns): fk for fk in keys}
    ordered = []
    for match in _FK_CLAUSE.finditer(sql):
        columns = _fk_names(match.group(3))
        ref_table = match.group(4) or match.group(5)
        signature = (*columns, ref_table, *(_fk_names(match.group(6)) or columns))
        if signature in by_signature:
            ordered.append(by_signature.pop(signature))
    return ordered + list(by_signature.values())


def _fk_names(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _FK_NAME.finditer(text or "")]
