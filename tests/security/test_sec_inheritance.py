"""Finding 4 of issue 16: a partition, an inheritance child or a view of a protected table follows its rule.

With `unlisted = "allow"`, PostgreSQL's partition `events_d2` of a filtered table, or an INHERITS child, was
readable by its own name with every row and column its parent's rule hides. Now a child gets its protected
ancestor's rule (or is denied with it), a parent of a protected child is refused (its reads return the child's
rows), and a view needs a rule of its own on every engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.engines import PG_DSN, unique_name, unreachable
from sophrosyne.environment import Environment
from sophrosyne.errors import SophrosyneError, UnknownTable
from sophrosyne.sql.policy import Role, TableRule

SCHEMA = [
    "CREATE TABLE events (id INTEGER, dept TEXT, secret TEXT) PARTITION BY LIST (dept)",
    "CREATE TABLE events_d1 PARTITION OF events FOR VALUES IN ('D1')",
    "CREATE TABLE events_d2 PARTITION OF events FOR VALUES IN ('D2')",
    "INSERT INTO events VALUES (1, 'D1', 'canary-e1'), (2, 'D2', 'canary-e2')",
    "CREATE TABLE logs (id INTEGER, dept TEXT, secret TEXT)",
    "CREATE TABLE logs_child (extra TEXT) INHERITS (logs)",
    "CREATE TABLE logs_grandchild () INHERITS (logs_child)",
    "INSERT INTO logs VALUES (1, 'D1', 'canary-l1'), (2, 'D2', 'canary-l2')",
    "INSERT INTO logs_child VALUES (3, 'D2', 'canary-c3', 'x3'), (4, 'D1', 'canary-c4', 'x4')",
    "INSERT INTO logs_grandchild VALUES (5, 'D2', 'canary-g5', 'x5')",
    "CREATE VIEW v_events AS SELECT * FROM events",
    "CREATE MATERIALIZED VIEW mv_events AS SELECT * FROM events",
    "CREATE TABLE other (a INTEGER)",
    "INSERT INTO other VALUES (1), (2)",
]
FILTERED = {
    "events": TableRule(row_filter="dept = 'D1'", hidden=["secret"]),
    "logs": TableRule(row_filter="dept = 'D1'", hidden=["secret"]),
}


@pytest.fixture(scope="module")
def pg() -> Iterator[Environment]:
    import psycopg

    try:
        conn = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        unreachable("PostgreSQL", str(exc).strip().splitlines()[0])
    schema = unique_name("soph_secinh")
    with conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            conn.execute(f'SET search_path TO "{schema}"')
            for statement in SCHEMA:
                conn.execute(statement.encode())
            env = Environment.open(f"{PG_DSN}?options=-csearch_path%3D{schema}")
            yield env
            env.db.close()
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def rows(env: Environment, sql: str) -> list[tuple[Any, ...]] | SophrosyneError:
    try:
        return [tuple(r) for r in env.execute_sql(sql).rows]
    except SophrosyneError as error:
        return error


def no_canary(outcome: list[tuple[Any, ...]] | SophrosyneError) -> bool:
    return isinstance(outcome, SophrosyneError) or not any("canary" in str(v) for row in outcome for v in row)


@pytest.mark.engine
def test_the_catalog_knows_the_parents(pg: Environment) -> None:
    catalog = pg.full_catalog
    assert catalog.tables["events_d2"].parents == ["events"]
    assert catalog.tables["logs_grandchild"].parents == ["logs_child"]
    assert catalog.tables["other"].parents == []


@pytest.mark.engine
def test_a_partition_follows_its_parents_rule(pg: Environment) -> None:
    role = pg.for_role(Role("d1", tables=dict(FILTERED)))
    assert rows(role, "SELECT * FROM events_d2") == []
    assert rows(role, "SELECT * FROM events_d1") == [(1, "D1")]
    assert rows(role, "SELECT COUNT(*) FROM events_d2 WHERE secret IS NOT NULL") != [(1,)]
    assert "secret" not in role.catalog.tables["events_d2"].column_names
    assert rows(role, "SELECT * FROM events") == [(1, "D1")]


@pytest.mark.engine
def test_an_inheritance_child_follows_its_ancestors_rule(pg: Environment) -> None:
    role = pg.for_role(Role("d1", tables=dict(FILTERED)))
    assert rows(role, "SELECT * FROM logs_child ORDER BY id") == [(4, "D1", "x4")]
    assert rows(role, "SELECT * FROM logs_grandchild") == []
    assert no_canary(rows(role, "SELECT secret FROM logs_grandchild"))
    assert rows(role, "SELECT id FROM logs ORDER BY id") == [(1,), (4,)]  # the child's rows, filtered


@pytest.mark.engine
def test_views_over_protected_tables_are_refused(pg: Environment) -> None:
    role = pg.for_role(Role("d1", tables=dict(FILTERED)))
    for name in ("v_events", "mv_events"):
        outcome = rows(role, f"SELECT * FROM {name}")
        assert isinstance(outcome, UnknownTable), (name, outcome)
        assert name not in role.catalog.tables


@pytest.mark.engine
def test_a_denied_parent_denies_its_partitions_and_children(pg: Environment) -> None:
    role = pg.for_role(Role("no_events", denied=["events", "logs"]))
    for name in ("events_d1", "events_d2", "logs_child", "logs_grandchild"):
        assert isinstance(rows(role, f"SELECT * FROM {name}"), UnknownTable), name
        assert name not in role.catalog.tables
    assert rows(role, "SELECT a FROM other ORDER BY a") == [(1,), (2,)]


@pytest.mark.engine
def test_a_parent_of_a_protected_child_is_refused(pg: Environment) -> None:
    """Reading a parent returns its children's rows: a parent with no rule of its own would show them all."""
    role = pg.for_role(Role("child_rule", tables={"events_d2": TableRule(row_filter="id < 0")}))
    assert isinstance(rows(role, "SELECT * FROM events"), UnknownTable)
    assert rows(role, "SELECT * FROM events_d2") == []
    assert rows(role, "SELECT id FROM events_d1") == [(1,)]  # a sibling without a protected ancestor
    hidden_child = pg.for_role(Role("grandchild_denied", denied=["logs_grandchild"]))
    for name in ("logs", "logs_child"):
        assert isinstance(rows(hidden_child, f"SELECT * FROM {name}"), UnknownTable), name


