"""A restricted role names only built-in scalar types on PostgreSQL: a table's row type (`CAST('(,,)' AS t)`,
`NULL::t`, `t[]`, `json_populate_record(NULL::t, ...)`) or an object identifier (`'t'::regclass`) would name
the columns of a hidden or denied table. The refusal reads the same for a table that exists and one that
does not; casts to integer, text, date and numeric still work."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.engines import postgres_schema
from sophrosyne.environment import Environment
from sophrosyne.errors import RejectedSQL, SophrosyneError
from sophrosyne.sql.policy import Role, TableRule

pytestmark = pytest.mark.engine

ROLE = Role(
    "ops",
    tables={
        "employees": TableRule(row_filter="department = 'D042'", hidden=["hire_date"]),
        "departments": TableRule(hidden=["budget"]),
    },
    denied=["notes"],
)
MISSING = "nosuchtable"
ATTACKS = {
    "cast_to_denied": "SELECT to_json(CAST('(,,,)' AS {t}))",
    "cast_wrong_field_count": "SELECT CAST('(,)' AS {t})",
    "double_colon_null": "SELECT to_json(NULL::{t})",
    "array_of_row_type": "SELECT '{{}}'::{t}[]",
    "row_constructor": "SELECT ROW(1, 2)::{t}",
    "populate_record": "SELECT * FROM json_populate_record(NULL::{t}, '{{}}')",
    "regclass": "SELECT '{t}'::regclass",
    "to_regclass": "SELECT to_regclass('{t}')",
    "in_a_filter": "SELECT dept_code FROM departments WHERE CAST(NULL AS {t}) IS NULL",
}


@pytest.fixture(scope="module")
def env() -> Iterator[Environment]:
    with postgres_schema("soph_seccast") as url:
        environment = Environment.open(url)
        yield environment
        environment.db.close()


def _refusal(view: Environment, sql: str) -> str:
    try:
        result = view.execute_sql(sql)
    except SophrosyneError as error:
        return f"{type(error).__name__}: {error.message}"
    return f"answered: {result.rows}"


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
@pytest.mark.parametrize("table", ["notes", "employees", "departments"])
def test_a_row_type_is_refused_and_reads_like_a_missing_table(env: Environment, attack: str, table: str) -> None:
    role = env.for_role(ROLE)
    existing = _refusal(role, ATTACKS[attack].format(t=table))
    missing = _refusal(role, ATTACKS[attack].format(t=MISSING))
    assert existing.startswith("RejectedSQL"), existing
    assert existing.replace(table, MISSING) == missing
    for column in ("hire_date", "budget", "body", "archived_at", "full_name"):
        assert column not in existing


def test_casts_to_scalar_types_still_work(env: Environment) -> None:
    role = env.for_role(ROLE)
    result = role.execute_sql(
        "SELECT CAST(employee_id AS integer) AS i, CAST(full_name AS text) AS t, employee_id::numeric(10, 2) AS n, "
        "CAST('2024-01-31' AS date) AS d, CAST(employee_id AS varchar(8)) AS v, CAST('1' AS bigint) AS b, "
        "employee_id::float8 AS f, CAST('2024-01-31 10:00' AS timestamp) AS ts, ARRAY[1, 2]::int[] AS a "
        "FROM employees ORDER BY employee_id LIMIT 1"
    )
    assert result.row_count == 1


def test_an_unrestricted_role_keeps_row_types(env: Environment) -> None:
    """The rule is the role's: an unrestricted role may read every column anyway."""
    with pytest.raises(RejectedSQL):
        env.for_role(ROLE).execute_sql("SELECT NULL::employees")
    assert env.execute_sql("SELECT to_json(NULL::employees) AS j").row_count == 1
