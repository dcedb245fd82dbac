"""Tools declared in a policy file (`[[tools]]`): every way a declaration is refused at start, with the file and
the line, and the values a call gives bound by the driver, never written into the statement."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.declared import ABSENCES, D042, PEOPLE
from fixtures.engines import ROWS, build_sqlite, built
from fixtures.policies import POLICY
from sophrosyne.environment import Environment
from sophrosyne.errors import AccessDenied, ConfigError, InvalidArgument
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import load_policy


def write(folder: Path, tools: str, policy: str = POLICY) -> Path:
    path = folder / "policy.toml"
    path.write_text(policy + tools)
    return path


def opened(target: str, policy: Path, role: str = "ops") -> Environment:
    return Environment.open(target, settings=Settings().replaced(policy_file=policy), role_name=role)


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("declared") / "hr.sqlite")


def refused_at_start(hr: Path, tmp_path: Path, tools: str) -> ConfigError:
    policy = write(tmp_path, tools)
    with pytest.raises(ConfigError) as refused:
        opened(str(hr), policy).close()
    line = POLICY.count("\n") + tools.count("\n", 0, tools.index("[[tools]]")) + 1
    assert f"{policy}:{line}" in refused.value.message  # the file and the line of the [[tools]] entry
    return refused.value


def test_a_write_statement_is_refused_at_start(hr: Path, tmp_path: Path) -> None:
    tools = ABSENCES.replace("SELECT employee_id, COUNT(*) AS absences, SUM(hours) AS hours FROM", "DELETE FROM")
    tools = tools.replace(" GROUP BY employee_id ORDER BY employee_id", "")
    error = refused_at_start(hr, tmp_path, tools)
    assert "refused" in error.message and "DELETE" in error.message


@pytest.mark.parametrize(
    ("wrong", "named"),
    [("FROM absence_records", "FROM absence_recordz"), ("SUM(hours)", "SUM(hourz)")],
    ids=["table", "column"],
)
def test_an_unknown_name_is_refused_at_start(hr: Path, tmp_path: Path, wrong: str, named: str) -> None:
    error = refused_at_start(hr, tmp_path, ABSENCES.replace(wrong, named))
    assert "names what the database lacks" in error.message


def test_an_unused_parameter_is_refused_at_start(hr: Path, tmp_path: Path) -> None:
    tools = ABSENCES.replace("BETWEEN :start AND :end", "<= :end")
    assert "declares parameter `start`, which its sql does not use" in refused_at_start(hr, tmp_path, tools).message


def test_an_undeclared_parameter_is_refused_at_start(hr: Path, tmp_path: Path) -> None:
    tools = ABSENCES.replace("GROUP BY", "AND hours > :least GROUP BY")
    assert "uses `:least`, which is not a declared parameter" in refused_at_start(hr, tmp_path, tools).message


@pytest.mark.parametrize(
    "default",
    ["\"2020-01-01' OR '1'='1\"", '"2020-01-01; DROP TABLE employees"', "1", "2019-12-31"],
    ids=["quote", "statement", "not-a-date", "below-minimum"],
)
def test_an_injection_or_a_wrong_value_as_a_default_is_refused_at_start(hr: Path, tmp_path: Path, default: str) -> None:
    tools = ABSENCES.replace('description = "First day.",', f'description = "First day.", default = {default},')
    assert "its `default` is not valid" in refused_at_start(hr, tmp_path, tools).message


@pytest.mark.parametrize(
    ("selected", "why"),
    [("full_name, hire_date", "hidden column"), ("body", "denied table")],
)
def test_a_role_that_would_see_what_it_may_not_is_refused_at_start(
    hr: Path, tmp_path: Path, selected: str, why: str
) -> None:
    tools = PEOPLE.replace("employee_id, full_name", selected)
    if why == "denied table":
        tools = PEOPLE.replace(
            "employee_id, full_name FROM employees WHERE department = :code ORDER BY employee_id",
            "body FROM notes WHERE tag = :code",
        )
    error = refused_at_start(hr, tmp_path, tools)
    assert "role `ops` may not see all it reads" in error.message, why


def test_an_unknown_role_and_a_bad_declaration_are_refused_with_the_file(tmp_path: Path) -> None:
    for tools, said in [
        (PEOPLE.replace('roles = ["ops"]', 'roles = ["opps"]'), "names unknown role `opps`"),
        (PEOPLE.replace('type = "string"', 'type = "text"'), "`type` must be one of string, integer, number"),
        (PEOPLE.replace("people_of", "People Of"), "a tool's `name` is lower-case"),
        (PEOPLE.replace("= :code", "= ?"), "name each one (:name)"),
        (PEOPLE + PEOPLE, "a second tool is named `people_of`"),
        (PEOPLE.replace("= :code", "= :code || '\\u0000code\\u0000'"), "holds a NUL character"),
    ]:
        with pytest.raises(ConfigError) as refused:
            load_policy(write(tmp_path, tools))
        assert said in refused.value.message and str(tmp_path / "policy.toml") in refused.value.message


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with built(request.param, tmp_path_factory.mktemp(request.param), "declared") as found:
        yield found


def test_values_are_bound_never_written_into_the_statement(target: str, tmp_path: Path) -> None:
    policy = write(tmp_path, ABSENCES + PEOPLE)
    with opened(target, policy) as env:
        (people,) = [t for t in env.declared_tools if t.name == "people_of"]
        assert [r[0] for r in env.run_declared(people, {"code": "D042"}).rows] == D042
        # The row filter holds: another department's code finds nobody for this role.
        assert env.run_declared(people, {"code": "D017"}).rows == []
        for attack in ("D042' OR '1'='1", "x'; DROP TABLE employees; --", "D042%", "%(code)s"):
            found = env.run_declared(people, {"code": attack})
            assert found.rows == [], attack  # a value: no department has that code
            assert "OR '1'" not in found.sql_executed and "DROP" not in found.sql_executed
        with pytest.raises(InvalidArgument, match="must be text"):
            env.run_declared(people, {"code": "D042" * 11})  # past its max_length
        (absences,) = [t for t in env.declared_tools if t.name == "absences_between"]
        with pytest.raises(InvalidArgument, match="must be a date"):
            env.run_declared(absences, {"start": "2025-01-01' OR 1=1 --", "end": "2025-12-31"})
        period = env.run_declared(absences, {"start": dt.date(2025, 9, 1), "end": "2025-09-30"})
        in_period = [a for a in ROWS["absence_records"] if dt.date(2025, 9, 1) <= a[2] <= dt.date(2025, 9, 30)]
        assert [r[0] for r in period.rows] == sorted({a[1] for a in in_period if a[1] in D042})
        admin = env.for_role(env.policy.role("admin"))  # type: ignore[union-attr]
        assert len(admin.run_declared(absences, {"start": "2025-09-01", "end": "2025-09-30"}).rows) > len(period.rows)
        with pytest.raises(AccessDenied, match="does not have the tool `people_of`"):
            admin.run_declared(people, {"code": "D042"})


def test_parameters_may_be_written_as_tables_of_their_own(hr: Path, tmp_path: Path) -> None:
    """`[[tools.parameters]]`, as DBHub's files write them, reads as the inline list does."""
    tables = PEOPLE.replace(
        'parameters = [{ name = "code", type = "string", description = "A department code such as D042.", '
        "max_length = 40 }]",
        '[[tools.parameters]]\nname = "code"\ntype = "enum"\ndescription = "A code."\nvalues = ["D042", "D017"]',
    )
    with opened(str(hr), write(tmp_path, tables)) as env:
        (people,) = env.declared_tools
        assert people.parameters[0].values == ("D042", "D017")
        assert [r[0] for r in env.run_declared(people, {"code": "D042"}).rows] == D042
        with pytest.raises(InvalidArgument, match="must be one of D042, D017"):
            env.run_declared(people, {"code": "D063"})


def test_an_engine_whose_driver_is_not_given_values_refuses_declared_tools_at_start(tmp_path: Path) -> None:
    from fixtures.engines import build_duckdb

    database = build_duckdb(tmp_path / "hr.duckdb")
    policy = write(tmp_path, PEOPLE)
    with pytest.raises(ConfigError, match="do not run on duckdb yet") as refused:
        opened(str(database), policy, role="ops").close()
    assert f"{policy}:" in refused.value.message
