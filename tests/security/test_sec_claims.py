"""A row filter on the caller's claims (`department = :claims.department`) gives, on each engine, the rows of the
copy reduced to that department (those the literal filter gives, which test_sec_tools holds to a reduced copy);
the claim reaches the driver as a parameter, so a claim written as SQL matches nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.policies import ROLE
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError
from sophrosyne.sql.policy import Role, TableRule, restrict
from sophrosyne.sql.policy.claims import CLAIMS, check_claims

CLAIMED = Role(
    "clerk",
    tables={
        name: TableRule(row_filter=(rule.row_filter or "").replace("'D042'", ":claims.department"), hidden=rule.hidden)
        for name, rule in ROLE.tables.items()
    },
    denied=ROLE.denied,
)
QUERIES = [
    "SELECT e.full_name, COUNT(a.record_id) AS n FROM employees e LEFT JOIN absence_records a "
    "ON a.employee_id = e.employee_id GROUP BY e.full_name ORDER BY e.full_name",
    "SELECT dept_code, dept_name FROM departments ORDER BY dept_code",
    "SELECT COUNT(*) FROM absence_records WHERE hours > 5",
]


@pytest.fixture
def claims() -> Iterator[None]:
    mark = CLAIMS.set({"sub": "user-ada", "department": "D042"})
    yield
    CLAIMS.reset(mark)


def rows(env: Environment, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in env.secure.run(sql, limit=10_000).result.rows), key=repr)


def test_claim_filters_give_the_reduced_copys_rows(env: Environment, engine: str, claims: None) -> None:
    if engine == "duckdb":
        with pytest.raises(ConfigError, match="do not run on duckdb yet"):
            check_claims([(CLAIMED.name, CLAIMED.claims_read())], env.dialect)
        return
    assert all("claims.department" in (r.row_filter or "") for r in CLAIMED.tables.values())
    claimed, literal = env.for_role(CLAIMED, "ada"), env.for_role(ROLE)
    for name, table in restrict(ROLE, env.full_catalog).tables.items():
        rule = ROLE.tables.get(name)
        quote = "`" if env.dialect == "mysql" else '"'
        columns = ", ".join(f"{quote}{c.name}{quote}" for c in table.columns)
        where = f" WHERE {rule.row_filter}" if rule is not None and rule.row_filter else ""
        reduced = env.db.run(f"SELECT {columns} FROM {quote}{name}{quote}{where}", limit=10_000).rows
        assert rows(claimed, f"SELECT {columns} FROM {quote}{name}{quote}") == sorted(map(tuple, reduced), key=repr)
    for sql in QUERIES:
        assert rows(claimed, sql) == rows(literal, sql)
    assert rows(claimed, "SELECT employee_id FROM employees")  # not vacuous: the department has people


def test_a_claim_written_as_sql_matches_nothing(env: Environment, engine: str) -> None:
    if engine == "duckdb":
        pytest.skip("claims in row filters are refused at start on DuckDB (above)")
    mark = CLAIMS.set({"department": "D042' OR '1'='1"})
    try:
        assert rows(env.for_role(CLAIMED, "eve"), "SELECT employee_id FROM employees") == []
    finally:
        CLAIMS.reset(mark)


def test_callers_views_are_their_own_and_bounded(
    env: Environment, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine != "sqlite":
        pytest.skip("the views are the Environment's, the same on every engine")
    from sophrosyne import environment

    monkeypatch.setattr(environment, "CALLER_VIEWS", 3)
    views = [env.for_role(CLAIMED, f"caller-{i}") for i in range(5)]
    assert len({id(v) for v in views}) == 5  # no caller shares another's caches
    assert env.for_role(CLAIMED, "caller-4") is views[4]
    assert env.for_role(CLAIMED, "caller-0") is not views[0]  # the oldest were let go
    assert sum("\x00" in key for key in env._role_envs) <= 3
