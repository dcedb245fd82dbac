"""Every tool, as a restricted role on the full database, answers as the same tool does, unrestricted, on a
copy of the database physically reduced to that role's rows and columns (SQLite, DuckDB, PostgreSQL, MariaDB).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from fixtures.engines import MARIADB, PG_DSN, unique_name
from fixtures.policies import ROLE
from sophrosyne.environment import Environment
from sophrosyne.sql.policy import restrict
from sophrosyne.tools.base import render

TERMS = ["Operations", "Lovelace", "Ada", "sick", "D042", "Finance", "2025", "a", "zzz"]
SEARCHES = ["op", "ada", "lov", "x"]


def reduced_rows(env: Environment) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """Each visible table's visible columns and in-scope rows, read from the full database."""
    data = {}
    for name, table in restrict(ROLE, env.full_catalog).tables.items():
        rule = ROLE._rule(name)
        quote = "`" if env.dialect == "mysql" else '"'
        columns = ", ".join(f"{quote}{c.name}{quote}" for c in table.columns)
        where = f" WHERE {rule.row_filter}" if rule and rule.row_filter else ""
        result = env.db.run(f"SELECT {columns} FROM {quote}{name}{quote}{where}", limit=100_000)
        data[name] = ([c.name for c in table.columns], [tuple(r) for r in result.rows])
    return data


def ddl(env: Environment, name: str, columns: list[str], quote: str) -> str:
    table = env.full_catalog.tables[name]
    types = {c.name: c.type for c in table.columns}
    keys = [c for c in table.primary_key if c in columns]
    body = [f"{quote}{c}{quote} {types[c]}" for c in columns]
    if keys:
        body.append(f"PRIMARY KEY ({', '.join(f'{quote}{k}{quote}' for k in keys)})")
    return f"CREATE TABLE {quote}{name}{quote} ({', '.join(body)})"


@contextmanager
def reduced_copy(env: Environment, engine: str, folder: Path) -> Iterator[str]:
    data = reduced_rows(env)

    def fill(execute: Callable[[str], Any], executemany: Callable[[str, list[Any]], Any], mark: str, q: str) -> None:
        for name, (columns, rows) in data.items():
            execute(ddl(env, name, columns, q))
            if rows:
                executemany(f"INSERT INTO {q}{name}{q} VALUES ({', '.join([mark] * len(columns))})", rows)

    if engine == "sqlite":
        path = folder / "reduced.sqlite"
        with closing(sqlite3.connect(path)) as conn:
            fill(conn.execute, conn.executemany, "?", '"')
            conn.commit()
        yield str(path)
    elif engine == "duckdb":
        import duckdb

        path = folder / "reduced.duckdb"
        duck = duckdb.connect(str(path))
        try:
            fill(duck.execute, duck.executemany, "?", '"')
        finally:
            duck.close()
        yield str(path)
    elif engine == "postgres":
        import psycopg

        schema = unique_name("soph_reduced")
        with psycopg.connect(PG_DSN, autocommit=True) as pg:
            pg.execute(f'CREATE SCHEMA "{schema}"')
            try:
                pg.execute(f'SET search_path TO "{schema}"')
                with pg.cursor() as pg_cursor:
                    fill(pg_cursor.execute, pg_cursor.executemany, "%s", '"')
                yield f"{PG_DSN}?options=-csearch_path%3D{schema}"
            finally:
                pg.execute(f'DROP SCHEMA "{schema}" CASCADE')
    else:
        import pymysql

        name = unique_name("soph_reduced")
        with closing(pymysql.connect(**MARIADB, autocommit=True, charset="utf8mb4")) as conn:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
            try:
                conn.select_db(name)
                with conn.cursor() as cur:
                    fill(cur.execute, cur.executemany, "%s", "`")
                yield f"mysql://root@127.0.0.1:3306/{name}"
            finally:
                with conn.cursor() as cur:
                    cur.execute(f"DROP DATABASE `{name}`")


@pytest.fixture(scope="module")
def pair(
    env: Environment, engine: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Environment, Environment]]:
    with reduced_copy(env, engine, tmp_path_factory.mktemp(f"reduced_{engine}")) as where:
        reduced = Environment.open(where)
        try:
            yield env.for_role(ROLE), reduced
        finally:
            reduced.db.close()


def test_the_reduced_copy_is_smaller(pair: tuple[Environment, Environment], env: Environment) -> None:
    _, reduced = pair
    for table in ("departments", "employees", "absence_records"):
        full = env.execute_sql(f"SELECT COUNT(*) FROM {table}").rows[0][0]
        kept = reduced.execute_sql(f"SELECT COUNT(*) FROM {table}").rows[0][0]
        assert 0 < kept < full


