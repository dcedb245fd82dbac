"""Finding 10: a policy that names what the database lacks is refused at start, with the file and the line.

A misspelt name in `deny` (`departmnts`) used to be accepted, leaving the table it meant readable in full.
Every name a policy gives (denied tables, table rules, visible and hidden columns, the tables and columns of
a row filter, the role a sources file names) must exist, else the policy is refused where it is loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.engines import build_sqlite, postgres_schema
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError, UnknownTable
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources, load_sources

ROOT = Path(__file__).parent.parent.parent

GOOD = """\
default_role = "clerk"

[roles.admin]

[roles.clerk]
deny = [
  "notes",
  "departments",
]
unlisted = "allow"

[roles.clerk.tables.employees]
row_filter = "department = 'D042'"
hidden = ["manager_id"]

[roles.clerk.tables.absence_records]
row_filter = "employee_id IN (SELECT e.employee_id FROM employees AS e WHERE e.department = 'D042')"
"""


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("names") / "hr.sqlite")


def opened(target: str | Path, policy: Path, role: str | None = None) -> Environment:
    return Environment.open(str(target), settings=Settings(policy_file=policy, directives="none"), role_name=role)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_correct_policy_loads_and_applies(hr: Path, tmp_path: Path) -> None:
    env = opened(hr, write(tmp_path, GOOD))
    try:
        assert "departments" not in {t.name for t in env.list_tables().tables}
        with pytest.raises(UnknownTable):
            env.execute_sql("SELECT * FROM departments")
        assert {c.name for c in env.describe_table("employees").columns} == {
            "employee_id",
            "full_name",
            "department",
            "hire_date",
        }
    finally:
        env.db.close()


@pytest.mark.parametrize(
    ("old", "new", "needle", "said", "near"),
    [
        ('  "departments",', '  "departmnts",', '"departmnts"', "denies table `departmnts`", "departments"),
        ("[roles.clerk.tables.employees]", "[roles.clerk.tables.employes]", "employes]", "`employes`", "employees"),
        (
            'hidden = ["manager_id"]',
            'hidden = ["manager"]',
            'hidden = ["manager"]',
            "no column `manager`",
            "manager_id",
        ),
        (
            "department = 'D042'\"",
            "departement = 'D042'\"",
            "departement",
            "unknown column `departement`",
            "department",
        ),
        (
            "SELECT e.employee_id FROM employees AS e WHERE e.department",
            "SELECT e.employee_id FROM employees AS e WHERE e.dept",
            "e.dept ",
            "unknown column `e.dept`",
            "department",
        ),
        ("FROM employees AS e", "FROM employee AS e", "FROM employee AS e", "unknown table `employee`", "employees"),
    ],
    ids=["deny", "table-rule", "hidden-column", "row-filter-column", "subquery-column", "row-filter-table"],
)
def test_a_misspelt_name_is_refused_at_open_with_the_file_and_the_line(
    hr: Path, tmp_path: Path, old: str, new: str, needle: str, said: str, near: str
) -> None:
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        env = opened(hr, path)
        env.db.close()  # pragma: no cover - only reached when the policy is (wrongly) accepted
    assert f"{path}:{line_of(text, needle)}:" in info.value.message
    assert said in info.value.message
    assert info.value.hint is not None and f"Did you mean `{near}`?" in info.value.hint


def test_the_denied_table_a_typo_meant_is_not_served(hr: Path, tmp_path: Path) -> None:
    """The attack as found: `deny = ["salaires"]` (here `departmnts`) and the table stays readable."""
    path = write(tmp_path, GOOD.replace('  "departments",', '  "departmnts",'))
    try:
        env = opened(hr, path)
    except ConfigError:
        return  # refused at start: nothing is served
    try:  # pragma: no cover - the old behaviour, which this test exists to catch
        rows = env.execute_sql("SELECT COUNT(*) FROM departments").rows
    finally:
        env.db.close()
    pytest.fail(f"a policy denying a misspelt table was served, and the table it meant read {rows}")


def test_a_server_without_a_probe_refuses_every_call_with_the_line(hr: Path, tmp_path: Path) -> None:
    text = GOOD.replace('  "departments",', '  "departmnts",')
    path = write(tmp_path, text)
    settings = Settings(policy_file=path, directives="none")
    env = Environment.open(str(hr), settings=settings, probe=False)
    try:
        for _ in range(2):
            with pytest.raises(ConfigError, match=f"{path}:{line_of(text, 'departmnts')}:"):
                env.execute_sql("SELECT COUNT(*) FROM departments")
    finally:
        env.db.close()


def test_an_unknown_role_in_a_sources_file_is_refused_with_its_line(hr: Path, tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    sources = tmp_path / "sources.toml"
    text = f'[sources.hr]\npath = "{hr}"\npolicy = "policy.toml"\nrole = "clerc"\n'
    sources.write_text(text)
    with pytest.raises(ConfigError) as info:
        Sources.open(load_sources(sources), Settings(directives="none")).close()
    assert f"{sources}:4:" in info.value.message and "`clerc`" in info.value.message
    assert info.value.hint is not None and "Did you mean `clerk`?" in info.value.hint
    sources.write_text(text.replace("clerc", "clerk"))
    opened_sources = Sources.open(load_sources(sources), Settings(directives="none"))
    try:
        assert opened_sources.get("hr").role.name == "clerk"
    finally:
        opened_sources.close()


def test_unknown_roles_in_the_policy_name_their_line(tmp_path: Path) -> None:
    from sophrosyne.sql.policy import load_policy

    path = write(tmp_path, 'default_role = "clark"\n' + GOOD.split("\n", 1)[1])
    with pytest.raises(ConfigError, match=f"{path}:1: `default_role` names unknown role `clark`") as info:
        load_policy(path)
    assert info.value.hint is not None and "Did you mean `clerk`?" in info.value.hint


@pytest.fixture
def pg_hr() -> Iterator[str]:
    with postgres_schema("soph_secnames") as url:
        yield url


@pytest.mark.engine
def test_a_deny_typo_is_refused_on_postgresql(pg_hr: str, tmp_path: Path) -> None:
    text = GOOD.replace('  "departments",', '  "Departmnts",')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=f"{path}:{line_of(text, 'Departmnts')}: role `clerk` denies"):
        opened(pg_hr, path).db.close()
    env = opened(pg_hr, write(tmp_path, GOOD.replace('  "departments",', '  "Departments",')))  # case aside
    try:
        with pytest.raises(UnknownTable):
            env.execute_sql("SELECT * FROM departments")
    finally:
        env.db.close()


def test_the_shipped_example_policy_checks_against_the_demo_database() -> None:
    env = Environment.open(
        "demo", settings=Settings(policy_file=ROOT / "examples" / "policy.toml", directives="none"), role_name="trainer"
    )
    try:
        assert {t.name for t in env.list_tables().tables} == {"training_courses", "training_enrollments", "employees"}
    finally:
        env.db.close()


def test_the_sample_policy_of_docs_policy_md_checks_against_the_demo_database(tmp_path: Path) -> None:
    import re

    text = (ROOT / "docs" / "policy.md").read_text()
    sample = re.search(r"```toml\n(.*?)```", text, re.S)
    assert sample is not None
    env = opened("demo", write(tmp_path, sample.group(1)))
    try:
        assert "salaries" not in {t.name for t in env.list_tables().tables}
    finally:
        env.db.close()
