"""The secured path's own defences, each pinned by a test that fails without it (on SQLite, no server): the
length refusal before anything reads the text, the post-execution row filter behind a rewrite that let rows
through, and the fresh names the rewrite gives its CTEs and the user CTEs it renames."""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from fixtures.engines import build_sqlite
from sophrosyne.database import Database, open_database
from sophrosyne.errors import InvalidArgument, SophrosyneError
from sophrosyne.settings import Settings
from sophrosyne.sql import secure
from sophrosyne.sql.policy import Role, TableRule, rewrite_for
from sophrosyne.sql.secure import MAX_SQL_CHARS, SecurePath

ROLE = Role("ops", tables={"employees": TableRule(row_filter="department = 'D042'")})


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("secured_path") / "hr.sqlite")


@pytest.fixture
def database(hr: Path) -> Iterator[Database]:
    db = open_database(hr)
    yield db
    db.close()


def path_for(database: Database, role: Role) -> SecurePath:
    catalog = database.catalog()
    return SecurePath(database, role, Settings(), policed=lambda: catalog, catalog=lambda: catalog)


def count(hr: Path, sql: str) -> int:
    with closing(sqlite3.connect(hr)) as conn:
        return int(conn.execute(sql).fetchone()[0])


@pytest.mark.parametrize("role", [Role(), ROLE], ids=["unrestricted", "restricted"])
def test_a_statement_of_the_length_limit_runs_and_one_character_more_is_refused(database: Database, role: Role) -> None:
    path = path_for(database, role)
    at_limit = "SELECT 1" + " " * (MAX_SQL_CHARS - len("SELECT 1"))
    assert path.run(at_limit, limit=10).result.rows == [(1,)]
    with pytest.raises(InvalidArgument, match="100,001 characters long; at most 100,000 are read") as caught:
        path.run(at_limit + " ", limit=10)
    assert caught.value.hint


