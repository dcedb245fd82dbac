"""Finding 1 of issue 16: a CTE name resolves as the engine resolves it, or the query is refused.

MariaDB 10.11 reads base table `employees` in `(WITH x AS (SELECT * FROM employees) ...)` nested in a derived
table or a subquery, even where an outer WITH defines a CTE `employees`; the rewrite took that reference for
the CTE and left it unsecured. The attacks below must read no hidden row, hidden column or denied table on
any engine; the controls are legitimate nested WITH queries that must keep their answers on all four.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.engines import EMPLOYEES
from sophrosyne.environment import Environment
from sophrosyne.errors import RejectedSQL, SophrosyneError

ROLE_TABLES = {
    "departments": {"row_filter": "dept_code = 'D042'", "hidden": ["budget"]},
    "employees": {"row_filter": "department = 'D042'", "hidden": ["hire_date"]},
    "absence_records": {
        "row_filter": "employee_id IN (SELECT e.employee_id FROM employees AS e WHERE e.department = 'D042')"
    },
}
VISIBLE_IDS = {e[0] for e in EMPLOYEES if e[2] == "D042"}
HIDDEN_IDS = {e[0] for e in EMPLOYEES} - VISIBLE_IDS

# Each attack's outer CTE holds -7 (a value that is no employee id), which standard scoping reads.
CANARY = -7
# (attack, what its rows hold): "ids" employee ids first, "count" a count of employees, "none" nothing but what
# the query's own CTE holds (the canary, or a count of its one row).
ATTACKS: list[tuple[str, str]] = [
    # the report's two shapes: derived table and scalar subquery
    ("WITH employees AS (SELECT -7 AS a) SELECT * FROM (WITH x AS (SELECT * FROM employees) SELECT * FROM x) s", "ids"),
    (
        "WITH employees AS (SELECT -7 AS a) SELECT (WITH x AS (SELECT COUNT(*) AS n FROM employees) SELECT n FROM x)",
        "count",
    ),
    # hidden column and denied table through the same hole
    (
        "WITH employees AS (SELECT -7 AS a) SELECT * FROM (WITH x AS (SELECT employee_id, hire_date FROM employees) "
        "SELECT * FROM x) s",
        "none",
    ),
    ("WITH notes AS (SELECT -7 AS a) SELECT * FROM (WITH x AS (SELECT * FROM notes) SELECT * FROM x) s", "none"),
    (
        "WITH notes AS (SELECT -7 AS a) SELECT (WITH x AS (SELECT COUNT(*) AS n FROM notes) SELECT n FROM x)",
        "none",
    ),
    # EXISTS and IN subqueries
    (
        "WITH employees AS (SELECT -7 AS a) SELECT 'leak' AS x FROM departments WHERE EXISTS "
        "(WITH x AS (SELECT * FROM employees WHERE department = 'D017') SELECT * FROM x)",
        "none",
    ),
    (
        "WITH employees AS (SELECT -7 AS a) SELECT 'leak' AS x FROM departments WHERE 'D017' IN "
        "(WITH x AS (SELECT department FROM employees) SELECT department FROM x)",
        "none",
    ),
    # a set operation's branch, a CTE body, two levels of nesting
    (
        "WITH employees AS (SELECT -7 AS a) SELECT 0 AS employee_id UNION ALL "
        "SELECT employee_id FROM (WITH x AS (SELECT * FROM employees) SELECT * FROM x) s",
        "ids",
    ),
    (
        "WITH employees AS (SELECT -7 AS a), y AS (SELECT * FROM (WITH x AS (SELECT * FROM employees) "
        "SELECT * FROM x) s) SELECT * FROM y",
        "ids",
    ),
    (
        "WITH employees AS (SELECT -7 AS a) SELECT * FROM (WITH x AS (SELECT * FROM (WITH z AS "
        "(SELECT * FROM employees) SELECT * FROM z) q) SELECT * FROM x) s",
        "ids",
    ),
    (
        "WITH employees AS (SELECT -7 AS a) SELECT * FROM (WITH x AS (SELECT * FROM (SELECT * FROM employees) q) "
        "SELECT * FROM x) s",
        "ids",
    ),
    (
        "WITH employees AS (SELECT -7 AS a) SELECT * FROM (WITH x AS (SELECT (SELECT COUNT(*) FROM employees) AS n) "
        "SELECT * FROM x) s",
        "count",
    ),
    # recursive WITHs, inside and outside
    (
        "WITH employees AS (SELECT -7 AS a) SELECT * FROM (WITH RECURSIVE x(employee_id) AS (SELECT employee_id "
        "FROM employees UNION ALL SELECT employee_id FROM x WHERE 1 = 0) SELECT * FROM x) s",
        "ids",
    ),
    (
        "WITH RECURSIVE employees(a) AS (SELECT -7 UNION ALL SELECT a - 1 FROM employees WHERE a > -9) "
        "SELECT * FROM (WITH x AS (SELECT * FROM employees) SELECT * FROM x) s",
        "ids",
    ),
    # a nested WITH redefining the outer CTE, and a later sibling of a WITH RECURSIVE
    (
        "WITH employees AS (SELECT -7 AS a), y AS (WITH employees AS (SELECT * FROM employees) "
        "SELECT * FROM employees) SELECT * FROM y",
        "ids",
    ),
    ("WITH RECURSIVE x AS (SELECT * FROM employees), employees AS (SELECT -7 AS a) SELECT * FROM x", "ids"),
]
# MariaDB resolves the names of a CTE read twice from a later CTE's body in that body's scope: a user CTE
# `employees` defined between would take the place of the table in the role's filter of `absence_records`.
EVERY_ID = " UNION ALL ".join(f"SELECT {e[0]} AS employee_id, 'D042' AS department" for e in EMPLOYEES)
CAPTURES = [
    f"WITH employees AS ({EVERY_ID}), w AS (SELECT a2.employee_id FROM absence_records a1 "
    "RIGHT JOIN absence_records a2 ON a1.record_id = a2.record_id) SELECT DISTINCT employee_id FROM w",
    f"WITH employees AS ({EVERY_ID}), w AS (SELECT a2.employee_id FROM absence_records a1 "
    "JOIN absence_records a2 ON 1 = 1) SELECT DISTINCT employee_id FROM w",
]
ATTACKS.extend((capture, "ids") for capture in CAPTURES)

# (control, expected rows in order): legitimate nested WITH queries over what the role sees.
CONTROLS: list[tuple[str, list[tuple[Any, ...]]]] = [
    (
        "SELECT s.employee_id FROM (WITH x AS (SELECT employee_id FROM employees) SELECT employee_id FROM x) s "
        "ORDER BY 1",
        [(i,) for i in sorted(VISIBLE_IDS)],
    ),
    ("SELECT (WITH x AS (SELECT COUNT(*) AS n FROM employees) SELECT n FROM x) AS n", [(len(VISIBLE_IDS),)]),
    (
        "SELECT d.dept_code FROM departments d WHERE EXISTS (WITH x AS (SELECT department FROM employees) "
        "SELECT 1 FROM x WHERE x.department = d.dept_code)",
        [("D042",)],
    ),
    (
        "SELECT COUNT(*) FROM departments WHERE dept_code IN (WITH x AS (SELECT department FROM employees) "
        "SELECT department FROM x)",
        [(1,)],
    ),
    (
        "WITH y AS (SELECT * FROM (WITH x AS (SELECT employee_id FROM employees) SELECT employee_id FROM x) s) "
        "SELECT COUNT(*) FROM y",
        [(len(VISIBLE_IDS),)],
    ),
    (
        "SELECT COUNT(*) FROM (WITH x AS (SELECT * FROM (WITH z AS (SELECT employee_id FROM employees) "
        "SELECT * FROM z) q) SELECT * FROM x) s",
        [(len(VISIBLE_IDS),)],
    ),
    (
        "SELECT COUNT(*) FROM (WITH RECURSIVE r(n) AS (SELECT MIN(employee_id) FROM employees UNION ALL "
        "SELECT n + 1 FROM r WHERE n < 4) SELECT n FROM r) s",
        [(4 - min(VISIBLE_IDS) + 1,)],
    ),
    (
        "WITH e AS (SELECT employee_id FROM employees) SELECT COUNT(*) FROM "
        "(WITH x AS (SELECT 1 AS one) SELECT e.employee_id FROM e, x) s",
        [(len(VISIBLE_IDS),)],
    ),
    (
        "SELECT (SELECT COUNT(*) FROM (WITH x AS (SELECT d.dept_code FROM departments d JOIN employees e "
        "ON e.department = d.dept_code) SELECT * FROM x) q) AS n",
        [(len(VISIBLE_IDS),)],
    ),
]
# A CTE that reads a table of its own name: SQLite takes it for the CTE itself ("circular reference"),
# the others read the table; the rewrite must keep both meanings.
SELF_NAMED = [
    (
        "WITH employees AS (SELECT employee_id FROM employees WHERE employee_id > 10) SELECT COUNT(*) FROM employees",
        [(len([i for i in VISIBLE_IDS if i > 10]),)],
    ),
    (
        "SELECT COUNT(*) FROM (WITH employees AS (SELECT employee_id FROM employees WHERE employee_id > 10) "
        "SELECT * FROM employees) s",
        [(len([i for i in VISIBLE_IDS if i > 10]),)],
    ),
]


@pytest.fixture(scope="module")
def restricted(env: Environment) -> Environment:
    from sophrosyne.sql.policy import Role, TableRule

    rules = {name: TableRule(**rule) for name, rule in ROLE_TABLES.items()}  # type: ignore[arg-type]
    return env.for_role(Role("scoped", tables=rules, denied=["notes"]))


def run(env: Environment, sql: str) -> list[tuple[Any, ...]] | SophrosyneError:
    try:
        return [tuple(r) for r in env.execute_sql(sql).rows]
    except SophrosyneError as error:
        return error


@pytest.mark.parametrize("attack,holds", ATTACKS, ids=[f"attack{i}" for i in range(len(ATTACKS))])
def test_nested_with_reads_nothing_hidden(restricted: Environment, attack: str, holds: str) -> None:
    outcome = run(restricted, attack)
    if isinstance(outcome, SophrosyneError):
        assert outcome.message  # refused with a reason, or failed in the engine: nothing was read
        return
    values = [v for row in outcome for v in row]
    if holds == "none":
        assert set(values) <= {CANARY, 1}, f"{attack}\n-> {outcome}"
    elif holds == "count":
        assert all(v is None or int(v) <= len(VISIBLE_IDS) for v in values), f"{attack}\n-> {outcome}"
    else:
        ids = {row[0] for row in outcome}  # the first column is employee_id (or the canary)
        assert not ids & HIDDEN_IDS, f"{attack}\n-> {outcome}"


@pytest.mark.parametrize("control,expected", CONTROLS, ids=[f"control{i}" for i in range(len(CONTROLS))])
def test_legitimate_nested_with_keeps_its_answer(restricted: Environment, control: str, expected: Any) -> None:
    assert run(restricted, control) == expected


@pytest.mark.parametrize("query,expected", SELF_NAMED, ids=["top", "nested"])
def test_cte_named_like_its_table_means_what_the_engine_says(
    restricted: Environment, env: Environment, engine: str, query: str, expected: Any
) -> None:
    outcome, unrestricted = run(restricted, query), run(env, query)
    if engine == "sqlite":
        assert isinstance(outcome, SophrosyneError) and isinstance(unrestricted, SophrosyneError)
        assert "circular" in outcome.full_message
    else:
        assert outcome == expected


def test_mariadb_ambiguities_are_refused_with_a_reason(restricted: Environment, engine: str) -> None:
    """Where MariaDB and MySQL (or MariaDB and its own documented scoping) disagree, the rewrite refuses."""
    if engine != "mariadb":
        pytest.skip("MariaDB's scoping")
    outer_cte = run(restricted, ATTACKS[0][0])
    assert isinstance(outer_cte, RejectedSQL)
    assert "cannot read the CTEs of an outer WITH" in outer_cte.message and outer_cte.hint
    redefined = run(restricted, ATTACKS[-4][0])
    assert isinstance(redefined, RejectedSQL) and "redefines CTE `employees`" in redefined.message
    later = run(restricted, ATTACKS[-3][0])
    assert isinstance(later, RejectedSQL) and "defined after it" in later.message


RECURSIVE_AS_WRITTEN = [
    # the property test's seed 9740 (2,000 examples): the CTE's own name in its non-recursive term
    "WITH RECURSIVE employees AS (SELECT employee_id FROM employees UNION ALL "
    "SELECT employee_id FROM employees WHERE employee_id < 0) SELECT COUNT(*) FROM employees",
    "WITH RECURSIVE employees AS (SELECT employee_id FROM employees) SELECT COUNT(*) FROM employees",
    "SELECT (WITH RECURSIVE employees AS (SELECT employee_id FROM employees UNION SELECT 1) "
    "SELECT COUNT(*) FROM employees) AS n",
]


@pytest.mark.parametrize("query", RECURSIVE_AS_WRITTEN, ids=["anchor", "no_union", "nested"])
def test_recursive_cte_the_engine_refuses_stays_refused(
    restricted: Environment, env: Environment, engine: str, query: str
) -> None:
    """The rewrite must not change what a statement means: PostgreSQL, MariaDB and SQLite refuse these as
    written (the name is the CTE itself), so they still do; DuckDB reads the table there, filtered."""
    outcome, unrestricted = run(restricted, query), run(env, query)
    assert isinstance(outcome, SophrosyneError) == isinstance(unrestricted, SophrosyneError), (outcome, unrestricted)
    if engine == "duckdb" and not isinstance(outcome, SophrosyneError):
        assert all(row[0] <= len(VISIBLE_IDS) + 1 for row in outcome)  # `UNION SELECT 1` adds one
    if engine == "postgres":
        assert isinstance(outcome, SophrosyneError)
