"""What the rewrite mends, step by step on parsed trees (sql/policy/mending.py): the GROUP BY a primary key made
valid, the fenced inner joins kept in the order written, the headers of computed columns as written."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from sophrosyne.schema.catalog import Column, Table
from sophrosyne.sql.policy.mending import complete_group_by, join_in_written_order, written_headers

EMPLOYEES = Table(
    "employees", [Column(c, "TEXT") for c in ("employee_id", "name", "department")], primary_key=["employee_id"]
)
ABSENCES = Table("absences", [Column(c, "TEXT") for c in ("employee_id", "reason")])  # no primary key
SECURED = {"employees": ("_sec_employees", EMPLOYEES), "absences": ("_sec_absences", ABSENCES)}


def _grouped(sql: str) -> str:
    select = sqlglot.parse_one(sql, read="postgres")
    assert isinstance(select, exp.Select)
    complete_group_by(select, SECURED)
    group = select.args.get("group")
    return ", ".join(e.sql() for e in group.expressions) if group else ""


@pytest.mark.parametrize(
    ("sql", "group"),
    [
        # one table, its columns unqualified: what the query shows beside its key is grouped too
        ("SELECT name, UPPER(department) FROM _sec_employees GROUP BY employee_id", "employee_id, name, department"),
        ("SELECT COUNT(*) FROM _sec_employees GROUP BY employee_id HAVING MIN(name) <> '' AND department <> 'x' "
         "ORDER BY name", "employee_id, department, name"),
        # a column inside an aggregate, a window or a nested query is not shown as is
        ("SELECT MAX(name), ROW_NUMBER() OVER (ORDER BY department) FROM _sec_employees GROUP BY employee_id",
         "employee_id"),
        # a joined table keyed by its primary key; an unqualified column of a join belongs to no table known here
        ("SELECT e.name, reason FROM _sec_absences AS a JOIN _sec_employees AS e ON a.employee_id = e.employee_id "
         "GROUP BY e.employee_id", "e.employee_id, e.name"),
        ("SELECT e.name FROM _sec_employees AS e JOIN _sec_absences AS a ON a.employee_id = e.employee_id "
         "GROUP BY a.employee_id", "a.employee_id"),  # not grouped by e's key: nothing to add
        # nothing secured, or nothing read
        ("WITH c AS (SELECT 1 AS id, 2 AS v) SELECT v FROM c GROUP BY id", "id"),
        ("SELECT 1 AS x GROUP BY x", "x"),
    ],
)  # fmt: skip
def test_the_group_by_a_primary_key_gets_the_columns_shown_beside_it(sql: str, group: str) -> None:
    assert _grouped(sql) == group


def _joined(sql: str) -> str:
    select = sqlglot.parse_one(sql, read="mysql")
    assert isinstance(select, exp.Select)
    join_in_written_order(select, {"_sec_employees", "_sec_absences"})
    return select.sql(dialect="mysql")


@pytest.mark.parametrize(
    ("sql", "straight"),
    [
        ("SELECT 1 FROM _sec_absences AS a JOIN _sec_employees AS e ON a.employee_id = e.employee_id", True),
        ("SELECT 1 FROM _sec_absences AS a INNER JOIN _sec_employees AS e ON a.employee_id = e.employee_id "
         "AND e.name = 'x'", True),
        ("SELECT 1 FROM _sec_absences AS a LEFT JOIN _sec_employees AS e ON a.employee_id = e.employee_id", False),
        ("SELECT 1 FROM _sec_absences AS a CROSS JOIN _sec_employees AS e ON a.employee_id = e.employee_id", False),
        ("SELECT 1 FROM _sec_absences AS a JOIN _sec_employees AS e ON a.employee_id > e.employee_id", False),
        ("SELECT 1 FROM _sec_absences AS a JOIN other AS o ON a.employee_id = o.employee_id", False),
    ],
)  # fmt: skip
def test_only_inner_equality_joins_of_fenced_ctes_are_joined_in_written_order(sql: str, straight: bool) -> None:
    joined = _joined(sql)
    assert ("STRAIGHT_JOIN" in joined) is straight, joined
    if not straight:
        assert joined == sqlglot.parse_one(sql, read="mysql").sql(dialect="mysql")  # left as written


def test_the_headers_of_a_set_operation_are_its_first_querys() -> None:
    tree = sqlglot.parse_one("SELECT (SELECT MAX(employee_id) FROM employees), name FROM employees UNION SELECT 1, 2")
    assert [text for _, text in written_headers(tree, sqlglot.Dialect.get_or_raise("postgres"))] == [
        "(SELECT MAX(employee_id) FROM employees)"
    ]
