"""Apache Spark (and Databricks) through a Thrift server (HiveServer2 protocol) and impyla: statements run
asynchronously and polled, cancelled at their deadline or on the client's cancel; its own catalog reading
(SHOW TABLES, SHOW VIEWS, DESCRIBE TABLE EXTENDED ... AS JSON), each database of the server as a schema.

Spark has no read-only mode, keys, indexes, transactions or information_schema: the guard is the only write
barrier (docs/policy.md), and join inference finds the joins."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from sophrosyne.base import deadline
from sophrosyne.engines.base import CONNECT_TIMEOUT_S, CatalogSource, Cursor, Row
from sophrosyne.engines.catalogs import path_first, read_timeout, wanted_schemas
from sophrosyne.engines.servers import ServerEngine
from sophrosyne.errors import QueryFailed
from sophrosyne.schema.catalog import Catalog, Column, Table

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

logger = logging.getLogger("sophrosyne.engines.spark")


class Spark(ServerEngine):
    name = "spark"
    # `hive://` is how PyHive and most tools write a Thrift server's URL.
    aliases = ("hive",)
    driver = "impyla"
    replaced_drivers = ("pyhive", "hive", "thrift")
    backend_names: ClassVar[dict[str, str]] = {"hive": "spark"}
    # `WITH RECURSIVE t AS (SELECT ... FROM t UNION ALL ...)`: INVALID_RECURSIVE_CTE, the anchor's `t` is the CTE.
    anchor_sees_recursive_cte = True
    # Names match ignoring case unless the server sets spark.sql.caseSensitive: a server may go either way.
    cte_name_case_varies = True
    # Filters are never pushed below a LIMIT; Spark's LIMIT takes an INT, whose largest value keeps every row.
    fence_limit = "2147483647"
    # ANSI mode (Spark 4's default) fails `city = 5` on the first value that is no number, and quotes it.
    compares_without_failing = False
    # `count(1)`, `(x + 1)`, `upper(city)`: an unaliased column is named by Spark's rendering.
    names_columns_by_rendering = True
    has_ilike = True

    default_port = 10000

    def prepare_url(
        self, url: URL, connect_timeout_s: float = CONNECT_TIMEOUT_S, read_timeout_s: float | None = None
    ) -> tuple[URL, dict[str, Any]]:
        from sqlalchemy.dialects import registry

        # Loaded by name on the first spark URL only: importing SQLAlchemy with the engines would slow files.
        registry.register("spark.impyla", "sophrosyne.engines.spark_dialect", "SparkDialect")
        url, connect_args = super().prepare_url(url, connect_timeout_s, read_timeout_s)
        # The transport, its SASL and TLS handshakes and the session's opening, each Thrift call of them bounded
        # by the connect timeout (then every call by the dialect's CALL_TIMEOUT_S).
        if "timeout" not in url.query:
            connect_args["connect_timeout"] = connect_timeout_s
        return url, connect_args

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        connection = raw.driver_connection
        connection.stop.clear()  # a stop raised for an earlier call is not this one's
        yield _Polled(connection, timeout_s)

    @contextmanager
    def reading(
        self, cursor: Cursor, sql: str, deadline: float, values: Mapping[str, Any] | None = None
    ) -> Iterator[Cursor]:
        assert isinstance(cursor, _Polled)
        cursor.run(sql, deadline)
        yield cursor

    def interrupt(self, raw: Any) -> None:
        # Only a flag: the session's thread, polling, sends the cancel on its own connection.
        raw.driver_connection.stop.set()

    def read_plan(self, columns: list[str], rows: Sequence[Row]) -> tuple[list[str], set[str]]:
        text = "\n".join(str(row[0]) for row in rows if row and row[0] is not None)
        # A statement that does not analyse is a plan of one error, not a failed statement.
        if text.startswith("Error occurred during query planning"):
            message = text.partition("\n")[2].strip().splitlines()
            raise QueryFailed("the database failed the statement; its message:", quoted=message[0] if message else text)
        return [line for line in text.splitlines() if line.strip()], set()

    def schemas(self, cursor: Cursor) -> tuple[list[str | None], list[str]]:
        cursor.execute("SELECT current_database()")
        row = cursor.fetchone()
        current = str(row[0]) if row else "default"
        cursor.execute("SHOW DATABASES")
        return [current], sorted(str(r[0]) for r in cursor.fetchall() if str(r[0]) != current)

    def schema_fingerprint(self, cursor: Cursor, schemas: str | None) -> object:
        # Tables and views of the current database: one cheap catalog call (no column list is cheap).
        cursor.execute("SHOW TABLES")
        return tuple(sorted(str(r[1]) for r in cursor.fetchall()))

    def read_tables(self, source: CatalogSource) -> Catalog:
        wanted = wanted_schemas(source.schemas)
        tables: dict[str, Table] = {}
        with source.session(read_timeout(source)) as cursor:
            warn_of_a_shared_driver(cursor)
            path, others = self.schemas(cursor)
            if wanted is not None:
                others = [s for s in others if s.lower() in wanted]
            for schema in [*path, *others]:
                deadline.check("reading the schema")
                assert schema is not None
                _read_database(cursor, schema, schema in path, tables)
        return Catalog(tables=dict(sorted(tables.items(), key=path_first)), dialect=source.dialect)


def warn_of_a_shared_driver(cursor: Cursor) -> None:
    """Warn when the server runs its tasks inside its driver (`--master local[N]`): there one query that runs out
    of memory (`collect_list` over a large table, `sequence(1, 300000000)`) stops the SparkContext, and every
    later statement of every client fails until the server restarts. With executors apart (a cluster, or
    `local-cluster[...]`) the same query fails alone and the next one answers."""
    cursor.execute("SET spark.master")
    row = cursor.fetchone()
    master = str(row[1]) if row and len(row) > 1 else ""
    if runs_tasks_in_the_driver(master):
        logger.warning(
            "the Spark server runs its tasks inside its driver (spark.master=%s): one query that runs out of memory "
            "stops its SparkContext for every client until the server restarts. Serve a cluster (standalone, YARN, "
            "Kubernetes; local-cluster[...] for tests) so that such a query fails alone (docs/policy.md, Spark).",
            master,
        )


def runs_tasks_in_the_driver(master: str) -> bool:
    """Whether a `spark.master` runs tasks in the driver's JVM: `local`, `local[4]`, `local[*, 3]`."""
    master = master.strip().lower()
    return master == "local" or master.startswith("local[")