def test_list_tables_and_columns_match(pair: tuple[Environment, Environment]) -> None:
    restricted, reduced = pair
    assert {t.name for t in restricted.list_tables().tables} == {t.name for t in reduced.list_tables().tables}
    for table in reduced.catalog.tables:
        assert restricted.catalog.tables[table].column_names == reduced.catalog.tables[table].column_names


def test_describe_table_samples_match(pair: tuple[Environment, Environment]) -> None:
    restricted, reduced = pair
    for table in reduced.catalog.tables:
        got, want = restricted.describe_table(table), reduced.describe_table(table)
        assert got.sampled_rows == want.sampled_rows, table
        for g, w in zip(got.columns, want.columns, strict=True):
            assert (g.name, g.null_share) == (w.name, w.null_share), table
            # Ties in sample frequency may be broken by scan order: the samples are values of the column.
            values = {row[0] for row in reduced.execute_sql(f"SELECT {_q(reduced, g.name)} FROM {table}").rows}
            assert set(g.samples) <= values, (table, g.name)
            if len(values - {None}) <= len(w.samples):
                assert set(g.samples) == set(w.samples), (table, g.name)


def test_distinct_values_match(pair: tuple[Environment, Environment]) -> None:
    restricted, reduced = pair
    for table, t in reduced.catalog.tables.items():
        for column in t.column_names:
            got = restricted.get_distinct_values(table, column, limit=1000)
            want = reduced.get_distinct_values(table, column, limit=1000)
            assert Counter((v.value, v.count) for v in got.values) == Counter(
                (v.value, v.count) for v in want.values
            ), (table, column)
            for search in SEARCHES:
                got = restricted.get_distinct_values(table, column, search=search, limit=1000)
                want = reduced.get_distinct_values(table, column, search=search, limit=1000)
                assert {v.value for v in got.values} == {v.value for v in want.values}, (table, column, search)


def test_find_rows_match(pair: tuple[Environment, Environment]) -> None:
    restricted, reduced = pair
    for term in TERMS:
        got, want = restricted.find_rows(term), reduced.find_rows(term)
        assert _found(got) == _found(want), term
        for table in reduced.catalog.tables:
            assert _found(restricted.find_rows(term, table=table)) == _found(reduced.find_rows(term, table=table))


def test_rendered_responses_hold_no_hidden_name(pair: tuple[Environment, Environment]) -> None:
    """What the agent reads (rendered text) never names a denied table or a hidden column."""
    restricted, _ = pair
    texts = [render(restricted.list_tables()), render(restricted.find_rows("a"))]
    texts += [render(restricted.describe_table(t)) for t in restricted.catalog.tables]
    texts += [render(restricted.execute_sql(f"SELECT * FROM {t}")) for t in restricted.catalog.tables]
    for text in texts:
        for name in ("notes", "Order Details", "budget", "hire_date", "reason", "department_headcount"):
            assert name not in text, (name, text[:300])


def _q(env: Environment, name: str) -> str:
    return f"`{name}`" if env.dialect == "mysql" else f'"{name}"'


def _found(result: Any) -> dict[str, Counter[tuple[Any, ...]]]:
    return {m.table: Counter(tuple(r) for r in m.rows) for m in result.matches}


@pytest.mark.parametrize("format", ["csv", "parquet"])
def test_exports_match_the_reduced_copy(pair: tuple[Environment, Environment], format: str) -> None:
    """export_sql as the restricted role writes the file the reduced copy's export writes: its row filters and
    hidden columns applied, in the file and not only in the preview."""
    restricted, reduced = pair
    for table, t in reduced.catalog.tables.items():
        order = ", ".join(_q(reduced, c) for c in t.column_names)
        sql = f"SELECT * FROM {_q(reduced, table)} ORDER BY {order}"
        got, want = restricted.export_sql(sql, format=format), reduced.export_sql(sql, format=format)
        assert (got.rows, got.columns) == (want.rows, want.columns), table
        assert _file_rows(got.path) == _file_rows(want.path), table


def test_an_export_reads_nothing_the_role_may_not(pair: tuple[Environment, Environment]) -> None:
    from sophrosyne.errors import SophrosyneError

    restricted, _ = pair
    before = _files(restricted)
    for sql in ("SELECT * FROM notes", "SELECT budget FROM departments", "SELECT reason FROM absence_records"):
        with pytest.raises(SophrosyneError):
            restricted.export_sql(sql)
    assert _files(restricted) == before


def _files(env: Environment) -> set[str]:
    from sophrosyne.exports.store import ExportStore

    return {r.id for r in ExportStore(env.settings).listed("local")}


def _file_rows(path: str | None) -> list[tuple[Any, ...]]:
    import csv

    assert path is not None
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        return [tuple(r.values()) for r in pq.read_table(path).to_pylist()]
    with open(path, newline="", encoding="utf-8") as file:
        return [tuple(r) for r in csv.reader(file)]