def test_the_post_execution_filter_drops_rows_a_rewrite_let_through(
    database: Database, hr: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third layer: with a rewrite that adds no filter (a bug it guards against), the rows outside the
    role's scope still do not come back."""
    path = path_for(database, ROLE)
    everyone = count(hr, "SELECT count(*) FROM employees")
    in_scope = count(hr, "SELECT count(*) FROM employees WHERE department = 'D042'")
    assert 0 < in_scope < everyone
    filtered = path.run("SELECT employee_id, department FROM employees", limit=1000).result.rows
    assert len(filtered) == in_scope

    monkeypatch.setattr(secure, "rewrite_for", lambda role, expression, catalog, dialect: expression)
    # A path of its own: the first keeps the statement as it prepared it (rewritten), by its text.
    secured = path_for(database, ROLE).run("SELECT employee_id, department FROM employees", limit=1000)
    assert "D042" not in secured.executed  # the rewrite really let every row through to the engine
    assert sorted(secured.result.rows) == sorted(filtered)
    assert {row[1] for row in secured.result.rows} == {"D042"}


def _cte_names(tree: exp.Expr) -> list[list[str]]:
    return [[cte.alias for cte in with_.expressions] for with_ in tree.find_all(exp.With)]


def test_the_role_cte_takes_a_name_no_user_cte_holds(database: Database, hr: Path) -> None:
    """`_sec_employees` and `_sec_employees_1` are the user's: the role's CTE is `_sec_employees_2`."""
    sql = (
        "WITH _sec_employees AS (SELECT 1 AS x), _sec_employees_1 AS (SELECT 2 AS x) "
        "SELECT e.employee_id, a.x, b.x FROM employees e, _sec_employees a, _sec_employees_1 b"
    )
    rewritten = rewrite_for(ROLE, sqlglot.parse_one(sql, read="sqlite"), database.catalog(), "sqlite")
    names = _cte_names(rewritten)
    assert names == [["_sec_employees_2", "_sec_employees", "_sec_employees_1"]]
    rows = database.run(rewritten.sql(dialect="sqlite"), limit=1000).rows
    assert len(rows) == count(hr, "SELECT count(*) FROM employees WHERE department = 'D042'")
    assert {(x, y) for _, x, y in rows} == {(1, 2)}


def test_a_user_cte_named_like_a_table_is_renamed_past_every_name_taken(database: Database, hr: Path) -> None:
    """A nested user CTE `employees` would capture the role's CTE body's read of the table: it is renamed,
    and `employees_1` and `employees_2` being taken too, to `employees_3`."""
    sql = (
        "SELECT t.employee_id, t.y, t.z, e2.department FROM (WITH employees_1 AS (SELECT 5 AS y), "
        "employees_2 AS (SELECT 6 AS z), employees AS (SELECT 7 AS employee_id) "
        "SELECT * FROM employees, employees_1, employees_2) t, employees e2"
    )
    rewritten = rewrite_for(ROLE, sqlglot.parse_one(sql, read="sqlite"), database.catalog(), "sqlite")
    assert _cte_names(rewritten) == [["_sec_employees"], ["employees_1", "employees_2", "employees_3"]]
    rows = database.run(rewritten.sql(dialect="sqlite"), limit=1000).rows
    assert len(rows) == count(hr, "SELECT count(*) FROM employees WHERE department = 'D042'")
    assert set(rows) == {(7, 5, 6, "D042")}


SECURED_MARIADB = (
    "_sec_employees AS (SELECT `employee_id`, `full_name`, `department`, `hire_date`, `manager_id` FROM `employees` "
    "WHERE department = 'D042')"
)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "WITH x AS (SELECT * FROM employees) SELECT * FROM x",
            f"WITH {SECURED_MARIADB}, x AS (SELECT * FROM _sec_employees AS employees) SELECT * FROM x",
        ),
        (
            "WITH a AS (WITH b AS (SELECT * FROM employees) SELECT * FROM b) SELECT * FROM a",
            f"WITH {SECURED_MARIADB}, a AS (WITH b AS (SELECT * FROM _sec_employees AS employees) SELECT * FROM b) "
            "SELECT * FROM a",
        ),
        (
            "SELECT * FROM (WITH b AS (SELECT * FROM employees) SELECT * FROM b) AS s",
            f"WITH {SECURED_MARIADB} SELECT * FROM (WITH {SECURED_MARIADB}, b AS (SELECT * FROM _sec_employees AS "
            "employees) SELECT * FROM b) AS s",
        ),
    ],
    ids=["statement_with", "with_in_a_cte_body", "with_in_a_subquery"],
)
def test_only_a_with_nested_in_a_subquery_repeats_the_role_ctes_on_mariadb(
    database: Database, sql: str, expected: str
) -> None:
    """MariaDB's nested WITH in a subquery does not see the statement's: the role's CTE is repeated there, and
    only there (the statement's own WITH, and one in a CTE's body, see it)."""
    rewritten = rewrite_for(ROLE, sqlglot.parse_one(sql, read="mysql"), database.catalog(), "mysql")
    assert rewritten.sql(dialect="mysql") == expected


def test_a_statement_is_prepared_once_per_catalog(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard and the rewrite run once per statement text for the catalog they read: again once the catalog
    is another (the schema changed), and every time for a statement they refuse."""
    checked: list[str] = []
    check_sql = secure.guard.check_sql

    def counted(sql: str, *args: object) -> exp.Expression:
        checked.append(sql)
        return check_sql(sql, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(secure.guard, "check_sql", counted)
    catalogs = [database.catalog()]
    path = SecurePath(database, ROLE, Settings(), policed=lambda: catalogs[-1], catalog=lambda: catalogs[-1])
    sql = "SELECT employee_id FROM employees"
    first = path.run(sql, limit=10)
    assert path.run(sql, limit=10).executed == first.executed
    assert len(checked) == 1
    catalogs.append(copy.copy(database.catalog()))
    assert path.run(sql, limit=10).executed == first.executed
    assert len(checked) == 2
    for _ in range(2):
        with pytest.raises(SophrosyneError):
            path.run("DELETE FROM employees", limit=10)
    assert len(checked) == 4
