"""PostgreSQL, through psycopg: read-only sessions in one round trip, rows read by a server-side cursor,
interrupts, estimates and the schemas on its search path."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from sophrosyne.engines.base import CONNECT_TIMEOUT_S, Cursor, Row
from sophrosyne.engines.catalogs import read_schemas
from sophrosyne.engines.servers import ServerEngine

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from sophrosyne.engines.tls import TLS


class PostgreSQL(ServerEngine):
    name = "postgres"
    parameter_style = "pyformat"
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
    default_port = 5432

    def prepare_url(
        self, url: URL, connect_timeout_s: float = CONNECT_TIMEOUT_S, read_timeout_s: float | None = None
    ) -> tuple[URL, dict[str, Any]]:
        url, connect_args = super().prepare_url(url, connect_timeout_s, read_timeout_s)
        # Every transaction of these sessions starts read-only, even one begun after a stray COMMIT.
        # Options given in the URL (a search_path, say) are kept beside it.
        given = url.query.get("options")
        extra = given if isinstance(given, str) else " ".join(given or ())
        connect_args["options"] = f"{extra} -c default_transaction_read_only=on".strip()
        # libpq bounds the whole opening (TCP, TLS, login) by whole seconds, 2 at least, per address tried.
        defaults: dict[str, Any] = {"connect_timeout": max(2, math.ceil(connect_timeout_s))}
        if read_timeout_s is not None:
            # Once open, the server's own statement_timeout ends every statement; a server that vanishes (its
            # host down, a link cut) is found by TCP keepalives and by unacknowledged writes, in seconds.
            defaults |= {
                "keepalives": 1,
                "keepalives_idle": 30,
                "keepalives_interval": 10,
                "keepalives_count": 3,
                "tcp_user_timeout": int(read_timeout_s * 1000),
            }
        connect_args |= {key: value for key, value in defaults.items() if key not in url.query}
        return url.difference_update_query(["options"]), connect_args

    def through_tunnel(self, url: URL, port: int) -> tuple[URL, dict[str, Any]]:
        # libpq connects to `hostaddr` and checks the certificate against `host`: verify-full holds through it.
        return url, {"hostaddr": "127.0.0.1", "port": port}

    def tls_args(self, tls: TLS) -> dict[str, Any]:
        from sophrosyne.engines.tls import postgres_args

        return postgres_args(tls)

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
    def reading(
        self, cursor: Cursor, sql: str, deadline: float, values: Mapping[str, Any] | None = None
    ) -> Iterator[Cursor]:
        if values is not None:
            # psycopg binds the values client-side (its own quoting, for this connection's encoding): the
            # statement then travels with the session's settings and the DECLARE below, in one message.
            import psycopg

            sql = psycopg.ClientCursor(cursor.connection).mogrify(sql, values)  # type: ignore[attr-defined]
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

    def schema_fingerprint(self, cursor: Cursor, schemas: str | None) -> object:
        # One pass over the columns of the tables of the schemas the catalog reads, and no other (a table made
        # in a schema it does not read is no reason to read it again): a new, dropped or renamed table or
        # column, or a changed type, changes the sum; statistics and data do not. Each schema's name goes in
        # as hex, so no name is ever read as SQL.
        path, others = read_schemas(self, cursor, schemas)
        names = sorted({s for s in [*path, *others] if s is not None})
        if not names:
            return ()
        listed = ", ".join(f"convert_from(decode('{name.encode().hex()}', 'hex'), 'UTF8')" for name in names)
        cursor.execute(
            "SELECT count(*), sum(hashtext(n.nspname || '.' || c.relname || '.' || a.attname || ':' "
            "|| a.atttypid::text)) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE n.nspname::text IN ({listed}) AND a.attnum > 0 AND NOT a.attisdropped "
            "AND c.relkind IN ('r', 'v', 'm', 'p', 'f')"
        )
        return (tuple(path), tuple(others), *(cursor.fetchone() or ()))


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