def _read_database(cursor: Cursor, schema: str, current: bool, tables: dict[str, Table]) -> None:
    """The tables and views of one database; those of the current one by plain name."""
    cursor.execute(f"SHOW TABLES IN {_quoted(schema)}")
    # Temporary views belong to no database (the session's, which Sophrosyne never creates): left out.
    names = [str(r[1]) for r in cursor.fetchall() if not r[2]]
    cursor.execute(f"SHOW VIEWS IN {_quoted(schema)}")
    views = {str(r[1]) for r in cursor.fetchall() if not r[2]}
    for name in names:
        cursor.execute(f"DESCRIBE TABLE EXTENDED {_quoted(schema)}.{_quoted(name)} AS JSON")
        row = cursor.fetchone()
        if row is None:
            continue
        described: dict[str, Any] = json.loads(row[0])
        key = name if current else f"{schema}.{name}"
        statistics = described.get("statistics") or {}
        rows = statistics.get("num_rows")
        tables[key] = Table(
            name=key,
            columns=[
                Column(
                    name=str(c["name"]),
                    type=_type_name(c.get("type") or {}),
                    nullable=bool(c.get("nullable", True)),
                    description=str(c.get("comment") or "").strip(),
                )
                for c in described.get("columns") or []
            ],
            description=str(described.get("comment") or "").strip(),
            kind="view" if name in views or described.get("type") == "VIEW" else "table",
            schema=None if current else schema,
            local_name=None if current else name,
            # ANALYZE TABLE ... COMPUTE STATISTICS counts the rows; without it Spark knows only bytes.
            row_estimate=int(rows) if rows is not None else None,
        )


def _type_name(kind: dict[str, Any]) -> str:
    """A column type of DESCRIBE ... AS JSON in Spark's SQL words (`decimal(12,2)`, `array<string>`)."""
    name = str(kind.get("name") or "")
    if name == "decimal":
        return f"decimal({kind.get('precision')},{kind.get('scale')})"
    if name in {"varchar", "char"}:
        return f"{name}({kind.get('length')})"
    if name == "array":
        return f"array<{_type_name(kind.get('element_type') or {})}>"
    if name == "map":
        return f"map<{_type_name(kind.get('key_type') or {})},{_type_name(kind.get('value_type') or {})}>"
    if name == "struct":
        fields = ", ".join(f"{f['name']}: {_type_name(f.get('type') or {})}" for f in kind.get("fields") or [])
        return f"struct<{fields}>"
    return name


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _no_answer(grace_s: float) -> str:
    return (
        "lost the connection to the Spark server: it gave no answer by the statement's deadline and "
        f"{grace_s:g} s more; check that the Thrift server runs and is not overloaded"
    )


