"""The Spark engine against a real Thrift server (marker `spark`; scripts/spark_ci.sh starts one): its catalog,
its sessions (no file tables even past the guard), its deadline and its errors."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from fixtures.engines import COLUMN_COMMENT, EMPLOYEES, TABLE_COMMENT
from fixtures.spark import hr_database
from sophrosyne.base import deadline
from sophrosyne.database import Database, open_database
from sophrosyne.environment import Environment
from sophrosyne.errors import CallCancelled, QueryFailed, QueryTimeout, SophrosyneError
from sophrosyne.settings import Settings

pytestmark = pytest.mark.spark

# A statement that keeps two cores busy for far longer than any test waits.
ENDLESS = "SELECT count(*) FROM range(1000000000000)"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with hr_database(tmp_path_factory.mktemp("spark_hr"), "soph_spark") as where:
        yield where


@pytest.fixture(scope="module")
def db(url: str) -> Iterator[Database]:
    database = open_database(url, Settings(schemas="*"))
    yield database
    database.close()


def test_the_catalog_has_tables_views_comments_and_analyzed_row_counts(db: Database) -> None:
    catalog = db.catalog()
    plain = {name for name, t in catalog.tables.items() if t.local_name is None}
    assert plain == {"order_details", "absence_records", "departments", "employees", "notes", "department_headcount"}
    employees = catalog.tables["employees"]
    assert employees.kind == "table" and employees.description == TABLE_COMMENT
    assert employees.row_estimate == len(EMPLOYEES) and not employees.rows_at_least
    columns = {c.name: c for c in employees.columns}
    assert columns["department"].description == COLUMN_COMMENT
    assert columns["employee_id"].type == "bigint" and columns["hire_date"].type == "date"
    assert catalog.tables["departments"].columns[2].type == "decimal(12,2)"
    assert catalog.tables["department_headcount"].kind == "view"
    # No keys: Spark has none; joins are inferred from names and values.
    assert all(not t.primary_key and not t.foreign_keys for t in catalog.tables.values())


def test_other_databases_are_schemas(db: Database, url: str) -> None:
    current = url.rsplit("/", 1)[1]
    others = {t.schema for t in db.catalog().tables.values() if t.schema is not None}
    assert current not in others
    assert "default" in others


def test_file_tables_are_off_in_every_session_even_past_the_guard(db: Database) -> None:
    with pytest.raises(QueryFailed) as caught:
        db.run("SELECT * FROM text.`/etc/hostname`", limit=5)
    assert "TABLE_OR_VIEW_NOT_FOUND" in str(caught.value) and "org.apache" not in str(caught.value)
    assert db.run("SET spark.sql.runSQLOnFiles", limit=5).rows == [("spark.sql.runSQLOnFiles", "false")]


def test_a_statement_past_its_timeout_is_cancelled_and_the_session_answers_next(db: Database) -> None:
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        db.run(ENDLESS, limit=1, timeout_s=2)
    # Cancelling stops Spark's tasks in 2-3 s; the margin holds on a busy machine.
    assert time.monotonic() - started < 20
    assert db.run("SELECT 41 + 1", limit=1).rows == [(42,)]


def test_a_client_s_cancel_stops_the_statement(db: Database) -> None:
    call = deadline.Deadline(120)
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            with deadline.within(call):
                db.run(ENDLESS, limit=1, timeout_s=120)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(2)  # running on Spark by now
    stopped = time.monotonic()
    call.cancel()
    worker.join(30)
    assert not worker.is_alive() and time.monotonic() - stopped < 20
    assert len(outcome) == 1 and isinstance(outcome[0], CallCancelled)
    assert db.run("SELECT 41 + 1", limit=1).rows == [(42,)]


def test_errors_are_spark_s_words_without_java_classes(db: Database) -> None:
    with pytest.raises(QueryFailed) as caught:
        db.run("SELECT nope FROM employees", limit=1)
    message = str(caught.value)
    assert "UNRESOLVED_COLUMN" in message and "nope" in message
    assert "HiveSQLException" not in message and "\tat " not in message


def test_rows_come_typed(db: Database) -> None:
    result = db.run("SELECT employee_id, full_name, hire_date FROM employees ORDER BY employee_id", limit=3)
    assert result.columns == ["employee_id", "full_name", "hire_date"]
    assert [tuple(r) for r in result.rows] == [(e[0], e[1], e[3]) for e in EMPLOYEES[:3]]
    assert result.truncated


def test_column_names_with_spaces_and_parentheses_are_read(db: Database) -> None:
    # Spark's catalog holds table names of letters, digits and `_` only: the loader wrote `Order_Details`.
    result = db.run("SELECT `Order ID`, `Free Meal Count (K-12)` FROM order_details ORDER BY 1", limit=5)
    assert [tuple(r) for r in result.rows] == [(1, 3), (2, None), (3, 5)]


def test_a_query_that_runs_out_of_memory_fails_alone_and_the_server_answers_next(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # One read-only statement that gathers 300 million values into one array. In a server whose tasks run in
    # its driver (`--master local[2]`) it stopped the SparkContext after 8 s, and every later statement of every
    # client failed ("Cannot call methods on a stopped SparkContext"); scripts/spark_ci.sh runs the executor
    # apart (`local-cluster`), as a deployment should, and there the statement fails alone.
    with caplog.at_level(logging.WARNING, logger="sophrosyne.engines.spark"):
        env = Environment.open(url, settings=Settings(timeout_s=30))
        assert "employees" in {t.name for t in env.list_tables().tables}  # the catalog read checks the master
    assert not [r for r in caplog.records if "inside its driver" in r.getMessage()]
    try:
        with pytest.raises(SophrosyneError):
            env.execute_sql("SELECT size(collect_list(id)) AS n FROM range(300000000)")
        # The lost executor is replaced within seconds; a dead SparkContext never answers again.
        waited_until = time.monotonic() + 120
        while True:
            try:
                assert env.execute_sql("SELECT 41 + 1 AS n").rows == [[42]]
                break
            except QueryFailed as exc:
                assert "stopped SparkContext" not in str(exc)
                if time.monotonic() > waited_until:
                    raise
                time.sleep(2)
            except QueryTimeout:
                if time.monotonic() > waited_until:
                    raise
    finally:
        env.db.close()
