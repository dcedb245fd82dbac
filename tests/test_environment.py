"""The Environment's life: one secured path, and close() that leaves no connection or background work behind."""

from __future__ import annotations

import threading

import pytest

from sophrosyne.environment import Environment
from sophrosyne.errors import ConnectionFailed
from sophrosyne.settings import Settings
from sophrosyne.sql.secure import Secured, SecurePath


def test_the_tools_read_through_one_secure_path() -> None:
    env = Environment.open("demo")
    try:
        assert isinstance(env.secure, SecurePath)
        secured = env.secure.run("SELECT 1 AS one", limit=1)
        assert isinstance(secured, Secured)
        assert [list(row) for row in secured.result.rows] == [[1]]
        assert secured.executed == "SELECT 1 AS one"
    finally:
        env.close()


def test_close_closes_the_database_and_is_idempotent() -> None:
    env = Environment.open("demo")
    view = env.for_role(env.role)
    env.close()
    env.close()  # a second close does nothing
    with pytest.raises(ConnectionFailed, match="was closed"):
        view.execute_sql("SELECT 1")


def test_close_waits_for_the_indexes_built_in_the_background() -> None:
    before = set(threading.enumerate())
    with Environment.open("demo", settings=Settings(directives="directives")) as env:
        env.warm()
        started = [t for t in threading.enumerate() if t not in before and t.name == "sophrosyne-warm"]
    assert env.db.closed
    assert not any(t.is_alive() for t in started)


def _counting_guard(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from sophrosyne.sql import guard

    checked: list[str] = []
    real = guard.check_sql

    def counting(sql: str, *args: object, **kwargs: object) -> object:
        checked.append(sql)
        return real(sql, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(guard, "check_sql", counting)
    return checked


def test_a_statement_the_tools_built_is_checked_once_for_a_role_without_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = _counting_guard(monkeypatch)
    with Environment.open("demo") as env:
        first = env.describe_table("employees")
        again = env.describe_table("employees")
        assert again.columns == first.columns
        # The sample statement, parsed the first time only (join inference reads other statements meanwhile).
        assert len([sql for sql in checked if sql.startswith('SELECT * FROM "employees"')]) == 1
        # What the user writes is checked once per text too (sql/secure.py keeps it prepared), and each new text.
        env.execute_sql("SELECT 1 AS one")
        env.execute_sql("SELECT 1 AS one")
        env.execute_sql("SELECT 2 AS two")
        assert checked.count("SELECT 1 AS one") == 1
        assert checked.count("SELECT 2 AS two") == 1


def test_a_role_with_rules_has_each_statement_checked_and_rewritten_once_per_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sophrosyne.sql.policy import Role, TableRule

    checked = _counting_guard(monkeypatch)
    with Environment.open("demo") as env:
        role = Role("scoped", tables={"employees": TableRule(columns=["employee_id", "first_name"])})
        view = env.for_role(role)
        for _ in range(2):
            described = view.describe_table("employees")
            assert [c.name for c in described.columns] == ["employee_id", "first_name"]
        # Kept with the catalog its rewrite read: the same catalog, the same rewrite (a new catalog prepares it
        # again: tests/sql/test_secured_path.py).
        assert len([sql for sql in checked if sql.startswith('SELECT * FROM "employees"')]) == 1


def test_a_checked_statement_that_fails_says_what_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from sophrosyne.errors import UnknownColumn

    with Environment.open("demo") as env:
        sql = "SELECT nope FROM employees LIMIT 1"
        with pytest.raises(UnknownColumn, match="no column `nope`") as before:
            env.secure.query(sql, limit=1)
        env.secure._checked[sql] = sql  # as if it had run before the column went away
        with pytest.raises(UnknownColumn, match="no column `nope`") as after:
            env.secure.query(sql, limit=1)
        assert str(after.value) == str(before.value)
