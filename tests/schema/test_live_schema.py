"""A live schema on the servers and on DuckDB: new tables seen, every readable schema discovered (the search
path's first, others qualified), a setting to restrict them, and `postgres://` URLs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fixtures.engines import MARIADB, PG_DSN, mariadb_database, postgres_schema, unique_name, unreachable
from sophrosyne.environment import Environment
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import Role, TableRule


def seen_within(check: Callable[[], bool], seconds: float = 10.0) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not seen within {seconds} s"
        time.sleep(0.25)
    return time.monotonic() - started


@contextmanager
def opened(target: str, **options: Any) -> Iterator[Environment]:
    env = Environment.open(target, **options)
    try:
        yield env
    finally:
        env.db.close()


@pytest.fixture
def pg() -> Iterator[tuple[str, Any]]:
    """A schema on the search path with the HR tables, and an admin connection."""
    import psycopg

    with postgres_schema("soph_live") as url, psycopg.connect(PG_DSN, autocommit=True) as admin:
        yield url, admin


@pytest.mark.engine
def test_a_table_created_on_postgresql_is_visible_within_10_s(pg: tuple[str, Any]) -> None:
    url, admin = pg
    schema = url.rsplit("%3D", 1)[1]
    with opened(url, settings=Settings(schema_check_s=0.5)) as env:
        assert "late_table" not in {t.name for t in env.list_tables().tables}
        admin.execute(f'CREATE TABLE "{schema}".late_table (id INTEGER PRIMARY KEY, label TEXT)')
        seconds = seen_within(lambda: "late_table" in {t.name for t in env.list_tables().tables})
        assert seconds <= 10
        assert [c.name for c in env.describe_table("late_table").columns] == ["id", "label"]


@pytest.mark.engine
def test_other_postgresql_schemas_are_discovered_qualified_and_restrictable(pg: tuple[str, Any]) -> None:
    url, admin = pg
    other = unique_name("soph_other")
    admin.execute(f'CREATE SCHEMA "{other}"')
    try:
        admin.execute(f'CREATE TABLE "{other}".ledger (id INTEGER PRIMARY KEY, entry TEXT)')
        admin.execute(f"INSERT INTO \"{other}\".ledger VALUES (1, 'opening balance')")
        # Also a table named like one on the search path: the search path's keeps the plain name.
        admin.execute(f'CREATE TABLE "{other}".departments (id INTEGER PRIMARY KEY)')
        only_ours = f"{url.rsplit('%3D', 1)[1]},{other}"
        with opened(url, settings=Settings(schemas=only_ours)) as env:
            names = {t.name for t in env.list_tables().tables}
            assert {"departments", "employees", f"{other}.ledger", f"{other}.departments"} <= names
            listed = env.list_tables()
            assert [s.name for s in listed.schemas] == ["(search path)", other]
            assert env.describe_table(f"{other}.ledger").columns[1].name == "entry"
            assert env.get_distinct_values(f"{other}.ledger", "entry").values[0].value == "opening balance"
            assert env.find_rows("opening", table=f"{other}.ledger").matches
            assert env.execute_sql(f'SELECT entry FROM "{other}".ledger').rows == [["opening balance"]]
            assert len(env.describe_table("departments").columns) == 3  # the search path's own
        with opened(url, settings=Settings(schemas="search_path")) as env:
            assert not any("." in t.name for t in env.list_tables().tables)
        # A restricted role reads another schema's table only when its policy names it.
        with opened(url, settings=Settings(schemas=only_ours, directives="none"), role=_clerk(other)) as env:
            names = {t.name for t in env.list_tables().tables}
            assert f"{other}.ledger" in names and f"{other}.departments" not in names
            assert env.execute_sql(f'SELECT COUNT(*) FROM "{other}".ledger').rows == [[1]]
    finally:
        admin.execute(f'DROP SCHEMA "{other}" CASCADE')


def _clerk(other: str) -> Role:
    return Role("clerk", tables={f"{other}.ledger": TableRule(row_filter="id >= 1"), "employees": TableRule()})


@pytest.mark.engine
def test_postgres_scheme_urls_are_accepted(pg: tuple[str, Any]) -> None:
    url, _ = pg
    with opened(url.replace("postgresql://", "postgres://", 1)) as env:
        assert env.dialect == "postgres"
        assert env.execute_sql("SELECT COUNT(*) FROM departments").rows == [[5]]


@pytest.mark.engine
def test_a_table_created_on_mariadb_is_visible_within_10_s() -> None:
    import pymysql

    with mariadb_database("soph_live") as url:
        name = url.rsplit("/", 1)[1]
        with opened(url, settings=Settings(schema_check_s=0.5)) as env:
            env.list_tables()
            try:
                conn = pymysql.connect(**MARIADB, database=name, autocommit=True)
            except pymysql.MySQLError as exc:
                unreachable("MariaDB", str(exc))
            with conn, conn.cursor() as cursor:
                cursor.execute("CREATE TABLE late_table (id INTEGER PRIMARY KEY, label TEXT)")
            seconds = seen_within(lambda: "late_table" in {t.name for t in env.list_tables().tables})
            assert seconds <= 10


def test_duckdb_schemas_other_than_main_are_qualified(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "schemas.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)")
    conn.execute("CREATE SCHEMA archive")
    conn.execute("CREATE TABLE archive.orders (id INTEGER PRIMARY KEY, note TEXT)")
    conn.execute("INSERT INTO archive.orders VALUES (1, 'kept from 2019')")
    conn.close()
    with opened(str(path), settings=Settings(schemas="*")) as env:
        assert {t.name for t in env.list_tables().tables} == {"orders", "archive.orders"}
        assert env.get_distinct_values("archive.orders", "note").values[0].value == "kept from 2019"
        assert env.describe_table("archive.orders").sampled_rows == 1
    with opened(str(path), settings=Settings(schemas="search_path")) as env:
        assert {t.name for t in env.list_tables().tables} == {"orders"}


@pytest.mark.engine
def test_the_postgresql_fingerprint_follows_the_schemas_the_catalog_reads_and_no_other() -> None:
    import psycopg

    from sophrosyne.database import open_database

    with postgres_schema("joins_fp") as url, psycopg.connect(PG_DSN, autocommit=True) as admin:
        own = url.rsplit("%3D", 1)[1]
        # Another schema, whose name would end a quoted string: it is matched as a name, never read as SQL.
        other = unique_name("joins_other") + "') OR ('x'='x"
        admin.execute(f'CREATE SCHEMA "{other}"')
        sources = {
            setting: open_database(url, Settings(schemas=setting))
            for setting in ("search_path", own, f"{own},{other}", "*")
        }
        try:
            before = {setting: db.fingerprint(10.0) for setting, db in sources.items()}
            admin.execute(f'CREATE TABLE "{other}".made_elsewhere (id INTEGER)')
            after = {setting: db.fingerprint(10.0) for setting, db in sources.items()}
            # A source that does not read the other schema keeps its fingerprint; one that reads it sees it.
            assert after["search_path"] == before["search_path"] and after[own] == before[own]
            assert after[f"{own},{other}"] != before[f"{own},{other}"]
            assert after["*"] != before["*"]
            admin.execute(f'CREATE TABLE "{own}".made_here (id INTEGER)')
            assert all(db.fingerprint(10.0) != after[setting] for setting, db in sources.items())
        finally:
            for db in sources.values():
                db.close()
            admin.execute(f'DROP SCHEMA "{other}" CASCADE')
