"""MySQL and MariaDB, through PyMySQL: read-only sessions, streamed rows, interrupts from another
connection, estimates and plans."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sophrosyne.engines.base import CONNECT_TIMEOUT_S, Cursor, Row
from sophrosyne.engines.servers import ServerEngine

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from sophrosyne.engines.tls import TLS


class MySQL(ServerEngine):
    """MySQL and MariaDB: one SQL dialect, two names for the statement deadline."""

    name = "mysql"
    parameter_style = "pyformat"
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

    default_port = 3306

    def prepare_url(
        self, url: URL, connect_timeout_s: float = CONNECT_TIMEOUT_S, read_timeout_s: float | None = None
    ) -> tuple[URL, dict[str, Any]]:
        url, connect_args = super().prepare_url(url, connect_timeout_s, read_timeout_s)
        # PyMySQL bounds only the TCP connect by connect_timeout: the server's greeting, the TLS handshake and
        # the login are reads and writes, which wait for ever unless bounded too. They are bounded by the
        # connect timeout while connecting, then by `read_timeout_s` (see connected()).
        for key in ("connect_timeout", "read_timeout", "write_timeout"):
            if key not in url.query:
                connect_args[key] = connect_timeout_s
        return url, connect_args

    def tls_args(self, tls: TLS) -> dict[str, Any]:
        from sophrosyne.engines.tls import mysql_args

        return mysql_args(tls)

    def connected(self, raw: Any, read_timeout_s: float) -> None:
        # PyMySQL sets its socket's timeout from these before each read and write; one the URL gave (other
        # than the connect timeout) is kept.
        for name in ("_read_timeout", "_write_timeout"):
            if getattr(raw, name, None) == raw.connect_timeout:
                setattr(raw, name, read_timeout_s)

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
    def reading(
        self, cursor: Cursor, sql: str, deadline: float, values: Mapping[str, Any] | None = None
    ) -> Iterator[Cursor]:
        import pymysql
        from pymysql.cursors import SSCursor

        # PyMySQL's cursor reads a whole result before the first row is fetched; its unbuffered cursor reads
        # rows off the connection as they are asked for. Closing it reads the rows left and drops them, one
        # at a time, within the statement's deadline.
        streamed = cursor.connection.cursor(SSCursor)  # type: ignore[attr-defined]
        try:
            streamed.execute(sql, values)  # PyMySQL binds the values (its own escaping)
            yield streamed
        finally:
            with contextlib.suppress(pymysql.Error):
                streamed.close()

    def interrupt(self, raw: Any) -> None:
        import pymysql

        # MySQL stops a statement only when asked from another connection, by the thread id of the first.
        busy = raw.driver_connection
        # The same way in as the busy connection (an SSH tunnel's port, its TLS context), bounded the same way.
        killer = pymysql.connect(
            host=busy.host,
            port=busy.port,
            user=busy.user,
            password=busy.password,
            ssl=busy.ctx if getattr(busy, "_ssl_required", False) else None,  # else PyMySQL's default: TLS if offered
            connect_timeout=3,
            read_timeout=3,
            write_timeout=3,
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

    def schema_fingerprint(self, cursor: Cursor, schemas: str | None) -> object:
        cursor.execute(
            "SELECT COUNT(*), SUM(CRC32(CONCAT_WS('.', table_name, column_name, column_type))) "
            "FROM information_schema.columns WHERE table_schema = DATABASE()"
        )
        return tuple(cursor.fetchone() or ())
