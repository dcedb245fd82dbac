"""Big schemas in list_tables (issue 10, item 3): every table reachable in pages, a pattern, shape groups."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from fixtures.big import synthetic
from sophrosyne.environment import Environment
from sophrosyne.schema.catalog import Column, Table, group_tables
from sophrosyne.settings import Settings
from sophrosyne.tools.base import render
from sophrosyne.tools.budget import measure


def every_page(env: Environment, pattern: str | None = None) -> tuple[set[str], int]:
    """The tables reachable by following the notes from offset 0 (group members count), and the pages."""
    reached: set[str] = set()
    offset, pages = 0, 0
    members = {g.tables[0]: g.tables for g in env.catalog.groups()}
    while True:
        page = env.list_tables(pattern=pattern, offset=offset)
        pages += 1
        assert measure(page) <= env.settings.limits.token_budget
        reached |= {t.name for t in page.tables}
        for g in page.groups:
            assert members[g.first][-1] == g.last and len(members[g.first]) == g.count
            reached |= set(members[g.first])
        if not page.cut:
            return reached, pages
        assert f"list_tables(offset={offset + len(page.tables) + len(page.groups)}" in page.cut
        offset += len(page.tables) + len(page.groups)


@pytest.mark.parametrize("tables", [1000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_every_table_is_reachable_page_by_page(tables: int) -> None:
    env = Environment.open(synthetic(tables, 2000), settings=Settings(directives="none"))
    reached, pages = every_page(env)
    assert reached == set(env.catalog.tables)
    assert pages > 1
    first = env.list_tables()
    text = render(first)
    assert f"of {first.total}" in text and "Next: list_tables(offset=" in text


def test_a_pattern_filters_by_glob_or_by_part_of_a_name() -> None:
    env = Environment.open(synthetic(1000, 2000), settings=Settings(directives="none"))
    billing = env.list_tables(pattern="billing_*")
    assert billing.total and all(t.name.startswith("billing_") for t in billing.tables)
    part = env.list_tables(pattern="REFUND")
    assert part.total and all("refund" in t.name for t in part.tables)
    none = env.list_tables(pattern="no_such_*")
    assert none.total == 0 and none.note and "no table matches" in none.note


def _table(name: str, *columns: str) -> Table:
    return Table(name=name, columns=[Column(c, "TEXT") for c in columns])


def test_shape_groups_beyond_date_suffixes() -> None:
    tables = [
        *(_table(f"sales_{year}_q{q}", "id", "amount") for year in (2019, 2020) for q in (1, 2)),
        *(_table(f"orders_{region}", "id", "total") for region in ("us", "eu", "apac")),
        _table("orders_archive", "id", "total", "archived_at"),
        *(_table(f"events_2020_{m:02d}", "id", "kind") for m in (1, 2, 3)),
    ]
    groups = {g.pattern: g.tables for g in group_tables(tables)}
    assert groups == {
        "sales_*_q*": ["sales_2019_q1", "sales_2019_q2", "sales_2020_q1", "sales_2020_q2"],
        "orders_*": ["orders_apac", "orders_eu", "orders_us"],
        "events_*": ["events_2020_01", "events_2020_02", "events_2020_03"],
    }


def test_groups_count_once_and_a_pattern_finds_their_members(tmp_path: Path) -> None:
    path = tmp_path / "shards.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        for day in range(1, 31):
            conn.execute(f"CREATE TABLE ga_sessions_201708{day:02d} (visit_id INTEGER, hits INTEGER)")
        conn.execute("CREATE TABLE visitors (id INTEGER PRIMARY KEY)")
        conn.commit()
    env = Environment.open(path)
    listed = env.list_tables()
    assert listed.total == 2 and [g.count for g in listed.groups] == [30]
    one_day = env.list_tables(pattern="*0815")
    assert [t.name for t in one_day.tables] == ["ga_sessions_20170815"]
