"""Adversarial corpus against a restricted role, on SQLite, DuckDB, PostgreSQL and MariaDB.

Every case is sent to `execute_sql` as a role that sees department D042 only, without budgets, hire dates,
absence reasons, notes or order details. A case passes when it is refused with a message that says why, or
when its rows hold no value the role may not see. The database must be unchanged afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.adversarial import CASES, run_corpus
from fixtures.engines import SERVER_ENGINES, content_checksum, sha256_file
from fixtures.policies import HIDDEN, ROLE, SECRETS, leaked
from sophrosyne.environment import Environment
from sophrosyne.errors import QueryFailed, UnknownColumn, UnknownTable


def render(template: str, engine: str, target: str) -> str:
    quote = {"mariadb": "`"}.get(engine, '"')
    if engine == "postgres":
        schema = target.rsplit("%3D", 1)[1]
    elif engine == "mariadb":
        schema = target.rsplit("/", 1)[1]
    else:
        schema = "main"
    return template.replace("{q}", quote).replace("{schema}", schema)


@pytest.fixture(scope="module")
def restricted(env: Environment) -> Environment:
    return env.for_role(ROLE)


def fingerprint(engine: str, target: str) -> str:
    return content_checksum(engine, target) if engine in SERVER_ENGINES else sha256_file(target)


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 150
    assert len(set(CASES)) == len(CASES)
    assert len(SECRETS) > 40


def test_secrets_really_are_in_the_database(env: Environment) -> None:
    """Guards the test: the unrestricted role does see secret values, so the detector can fire."""
    rows = env.execute_sql("SELECT body FROM notes").rows + env.execute_sql("SELECT dept_name FROM departments").rows
    assert leaked(rows)


def test_adversarial_corpus_reaches_no_data(restricted: Environment, engine: str, target: str) -> None:
    before = fingerprint(engine, target)
    outcome = run_corpus(restricted, lambda template: render(template, engine, target))
    assert outcome.leaks == []
    assert outcome.silent == []
    assert fingerprint(engine, target) == before


def test_denied_and_missing_tables_look_the_same(restricted: Environment) -> None:
    def message(call: Any) -> str:
        with pytest.raises(UnknownTable) as info:
            call()
        return info.value.message

    for name in ("notes", "department_headcount", "sqlite_master"):
        assert message(lambda n=name: restricted.execute_sql(f"SELECT * FROM {n}")).replace(name, "X") == message(
            lambda: restricted.execute_sql("SELECT * FROM no_such_table")
        ).replace("no_such_table", "X")
        assert message(lambda n=name: restricted.describe_table(n)).replace(name, "X") == message(
            lambda: restricted.describe_table("no_such_table")
        ).replace("no_such_table", "X")


def test_hidden_columns_are_absent_from_every_tool(restricted: Environment) -> None:
    tables = {t.name for t in restricted.list_tables().tables}
    assert tables == {"departments", "employees", "absence_records"}
    for table, column in HIDDEN:
        described = restricted.describe_table(table)
        assert column not in [c.name for c in described.columns]
        with pytest.raises(UnknownColumn):
            restricted.get_distinct_values(table, column)
        with pytest.raises((UnknownColumn, QueryFailed)):
            restricted.execute_sql(f"SELECT {column} FROM {table}")


def test_tools_return_only_rows_in_scope(restricted: Environment) -> None:
    names = {v.value for v in restricted.get_distinct_values("departments", "dept_name").values}
    assert names == {"Operations and Logistics"}
    codes = {v.value for v in restricted.get_distinct_values("employees", "department").values}
    assert codes == {"D042"}
    for term in ["Finance", "Research", "discount", "alpha", "Lovelace", "Costa", "sick"]:
        found = restricted.find_rows(term)
        assert leaked([row for m in found.matches for row in m.rows]) == [], term
    for table in ("departments", "employees", "absence_records"):
        described = restricted.describe_table(table)
        assert leaked([c.samples for c in described.columns]) == []
        assert described.row_estimate is None


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT (SELECT COUNT(*) FROM employees), 1 + (SELECT MAX(e.employee_id) FROM employees AS e) FROM departments",
        "SELECT COUNT(*) * 100 / (SELECT COUNT(*) FROM employees WHERE department = 'D042') FROM employees",
        'SELECT (SELECT MIN("dept_code") FROM "departments") FROM employees AS employees',
    ],
)
def test_headers_read_as_written_whatever_the_role(env: Environment, restricted: Environment, sql: str) -> None:
    """An unaliased computed column is named by its text (SQLite, MariaDB) or the engine's rendering of it
    (DuckDB): a role's renamed references (`_sec_employees AS employees`) must not show in the header."""
    expected = env.execute_sql(sql).columns
    got = restricted.execute_sql(sql).columns
    assert got == expected
    assert not any("_sec_" in column for column in got)
