"""The Spark engine's record without a server: URLs, error messages cut to Spark's words, plans."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from sophrosyne import engines
from sophrosyne.database import _translate
from sophrosyne.engines.spark import Spark, clean_message, runs_tasks_in_the_driver
from sophrosyne.errors import QueryFailed

# As the Thrift server sends it (Spark 4.3), first line and the start of the trace.
NOT_FOUND = (
    "org.apache.hive.service.cli.HiveSQLException: Error running query: [TABLE_OR_VIEW_NOT_FOUND] "
    "org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `text`.`/etc/hostname` "
    "cannot be found. Verify the spelling and correctness of the schema and catalog.\n"
    "Search path: [`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].\n"
    "\tat org.apache.spark.sql.hive.thriftserver.HiveThriftServerErrors$.runningQueryError(...)"
)


def test_hive_and_spark_urls_open_the_spark_engine_through_impyla() -> None:
    for url in ("hive://127.0.0.1:10000/default", "spark://127.0.0.1:10000/default", "hive+pyhive://h/db"):
        parsed = make_url(url)
        engine = engines.named(parsed.get_backend_name())
        assert isinstance(engine, Spark)
        prepared, _ = engine.prepare_url(parsed)
        assert prepared.drivername == "spark+impyla"
        assert prepared.database == parsed.database


def test_the_dialect_opens_sessions_with_file_tables_off_and_plain_sasl() -> None:
    import sqlalchemy as sa

    from sophrosyne.engines.spark_dialect import SESSION_CONFIGURATION

    url, _ = Spark().prepare_url(make_url("hive://analyst@10.0.0.5/sales?use_ssl=true"))
    engine = sa.create_engine(url)
    _, options = engine.dialect.create_connect_args(url)
    assert options["host"] == "10.0.0.5" and options["port"] == 10000 and options["user"] == "analyst"
    assert options["database"] == "sales" and options["auth_mechanism"] == "PLAIN" and options["use_ssl"] is True
    assert SESSION_CONFIGURATION == {"set:hiveconf:spark.sql.runSQLOnFiles": "false"}


def test_errors_lose_the_java_classes_and_the_trace() -> None:
    assert clean_message(NOT_FOUND) == (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `text`.`/etc/hostname` cannot be found. "
        "Verify the spelling and correctness of the schema and catalog."
    )
    cast = (
        "org.apache.hive.service.cli.HiveSQLException: Error running query: [CAST_INVALID_INPUT] "
        "org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value 'abc' cannot be cast"
    )
    assert clean_message(cast) == "[CAST_INVALID_INPUT] The value 'abc' cannot be cast"
    assert clean_message("plain words") == "plain words"


def test_a_stopped_spark_context_says_what_happened_and_what_to_do() -> None:
    stopped = (
        "org.apache.hive.service.cli.HiveSQLException: Error running query: java.lang.IllegalStateException: "
        "Cannot call methods on a stopped SparkContext.\n\tat org.apache.spark.SparkContext.assertNotStopped(...)"
    )
    said = clean_message(stopped)
    assert said.startswith("Cannot call methods on a stopped SparkContext.")
    assert "restart the server" in said and "executors run apart" in said and "docs/policy.md" in said
    # Every later statement gets it: it is not read as that statement's own memory cap.
    failed = _translate(Exception(said), 10)
    assert isinstance(failed, QueryFailed) and "more memory" not in str(failed) and "restart the server" in str(failed)


def test_a_master_that_runs_tasks_in_the_driver_is_told_apart() -> None:
    for master in ("local", "local[2]", "LOCAL[*]", "local[4, 3]", " local[*] "):
        assert runs_tasks_in_the_driver(master), master
    for master in ("local-cluster[1,2,1024]", "spark://10.0.0.5:7077", "yarn", "k8s://https://k:6443", ""):
        assert not runs_tasks_in_the_driver(master), master


def test_a_plan_of_an_error_is_a_failed_statement() -> None:
    rows = [
        (
            "Error occurred during query planning: \n[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `e`.`x` cannot "
            "be resolved.\n'Project [*]",
        ),
    ]
    with pytest.raises(QueryFailed) as caught:
        Spark().read_plan(["plan"], rows)
    assert caught.value.quoted == "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `e`.`x` cannot be resolved."
    lines, scanned = Spark().read_plan(["plan"], [("== Physical Plan ==\n+- FileScan parquet t[a#1]\n\n",)])
    assert lines == ["== Physical Plan ==", "+- FileScan parquet t[a#1]"] and scanned == set()
