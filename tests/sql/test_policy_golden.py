"""Golden rewrite cases: tests/golden/rewrite/NNN_name.sql holds a role, a dialect, a query and the result.

Set SOPHROSYNE_UPDATE_GOLDEN=1 to write the current output into the files, then review the diff.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from fixtures.engines import MARIADB, PG_DSN, SERVER_ENGINES, unique_name, unreachable
from sophrosyne.errors import SophrosyneError
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.guard import check_sql
from sophrosyne.sql.policy import Policy, load_policy, rewrite_for

FOLDER = Path(__file__).parent.parent / "golden" / "rewrite"
CASES = sorted(FOLDER.glob("[0-9]*.sql"))
UPDATE = os.environ.get("SOPHROSYNE_UPDATE_GOLDEN") == "1"


@dataclass
class Case:
    path: Path
    role: str
    dialect: str
    sql: str
    expected: str

    @classmethod
    def read(cls, path: Path) -> Case:
        text = path.read_text()
        head, _, expected = text.partition("-- expected:\n")
        lines = head.splitlines()
        meta = dict(line[3:].split(": ", 1) for line in lines if line.startswith("-- "))
        sql = "\n".join(line for line in lines if not line.startswith("-- "))
        return cls(path, meta["role"], meta["dialect"], sql.strip(), expected.strip())

    def write(self, result: str) -> None:
        head = self.path.read_text().partition("-- expected:\n")[0]
        self.path.write_text(f"{head}-- expected:\n{result}\n")


def golden_catalog() -> Catalog:
    tables: dict[str, Table] = {}
    for statement in sqlglot.parse((FOLDER / "schema.sql").read_text(), read="sqlite"):
        assert isinstance(statement, exp.Create)
        schema = statement.this
        assert isinstance(schema, exp.Schema)
        name = schema.this.name
        columns = [
            Column(c.name, c.args["kind"].sql() if isinstance(c, exp.ColumnDef) and c.args.get("kind") else "")
            for c in schema.expressions
        ]
        kind = "view" if statement.kind == "VIEW" else "table"
        keys = [
            c.name
            for c in schema.expressions
            if isinstance(c, exp.ColumnDef)
            and any(isinstance(k.kind, exp.PrimaryKeyColumnConstraint) for k in c.constraints)
        ]
        tables[name] = Table(name=name, columns=columns, kind=kind, primary_key=keys)
    return Catalog(tables=tables, dialect="sqlite")


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(FOLDER / "policy.toml")


def rewritten(case: Case, policy: Policy, catalog: Catalog) -> str:
    try:
        expression = sqlglot.parse_one(case.sql, read=case.dialect)
        result = rewrite_for(policy.role(case.role), expression, catalog, case.dialect)
    except SophrosyneError as error:
        return f"error {error.code}: {error.message}"
    return result.sql(dialect=case.dialect, pretty=True)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_rewrite_golden(path: Path, policy: Policy) -> None:
    case = Case.read(path)
    result = rewritten(case, policy, golden_catalog())
    if UPDATE:
        case.write(result)
        return
    assert result == case.expected


DATA = """
INSERT INTO departments VALUES ('D001', 'Finance', 10), ('D042', 'Operations', 20);
INSERT INTO employees VALUES (1, 'Ada', 'D042', NULL, 100), (2, 'Bob', 'D042', 1, 90), (3, 'Cy', 'D001', NULL, 120);
INSERT INTO absence_records VALUES (1, 2, '2025-11-03', 'sick'), (2, 3, '2025-11-04', 'sick');
INSERT INTO salaries VALUES (1, 100), (2, 90), (3, 120);
INSERT INTO "Projects" VALUES (1, 'D042', 'Move'), (2, 'D001', 'Audit');
"""
ENGINES = {"sqlite": "sqlite", "duckdb": "duckdb", "postgres": "postgres", "mysql": "mariadb"}


def statements(dialect: str) -> list[str]:
    """The schema and rows of the golden database, in `dialect`."""
    text = (FOLDER / "schema.sql").read_text() + DATA
    return [s for s in sqlglot.transpile(text, read="sqlite", write=dialect) if s.strip()]


@contextmanager
def golden_database(dialect: str, folder: Path) -> Iterator[Callable[[str], object]]:
    """The golden schema with a few rows on the dialect's engine; yields a function that runs a query."""
    if dialect == "sqlite":
        with closing(sqlite3.connect(folder / "golden.sqlite")) as db:
            for statement in statements(dialect):
                db.execute(statement)
            yield lambda sql: db.execute(sql).fetchall()
    elif dialect == "duckdb":
        import duckdb

        duck = duckdb.connect()
        for statement in statements(dialect):
            duck.execute(statement)
        yield lambda sql: duck.execute(sql).fetchall()
        duck.close()
    elif dialect == "postgres":
        import psycopg

        try:
            pg = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
        except psycopg.Error as exc:
            unreachable("PostgreSQL", str(exc).strip().splitlines()[0])
        schema = unique_name("soph_golden")
        with pg:
            pg.execute(f'CREATE SCHEMA "{schema}"')
            try:
                pg.execute(f'SET search_path TO "{schema}"')
                for statement in statements(dialect):
                    pg.execute(statement.encode())
                yield lambda sql: pg.execute(sql.encode()).fetchall()
            finally:
                pg.execute(f'DROP SCHEMA "{schema}" CASCADE')
    else:
        import pymysql

        try:
            my = pymysql.connect(**MARIADB, autocommit=True, connect_timeout=3)
        except pymysql.MySQLError as exc:
            unreachable("MariaDB", str(exc))
        name = unique_name("soph_golden")
        with closing(my), my.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{name}`")
            try:
                my.select_db(name)
                for statement in statements(dialect):
                    cursor.execute(statement)

                def run(sql: str) -> object:
                    cursor.execute(sql)
                    return cursor.fetchall()

                yield run
            finally:
                cursor.execute(f"DROP DATABASE `{name}`")


@pytest.mark.parametrize(
    "dialect",
    [pytest.param(d, marks=pytest.mark.engine) if e in SERVER_ENGINES else d for d, e in ENGINES.items()],
)
def test_rewritten_cases_run_on_their_engine(dialect: str, policy: Policy, tmp_path: Path) -> None:
    """Every rewritten case runs on a real database of its dialect, except those whose name says it fails."""
    cases = [c for c in map(Case.read, CASES) if c.dialect == dialect and not c.expected.startswith("error ")]
    assert cases
    failed = []
    with golden_database(dialect, tmp_path) as run:
        for case in cases:
            try:
                run(case.expected)
            except Exception as error:  # the engine's own error types differ per driver
                if "fails_in_engine" not in case.path.stem:
                    failed.append((case.path.stem, str(error)[:200]))
            else:
                if "fails_in_engine" in case.path.stem:
                    failed.append((case.path.stem, "ran"))
    assert failed == []


def test_spark_rewrites_are_spark_sql_the_guard_accepts() -> None:
    """The rewrite's Spark SQL parses in sqlglot's spark dialect and passes the guard there again (the real
    engine runs it in the tests of engines/spark.py)."""
    cases = [c for c in map(Case.read, CASES) if c.dialect == "spark" and not c.expected.startswith("error ")]
    assert len(cases) >= 6
    for case in cases:
        check_sql(case.expected, "spark")
        assert sqlglot.parse_one(case.expected, read="spark").sql(dialect="spark")
