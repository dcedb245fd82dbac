"""Every table name a database allows is readable through every tool: dots, both kinds of quotes, spaces."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from fixtures.engines import PG_DSN, unique_name, unreachable
from sophrosyne.environment import Environment
from sophrosyne.errors import RejectedSQL
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import Role, TableRule

# A dot, both quotes, a backslash and spaces: each breaks a naive quoting or a split on ".".
NAMES = ["sales.2024", 'it\'s "odd" \\ name', "[bracketed]"]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _create(execute: object) -> None:
    for name in NAMES:
        execute(f"CREATE TABLE {_quoted(name)} (id INTEGER PRIMARY KEY, {_quoted('label.text')} VARCHAR(40))")  # type: ignore[operator]
        literal = "'" + f"needle in {name}".replace("'", "''") + "'"
        execute(f"INSERT INTO {_quoted(name)} VALUES (1, {literal})")  # type: ignore[operator]


@pytest.fixture(params=["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.engine)])
def odd(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        path = tmp_path / "odd.sqlite"
        with closing(sqlite3.connect(path)) as conn:
            _create(conn.execute)
            conn.commit()
        yield str(path)
    elif request.param == "duckdb":
        import duckdb

        path = tmp_path / "odd.duckdb"
        conn = duckdb.connect(str(path))
        _create(conn.execute)
        conn.close()
        yield str(path)
    else:
        import psycopg

        try:
            admin = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
        except psycopg.Error as exc:
            unreachable("PostgreSQL", str(exc).strip().splitlines()[0])
        schema = unique_name("soph_names")
        with admin:
            admin.execute(f'CREATE SCHEMA "{schema}"')
            try:
                admin.execute(f'SET search_path TO "{schema}"')
                _create(admin.execute)
                yield f"{PG_DSN}?options=-csearch_path%3D{schema}"
            finally:
                admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _refused_on_duckdb(odd: str, name: str) -> bool:
    """DuckDB reads a file named as a table: the guard keeps it from names that could be a path there."""
    return odd.endswith(".duckdb") and "\\" in name


@contextmanager
def opened(target: str, **options: Any) -> Iterator[Environment]:
    env = Environment.open(target, **options)
    try:
        yield env
    finally:
        env.db.close()


@pytest.mark.parametrize("name", NAMES)
def test_every_tool_reads_a_table_of_any_name(odd: str, name: str) -> None:
    with opened(odd) as env:
        _every_tool(env, odd, name)


def _every_tool(env: Environment, odd: str, name: str) -> None:
    if _refused_on_duckdb(odd, name):
        with pytest.raises(RejectedSQL, match="names a file"):
            env.describe_table(name)
        return
    assert name in {t.name for t in env.list_tables().tables}
    described = env.describe_table(name)
    assert [c.name for c in described.columns] == ["id", "label.text"]
    assert described.columns[1].samples == [f"needle in {name}"]
    values = env.get_distinct_values(name, "label.text", search=f"needle in {name}")
    assert [(v.value, v.match) for v in values.values] == [(f"needle in {name}", "exact")]
    found = env.find_rows("needle", table=name)
    assert found.matches and found.matches[0].rows[0][1] == f"needle in {name}"
    everywhere = env.find_rows("needle")
    assert {m.table for m in everywhere.matches} == {n for n in NAMES if not _refused_on_duckdb(odd, n)}
    rows = env.execute_sql(f"SELECT {_quoted('label.text')} FROM {_quoted(name)}")
    assert rows.rows == [[f"needle in {name}"]]
    assert env.explain_sql(f"SELECT * FROM {_quoted(name)}").plan
    # The name as written in SQL, with its quotes, is understood too.
    assert env.describe_table(_quoted(name)).table == name


@pytest.mark.parametrize("name", NAMES)
def test_a_restricted_role_reads_them_too(odd: str, name: str) -> None:
    role = Role("clerk", tables={name: TableRule(row_filter="id = 1")})
    if _refused_on_duckdb(odd, name):
        return
    with opened(odd, role=role, settings=Settings(directives="none")) as env:
        _as_clerk(env, name)


def _as_clerk(env: Environment, name: str) -> None:
    assert env.describe_table(name).columns[1].samples == [f"needle in {name}"]
    assert env.execute_sql(f"SELECT id FROM {_quoted(name)}").rows == [[1]]
    assert env.get_distinct_values(name, "label.text").values[0].value == f"needle in {name}"
