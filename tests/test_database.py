"""Opening databases from paths and URLs; read-only sessions with a timeout and a row cap; the catalog."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

from fixtures.engines import build_sqlite
from sophrosyne.database import Database, open_database
from sophrosyne.engines.catalogs import count_sql, count_statement
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError, ConnectionFailed, QueryFailed, QueryTimeout
from sophrosyne.schema.catalog import Table
from sophrosyne.settings import Settings

SLOW = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
    "duckdb": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
    "postgres": "SELECT COUNT(*) FROM generate_series(1, 10000000000)",
    "mariadb": "SELECT COUNT(*) FROM absence_records a, absence_records b, absence_records c, absence_records d, "
    "absence_records e, absence_records f",
}


@pytest.fixture(scope="module")
def db(target: str) -> Iterator[Database]:
    database = open_database(target)
    yield database
    database.close()


# -- opening ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".sqlite", ".sqlite3", ".db"])
def test_sqlite_file_suffixes(tmp_path: Path, suffix: str) -> None:
    path = build_sqlite(tmp_path / "hr.sqlite")
    renamed = path.rename(path.with_suffix(suffix))
    database = open_database(renamed)
    try:
        assert database.dialect == "sqlite"
        assert database.name == "hr"
        assert database.run("SELECT COUNT(*) FROM departments").rows == [(5,)]
    finally:
        database.close()


def test_sqlite_url_opens_the_file_read_only(tmp_path: Path) -> None:
    path = build_sqlite(tmp_path / "hr.sqlite")
    database = open_database(f"sqlite:///{path}")
    try:
        with pytest.raises(QueryFailed, match="read-only"):
            database.run("DELETE FROM notes")
    finally:
        database.close()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("data.csv", "neither a SQLAlchemy URL"),
        ("missing.sqlite", "does not exist"),
        ("oracle://scott@localhost/xe", "not supported"),
        ("://nothing", "not a valid SQLAlchemy URL"),
    ],
)
def test_bad_targets_are_config_errors(tmp_path: Path, target: str, message: str) -> None:
    where = str(tmp_path / target) if "://" not in target else target
    with pytest.raises(ConfigError, match=message):
        open_database(where)


@pytest.mark.parametrize(
    "url",
    ["postgresql://postgres:s3cret@127.0.0.1:1/test", "mysql://root:s3cret@127.0.0.1:1/test"],
)
def test_unreachable_server_is_connection_failed_without_the_password(url: str) -> None:
    with pytest.raises(ConnectionFailed) as raised:
        open_database(url)
    assert "s3cret" not in str(raised.value)
    assert "127.0.0.1" in str(raised.value)
    assert raised.value.hint


@pytest.mark.engine
@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("postgresql://postgres@127.0.0.1:5432/test", "psycopg"),
        ("postgresql+psycopg2://postgres@127.0.0.1:5432/test", "psycopg"),
        ("mysql://root@127.0.0.1:3306/mysql", "pymysql"),
        ("mariadb://root@127.0.0.1:3306/mysql", "pymysql"),
    ],
)
def test_server_urls_get_the_installed_drivers(url: str, driver: str) -> None:
    try:
        database = open_database(url)
    except ConnectionFailed as exc:  # pragma: no cover - depends on the machine
        from fixtures.engines import unreachable

        unreachable(url.split(":", 1)[0], exc.message)
    try:
        assert database.driver == driver
        assert database.run("SELECT 1").rows == [(1,)]
    finally:
        database.close()


# -- sessions ----------------------------------------------------------------------------------------------


def test_run_returns_columns_rows_and_truncated(db: Database) -> None:
    result = db.run("SELECT employee_id, full_name FROM employees ORDER BY employee_id", limit=3)
    assert result.columns == ["employee_id", "full_name"]
    assert [r[0] for r in result.rows] == [1, 2, 3]
    assert result.truncated is True
    assert result.elapsed_ms >= 0
    whole = db.run("SELECT employee_id FROM employees")
    assert len(whole.rows) == 24
    assert whole.truncated is False
    exact = db.run("SELECT dept_code FROM departments", limit=5)
    assert len(exact.rows) == 5 and exact.truncated is False


def test_run_stops_a_slow_statement_and_recovers(db: Database, engine: str) -> None:
    with pytest.raises(QueryTimeout) as raised:
        db.run(SLOW[engine], timeout_s=0.3)
    assert "0.3 s" in raised.value.message
    assert db.run("SELECT COUNT(*) FROM notes").rows == [(8,)]


def test_engine_errors_are_query_failed(db: Database) -> None:
    with pytest.raises(QueryFailed) as raised:
        db.run("SELECT no_such_column FROM notes")
    # The engine's words are kept apart from ours: they may quote data, and an agent reads them as data.
    assert "no_such_column" in (raised.value.quoted or "")
    assert "Traceback" not in str(raised.value)


def test_sessions_are_read_only_at_the_engine(db: Database, engine: str) -> None:
    """The engine itself reports the session as read-only, with the deadline set."""
    if engine == "postgres":
        assert db.run("SHOW transaction_read_only").rows == [("on",)]
        assert db.run("SHOW default_transaction_read_only").rows == [("on",)]
        assert db.run("SHOW statement_timeout", timeout_s=2).rows == [("2s",)]
        # The search_path given in the URL survives beside the read-only option.
        assert "soph_database" in str(db.run("SHOW search_path").rows[0][0])
    elif engine == "mariadb":
        row = db.run("SELECT @@session.tx_read_only, @@session.max_statement_time", timeout_s=2).rows[0]
        assert int(row[0]) == 1
        assert float(row[1]) == 2
    elif engine == "sqlite":
        assert db.run("PRAGMA query_only").rows == [(1,)]
    elif engine == "duckdb":
        assert db.run("SELECT current_setting('access_mode')").rows[0][0].lower() == "read_only"


def test_concurrent_runs(db: Database) -> None:
    def count(table: str) -> int:
        return int(db.run(f"SELECT COUNT(*) FROM {table}").rows[0][0])

    tables = ["departments", "employees", "absence_records", "notes"] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        counts = list(pool.map(count, tables))
    assert counts == [5, 24, 60, 8] * 4


# -- catalog -------------------------------------------------------------------------------------------------


def test_catalog_tables_keys_and_kinds(db: Database) -> None:
    catalog = db.catalog()
    assert set(catalog.table_names) == {
        "Order Details",
        "absence_records",
        "department_headcount",
        "departments",
        "employees",
        "notes",
    }
    employees = catalog.tables["employees"]
    assert employees.primary_key == ["employee_id"]
    (fk,) = employees.foreign_keys
    assert (fk.columns, fk.ref_table, fk.ref_columns) == (["department"], "departments", ["dept_code"])
    assert catalog.tables["department_headcount"].kind == "view"
    assert catalog.table("EMPLOYEES") is employees
    assert [name for name, _ in catalog.references_to("employees")] == ["absence_records"]
    assert db.catalog() is catalog
    assert db.refresh_catalog() is not catalog


def test_row_estimate_without_statistics_is_a_bounded_count(tmp_path: Path) -> None:
    path = tmp_path / "nostats.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT)")
        conn.execute("CREATE TABLE small (id INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO big (v) VALUES (?)", [(str(i),) for i in range(50)])
        conn.executemany("INSERT INTO small VALUES (?)", [(i,) for i in range(3)])
        conn.commit()
    database = open_database(path, Settings(exact_count_rows=10))
    try:
        tables = database.catalog().tables
        # "At least 10", never a full COUNT(*), and never a number that looks exact.
        assert (tables["big"].row_estimate, tables["big"].rows_at_least) == (10, True)
        assert tables["big"].rows_text == "at least 10 rows"
        assert (tables["small"].row_estimate, tables["small"].rows_at_least) == (3, False)
    finally:
        database.close()


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql", "spark", "tsql", "bigquery"])
def test_count_statement_written_once_equals_the_statement_written_whole(dialect: str) -> None:
    # The count statement is written once per catalog and each table's reference put in: the same SQL as
    # writing it whole, for names that need quoting, a placeholder-like name and a schema-qualified one.
    tables = [
        Table(name="plain", columns=[]),
        Table(name='we"ird `na]me', columns=[]),
        Table(name="sophrosyne_counted_table", columns=[]),
        Table(name="sales.orders", columns=[], schema="sales", local_name="orders"),
    ]
    written = count_statement(dialect, 100_000)
    for table in tables:
        assert written(table) == count_sql(table, dialect, 100_000)


def test_bird_descriptions_fill_columns(tmp_path: Path) -> None:
    folder = tmp_path / "database_description"
    folder.mkdir()
    (folder / "employees.csv").write_text(
        "original_column_name,column_name,column_description,data_format,value_description\n"
        "department,department code,Code of the employee's department,text,codes like D042\n"
        "manager_id,,Employee id of the manager,integer,\n",
        encoding="utf-8",
    )
    environment = Environment.open(build_sqlite(tmp_path / "hr.sqlite"), descriptions=folder)
    try:
        columns = {c.name: c for c in environment.describe_table("employees").columns}
        assert "Code of the employee's department" in columns["department"].description
        assert "codes like D042" in columns["department"].description
        assert columns["manager_id"].description == "Employee id of the manager"
    finally:
        environment.db.close()


def test_a_file_s_schema_is_read_without_loading_sqlalchemy(tmp_path: Path) -> None:
    # SQLAlchemy serves the URL engines only; importing it costs a file's first answer about 0.4 s.
    database = build_sqlite(tmp_path / "hr.sqlite")
    code = (
        "import sys\n"
        "from sophrosyne.environment import Environment\n"
        f"env = Environment.open({str(database)!r})\n"
        "assert env.full_catalog.tables\n"
        "env.list_tables(question='Who was absent?')\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
