"""The engines behind a URL, through SQLAlchemy: PostgreSQL and MySQL (MariaDB included)."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from sophrosyne.engines.base import CONNECT_TIMEOUT_S, Cursor, Row, ServerEngine

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


class PostgreSQL(ServerEngine):
    name = "postgres"
    aliases = ("postgresql",)
    driver = "psycopg"
    replaced_drivers = ("psycopg2", "postgresql")
    backend_names: ClassVar[dict[str, str]] = {"postgres": "postgresql"}
    default_schema = "public"
    recursive_ctes_see_later_siblings = True
    # `recursive reference to query "t" must not appear within its non-recursive term`: kept, so it still fails.
    anchor_sees_recursive_cte = True
    fence_materialized = True
    # Comparisons of different types resolve to cross-type operators or widening casts, never to a cast of
    # a column's value that can fail; a mismatch such as `text = integer` is refused before any row is read.
    compares_without_failing = True
    inline_unfenced = True
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
            # Rows are read through a cursor (see reading()), whose plan PostgreSQL would otherwise pick for
            # its first tenth of the rows: plan it as a statement run whole, as without a cursor.
            settings = {
                "transaction_read_only": "on",
                "statement_timeout": str(int(timeout_s * 1000)),
                "cursor_tuple_fraction": "1",
            }
            if fenced:
                # A MATERIALIZED CTE has no statistics: an equality on it is guessed to keep 0.5% of the rows,
                # and the planner then rescans one CTE per row of another (1.3 s against 9 ms on BIRD's
                # toxicology). Without nested loops it hashes; where nothing else works it still nests, at a
                # cost so high that JIT compilation would start (0.45 s): JIT is off for these statements.
                settings |= {"enable_nestloop": "off", "jit": "off"}
            # They travel with the session's first statement, in its message: one round trip fewer per call.
            yield _Prefixed(
                cursor, "SELECT " + ", ".join(f"set_config('{k}', '{v}', true)" for k, v in settings.items())
            )
        finally:
            cursor.close()
            raw.rollback()

    @contextmanager
    def reading(self, cursor: Cursor, sql: str, deadline: float) -> Iterator[Cursor]:
        # psycopg reads a whole result into memory before the first row is fetched: a server-side cursor
        # (DECLARE, then FETCH a few rows at a time) hands rows over as they are asked for. DECLARE takes a
        # query only: a plan (EXPLAIN) is read as before. The cursor ends with the session's transaction.
        if not _DECLARABLE.match(sql):
            yield from _plain(cursor, sql)
            return
        yield _Fetching(cursor, sql, deadline)

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

    def table_parents(self, cursor: Cursor) -> list[tuple[str, str, str, str]]:
        # Partitions and INHERITS children (pg_inherits also links partitioned indexes: tables only).
        cursor.execute(
            "SELECT cn.nspname, c.relname, pn.nspname, p.relname FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace cn ON cn.oid = c.relnamespace "
            "JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace pn ON pn.oid = p.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'f') ORDER BY c.oid, i.inhseqno"
        )
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in cursor.fetchall()]

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
    # MariaDB 10.11 reads a later sibling of a WITH RECURSIVE as that CTE; MySQL documents only earlier ones.
    recursive_ctes_see_later_siblings = None
    # MariaDB finds the anchors of a recursive CTE by its dependencies: any `t` in its body is the CTE itself.
    anchor_sees_recursive_cte = True
    # MariaDB 10.11: a CTE body of `(WITH x AS (SELECT * FROM t) ...)` inside a derived table or a subquery
    # reads base table `t` even where an outer WITH defines a CTE `t` (MySQL 8 reads the CTE), and cannot
    # see the outer WITH's CTEs at all: the role's own CTEs must be repeated there.
    nested_ctes_see_outer_ctes = False
    # MariaDB 10.11: `y AS (WITH t AS (... t ...) SELECT * FROM t)` under an outer CTE `t` reads the outer one.
    redefines_ctes_consistently = False
    # MariaDB matches CTE names ignoring case; MySQL as it matches table names (case-sensitive on Linux).
    cte_name_case_varies = True
    # A text value compared with a number is converted with a warning, never an error.
    compares_without_failing = True
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

    @contextmanager
    def reading(self, cursor: Cursor, sql: str, deadline: float) -> Iterator[Cursor]:
        import pymysql
        from pymysql.cursors import SSCursor

        # PyMySQL's cursor reads a whole result before the first row is fetched; its unbuffered cursor reads
        # rows off the connection as they are asked for. Closing it reads the rows left and drops them, one
        # at a time, within the statement's deadline.
        streamed = cursor.connection.cursor(SSCursor)  # type: ignore[attr-defined]
        try:
            streamed.execute(sql)
            yield streamed
        finally:
            with contextlib.suppress(pymysql.Error):
                streamed.close()

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


# Statements DECLARE takes (a query); EXPLAIN and the like are run as they are.
_DECLARABLE = re.compile(r"\s*(?:\(\s*)*(?:SELECT|WITH|VALUES|TABLE)\b", re.IGNORECASE)


def _plain(cursor: Cursor, sql: str) -> Iterator[Cursor]:
    cursor.execute(sql)
    yield cursor


class _Prefixed:
    """The session's cursor, whose first statement carries the session's settings in the same message (the
    settings run first, in the same transaction; their result is skipped)."""

    def __init__(self, cursor: Any, prefix: str) -> None:
        self._cursor = cursor
        self._prefix: str | None = prefix

    def execute(self, sql: str, /) -> Any:
        if self._prefix is None:
            return self._cursor.execute(sql)
        prefix, self._prefix = self._prefix, None
        self._cursor.execute(f"{prefix};\n{sql}")
        self._cursor.nextset()  # to the statement's own result
        return self._cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _Fetching:
    """A PostgreSQL server-side cursor read through the session's own cursor, one round trip per FETCH.

    The DECLARE travels with the first FETCH, of two rows: one whose size sets the next FETCH (see
    reading.py), and one more, whose absence tells that the result is complete without another round trip.
    Each later FETCH carries a statement_timeout of what is left of the statement's time: the session's would
    give every FETCH the whole timeout again. Statements of one message are timed each on its own."""

    _FIRST = 2

    def __init__(self, session: Cursor, sql: str, deadline: float) -> None:
        self.session = session
        self.deadline = deadline
        # A newline ends a trailing `--` comment of the statement before the next one starts.
        self._run(f"DECLARE {_CURSOR} NO SCROLL CURSOR FOR\n{sql}\n;FETCH {self._FIRST} FROM {_CURSOR}")
        self.waiting: list[Row] = list(session.fetchall())
        self.done = len(self.waiting) < self._FIRST  # the cursor has no more rows
        self.description = session.description

    def _run(self, statements: str) -> None:
        self.session.execute(statements)
        self.session.nextset()  # type: ignore[attr-defined]  # to the FETCH's rows

    def execute(self, sql: str, /) -> Any:
        raise TypeError("a result being read runs no other statement")

    def fetchone(self) -> Row | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int, /) -> Sequence[Row]:
        rows, self.waiting = self.waiting[:size], self.waiting[size:]
        if len(rows) == size or self.done:
            return rows
        self._run(f"{self._in_time()};FETCH {int(size - len(rows))} FROM {_CURSOR}")
        fetched = list(self.session.fetchall())
        self.done = len(fetched) < size - len(rows)
        return rows + fetched

    def fetchall(self) -> Sequence[Row]:
        rows, self.waiting = self.waiting, []
        if self.done:
            return rows
        self._run(f"{self._in_time()};FETCH ALL FROM {_CURSOR}")
        self.done = True
        return rows + list(self.session.fetchall())

    def _in_time(self) -> str:
        left_ms = max(1, int((self.deadline - time.monotonic()) * 1000))  # 0 would mean no limit
        return f"SELECT set_config('statement_timeout', '{left_ms}', true)"


_CURSOR = "sophrosyne_rows"


# The schemas of PostgreSQL's own catalogs; every other schema holds user tables.
_PG_USER_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"