@pytest.mark.engine
def test_listed_tables_only_keeps_children_unreadable(pg: Environment) -> None:
    role = pg.for_role(Role("listed", tables=dict(FILTERED), unlisted_allowed=False))
    assert isinstance(rows(role, "SELECT * FROM events_d1"), UnknownTable)
    assert rows(role, "SELECT * FROM events") == [(1, "D1")]


@pytest.mark.engine
def test_an_unrelated_unlisted_table_stays_readable(pg: Environment) -> None:
    role = pg.for_role(Role("d1", tables=dict(FILTERED)))
    assert rows(role, "SELECT a FROM other ORDER BY a") == [(1,), (2,)]
    assert "other" in role.catalog.tables


# Views on every engine: the HR schema's `department_headcount` reads `employees`, filtered for this role.


def test_a_view_over_a_filtered_table_is_refused_on_every_engine(env: Environment) -> None:
    role = env.for_role(Role("d042", tables={"employees": TableRule(row_filter="department = 'D042'")}))
    outcome = rows(role, "SELECT * FROM department_headcount")
    assert isinstance(outcome, UnknownTable), outcome
    assert "department_headcount" not in role.catalog.tables
    # control: an unlisted table is still readable in full, and a view the policy lists is readable
    assert rows(role, "SELECT COUNT(*) FROM notes") == [(8,)]
    listed = env.for_role(
        Role(
            "d042_view",
            tables={
                "employees": TableRule(row_filter="department = 'D042'"),
                "department_headcount": TableRule(row_filter="dept_code = 'D042'"),
            },
        )
    )
    assert [r[0] for r in rows(listed, "SELECT dept_code FROM department_headcount")] == ["D042"]  # type: ignore[union-attr]
