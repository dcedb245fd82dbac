"""Every name a policy gives, checked against a catalog (sql/policy/names.py), each error word for word with
the file's line: a misspelt table, column or row-filter name fails at start and says what was likely meant."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.policy import load_policy, parse_policy
from sophrosyne.sql.policy.names import closest

MUST = "Every name a policy gives must exist in the database (docs/policy.md, The policy file)."


def _table(name: str, *columns: str, schema: str | None = None) -> Table:
    return Table(name=name, columns=[Column(c, "TEXT") for c in columns], schema=schema)


CATALOG = Catalog(
    tables={
        t.name: t
        for t in [
            _table("employees", "employee_id", "full_name", "department", "manager_id"),
            _table("departments", "dept_code", "dept_name"),
            *(_table(f"db.{s}.orders", "id", schema=f"db.{s}") for s in "abc"),
            *(_table(f"db.{s}.events", "id", schema=f"db.{s}") for s in "abcd"),
        ]
    },
    dialect="postgres",
)
HEAD = 'default_role = "r"\n[roles.r]\n'
# name -> (what follows [roles.r], the line the error names, the message after `file:line: `, the hint)
REFUSED: dict[str, tuple[str, int, str, str]] = {
    "deny_misspelt": (
        'deny = ["employes"]',
        3,
        "role `r` denies table `employes`: no such table in the database, so the table it meant would stay readable.",
        f"Did you mean `employees`? {MUST}",
    ),
    "deny_unlike_any": (
        'deny = ["zzzz"]',
        3,
        "role `r` denies table `zzzz`: no such table in the database, so the table it meant would stay readable.",
        f"{MUST} Check the table's spelling.",
    ),
    "rule_misspelt": (
        "[roles.r.tables.employes]",
        3,
        "role `r` has a rule for table `employes`: no such table in the database.",
        f"Did you mean `employees`? {MUST}",
    ),
    "column_misspelt": (
        '[roles.r.tables.employees]\ncolumns = ["employee_id", "full_nam"]',
        4,
        "role `r`, table `employees`: no column `full_nam` (in `columns`).",
        f"Did you mean `full_name`? {MUST}",
    ),
    "hidden_unlike_any": (
        '[roles.r.tables.employees]\nhidden = ["qqqq"]',
        4,
        "role `r`, table `employees`: no column `qqqq` (in `hidden`).",
        f"{MUST} Check the column's spelling.",
    ),
    "filter_column_misspelt": (
        "[roles.r.tables.employees]\nrow_filter = \"departmnt = 'D1'\"",
        4,
        "role `r`, table `employees`: the row filter uses unknown column `departmnt`.",
        f"Did you mean `department`? {MUST}",
    ),
    "filter_table_misspelt": (
        '[roles.r.tables.employees]\nrow_filter = "department IN (SELECT dept_code FROM departmnts)"',
        4,
        "role `r`, table `employees`: the row filter reads unknown table `departmnts`.",
        f"Did you mean `departments`? {MUST}",
    ),
    "filter_column_of_another_table": (
        "[roles.r.tables.employees]\n"
        "row_filter = \"department IN (SELECT D.dept_code FROM departments D WHERE D.full_name = 'x')\"",
        4,
        "role `r`, table `employees`: the row filter uses unknown column `D.full_name`.",
        f"{MUST} Check the column's spelling.",
    ),
    "filter_column_unqualified_outside_its_table": (
        "[roles.r.tables.departments]\nrow_filter = \"full_name = 'x'\"",
        4,
        "role `r`, table `departments`: the row filter uses unknown column `full_name`.",
        f"{MUST} Check the column's spelling.",
    ),
    "name_of_three_tables": (
        "[roles.r.tables.orders]",
        3,
        "role `r` names table `orders`, which means 3 tables: `db.a.orders`, `db.b.orders`, `db.c.orders`.",
        "Write the table's qualified name (`schema.table` or `catalog.schema.table`).",
    ),
    "name_of_four_tables": (
        'deny = ["events"]',
        3,
        "role `r` names table `events`, which means 4 tables: `db.a.events`, `db.b.events`, `db.c.events`, ....",
        "Write the table's qualified name (`schema.table` or `catalog.schema.table`).",
    ),
    "rule_unlike_any": (
        "[roles.r.tables.zzzz]",
        3,
        "role `r` has a rule for table `zzzz`: no such table in the database.",
        f"{MUST} Check the table's spelling.",
    ),
    "denied_name_of_four_tables_on_its_own_line": (
        'deny = [\n  "employees",\n  "events",\n]',
        5,
        "role `r` names table `events`, which means 4 tables: `db.a.events`, `db.b.events`, `db.c.events`, ....",
        "Write the table's qualified name (`schema.table` or `catalog.schema.table`).",
    ),
    "hidden_column_on_its_own_line": (
        '[roles.r.tables.employees]\nhidden = [\n  "full_name",\n  "salary",\n]',
        6,
        "role `r`, table `employees`: no column `salary` (in `hidden`).",
        f"{MUST} Check the column's spelling.",
    ),
    "filter_table_unlike_any": (
        '[roles.r.tables.employees]\nrow_filter = "department IN (SELECT dept_code FROM qqqq)"',
        4,
        "role `r`, table `employees`: the row filter reads unknown table `qqqq`.",
        f"{MUST} Check the table's spelling.",
    ),
    "filter_column_qualified_by_an_aliased_tables_name": (
        "[roles.r.tables.employees]\n"
        "row_filter = \"department IN (SELECT dept_code FROM departments AS d WHERE departments.full_name = 'x')\"",
        4,
        "role `r`, table `employees`: the row filter uses unknown column `departments.full_name`.",
        f"{MUST} Check the column's spelling.",
    ),
    "filter_column_of_a_deeper_subquery": (
        "[roles.r.tables.departments]\n"
        "row_filter = \"dept_code IN (SELECT x.dept_code FROM departments AS x WHERE full_name = 'a' "
        'AND x.dept_code IN (SELECT department FROM employees))"',
        4,
        "role `r`, table `departments`: the row filter uses unknown column `full_name`.",
        f"{MUST} Check the column's spelling.",
    ),
}
ACCEPTED: dict[str, str] = {
    "filter_reads_a_subquery_table": (
        "[roles.r.tables.employees]\n"
        "row_filter = \"department IN (SELECT dept_code FROM departments WHERE dept_name = 'x')\""
    ),
    "filter_qualified_by_alias": (
        "[roles.r.tables.employees]\n"
        "row_filter = \"department IN (SELECT d.dept_code FROM departments AS d WHERE d.dept_name = 'x')\""
    ),
    "filter_qualified_by_table": "[roles.r.tables.employees]\nrow_filter = \"employees.department = 'D1'\"",
    "filter_column_of_an_outer_query": (
        "[roles.r.tables.employees]\n"
        'row_filter = "department IN (SELECT dept_code FROM departments AS d '
        "WHERE EXISTS (SELECT 1 FROM employees AS e2 WHERE dept_name = 'x'))\""
    ),
    "whole_warehouse_name": '[roles.r.tables."db.a.orders"]\nrow_filter = "id = 1"',
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_name_the_catalog_does_not_hold_is_refused_with_its_line(name: str, tmp_path: Path) -> None:
    body, line, message, hint = REFUSED[name]
    path = tmp_path / "policy.toml"
    path.write_text(HEAD + body + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_policy(path).check(CATALOG)
    assert (caught.value.message, caught.value.hint) == (f"{path}:{line}: {message}", hint)


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_names_the_catalog_holds_pass(name: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(HEAD + ACCEPTED[name] + "\n", encoding="utf-8")
    load_policy(path).check(CATALOG)


def test_without_a_file_the_error_begins_with_the_policy() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(tomllib.loads(HEAD + 'deny = ["employes"]\n')).check(CATALOG)
    assert caught.value.message.startswith("the policy: role `r` denies table `employes`: no such table")


def test_the_closest_name_ignores_case_and_is_kept_from_a_score_of_75() -> None:
    assert closest("EMPLOYES", ["departments", "employees"]) == "employees"
    assert closest("dement", ["department"]) == "department"  # WRatio 75.0, the cut-off itself
    assert closest("dmnt", ["department"]) is None


def test_a_row_filter_is_read_in_the_databases_dialect(tmp_path: Path) -> None:
    """On MySQL `"nosuch"` is a string, not a column: the filter compares two strings (and keeps no row)."""
    path = tmp_path / "policy.toml"
    path.write_text(HEAD + '[roles.r.tables.employees]\nrow_filter = \'"nosuch" = "x"\'\n', encoding="utf-8")
    load_policy(path).check(Catalog(tables=CATALOG.tables, dialect="mysql"))
    with pytest.raises(ConfigError, match='unknown column `"nosuch"`'):
        load_policy(path).check(CATALOG)


def test_a_row_filter_calling_a_function_the_databases_engine_does_not_allow_names_role_and_table() -> None:
    """`hamming` is DuckDB's: the file alone allows it (some engine has it); the SQLite catalog does not."""
    rule = "[roles.r.tables.employees]\nrow_filter = \"hamming(full_name, 'x') = 0\""
    policy = parse_policy(tomllib.loads(HEAD + rule))
    policy.check(Catalog(tables=CATALOG.tables, dialect="duckdb"))
    with pytest.raises(ConfigError) as caught:
        policy.check(Catalog(tables=CATALOG.tables, dialect="sqlite"))
    assert caught.value.message.startswith(
        "row filter of role `r`, table `employees`: function `hamming` is not allowed"
    ), caught.value.message