class _Polled:
    """The session's cursor, each statement sent asynchronously and polled until done: past its deadline, or
    once the connection's stop flag is raised, it is cancelled (a blocking execute that times out between
    two of Spark's jobs would leave the second one running). Errors lose their Java class prefixes."""

    def __init__(self, connection: Any, timeout_s: float) -> None:
        self.connection = connection
        self.cursor = connection.session
        self.timeout_s = timeout_s

    @property
    def description(self) -> Sequence[Sequence[Any]] | None:
        return self.cursor.description  # type: ignore[no-any-return]

    def execute(self, sql: str, /) -> Any:
        self.run(sql, time.monotonic() + self.timeout_s)
        return self

    def run(self, sql: str, deadline: float) -> None:
        from impala.error import Error, OperationalError
        from thrift.transport.TTransport import TTransportException

        from sophrosyne.engines.spark_dialect import ANSWER_GRACE_S, CALL_TIMEOUT_S, set_call_timeout

        cursor, thrift = self.cursor, self.connection.thrift

        def bounded() -> None:  # the next Thrift call waits no longer than the deadline and a grace
            set_call_timeout(thrift, min(CALL_TIMEOUT_S, max(0.0, deadline - time.monotonic()) + ANSWER_GRACE_S))

        try:
            bounded()
            cursor.execute_async(sql)  # closes the previous statement's operation first
            pause = 0.005
            while True:
                bounded()
                if not cursor.is_executing():
                    break
                if self.connection.stop.is_set() or time.monotonic() >= deadline:
                    cursor.cancel_operation()
                    # Words database.py reads as a deadline (or, when the client cancelled, as that).
                    raise OperationalError("the statement was interrupted: cancelled at its statement timeout")
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 2, 0.1)
            # Done: a failed statement raises its message here (impyla's one reading of the final state).
            cursor._wait_to_finish()
        except Error as exc:
            message = clean_message(str(exc))
            if not message and time.monotonic() >= deadline:
                # A call that timed out inside impyla (closing the previous operation, say) says nothing itself.
                self.connection.dead = True
                raise OperationalError(_no_answer(ANSWER_GRACE_S)) from None
            raise type(exc)(message) from None
        except (TTransportException, OSError) as exc:
            # The stream may still bring the late answer of the call that timed out, which the next call would
            # read as its own: the connection is dead, and the pool's ping opens another at its next hand-out.
            self.connection.dead = True
            if time.monotonic() >= deadline:
                raise OperationalError(_no_answer(ANSWER_GRACE_S)) from None
            raise OperationalError(f"lost the connection to the Spark server: {exc}") from None
        finally:
            set_call_timeout(thrift, CALL_TIMEOUT_S)  # reading the rows: each call within CALL_TIMEOUT_S

    def fetchone(self) -> Row | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int, /) -> Sequence[Row]:
        return self.cursor.fetchmany(size) if self.cursor.description else []

    def fetchall(self) -> Sequence[Row]:
        return self.cursor.fetchall() if self.cursor.description else []


# `org.apache.hive.service.cli.HiveSQLException: Error running query: [X] org.apache.spark.sql.AnalysisException:`
_JAVA_PREFIX = re.compile(r"(?:(?:[a-z]\w*\.)+[A-Z]\w*(?:Exception|Error)(?::\s*|\s*$)|Error running query:\s*)")
_REPEATED_CLASS = re.compile(r"^(\[[A-Z_.]+\])\s+\1\s*")


def clean_message(message: str) -> str:
    """Spark's message without the Java exception classes before it, and without its stack trace; a stopped
    SparkContext's with what to do about it."""
    first = next((line for line in message.strip().splitlines() if line.strip()), message)
    cut = _REPEATED_CLASS.sub(r"\1 ", _JAVA_PREFIX.sub("", first).strip()) or first.strip()
    if "stopped SparkContext" in cut:
        cut += (
            # Not the words "out of memory": database.py would read them as this statement's own memory cap.
            " (the Spark server's SparkContext has stopped, as when one query exhausts the memory of a server whose "
            "tasks run inside its driver: restart the server, and serve one whose executors run apart; "
            "docs/policy.md, Spark)"
        )
    return cut
