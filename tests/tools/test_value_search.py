"""Value search that says what it found (issue 10, item 4): an exact match alone, neighbours only without
one, each with its match kind; row counts that are bounds say so."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from fixtures.engines import build_sqlite
from sophrosyne.environment import Environment
from sophrosyne.settings import Settings
from sophrosyne.tools.base import render


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return Environment.open(build_sqlite(tmp_path_factory.mktemp("values") / "hr.sqlite"))


@pytest.mark.parametrize("search", ["Field Operations", "field operations", "  FIELD   operations "])
def test_an_exact_match_comes_alone(env: Environment, search: str) -> None:
    found = env.get_distinct_values("departments", "dept_name", search=search)
    assert [(v.value, v.match) for v in found.values] == [("Field Operations", "exact")]
    assert found.note and "Exact match" in found.note and "limit" in found.note


def test_asking_for_more_puts_the_exact_match_first_then_values_holding_it(env: Environment) -> None:
    found = env.get_distinct_values("departments", "dept_name", search="finance", limit=10)
    assert [(v.value, v.match) for v in found.values] == [("Finance", "exact")]
    more = env.get_distinct_values("notes", "tag", search="pricing", limit=10)
    assert more.values[0].match == "exact"


def test_without_an_exact_match_values_holding_it_then_fuzzy_neighbours_each_with_its_kind(env: Environment) -> None:
    found = env.get_distinct_values("departments", "dept_name", search="operations")
    assert {v.match for v in found.values} == {"substring"}
    assert len(found.values) == 3
    misspelt = env.get_distinct_values("departments", "dept_name", search="Operatons")
    assert misspelt.values and all(v.match == "fuzzy" for v in misspelt.values)
    assert "(fuzzy)" in render(misspelt)
    nothing = env.get_distinct_values("departments", "dept_name", search="zzzz qqqq")
    assert not nothing.values and nothing.note and "resembles" in nothing.note


def test_sqlite_row_counts_without_statistics_say_at_least(tmp_path: Path) -> None:
    path = tmp_path / "nostats.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT)")
        conn.executemany("INSERT INTO events (kind) VALUES (?)", (("click",) for _ in range(100_050)))
        conn.execute("CREATE TABLE small (id INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO small VALUES (1)")
        conn.commit()
    env = Environment.open(path)
    listed = env.list_tables()
    events = next(t for t in listed.tables if t.name == "events")
    assert (events.row_estimate, events.rows_at_least) == (100_000, True)
    text = render(listed)
    assert "at least 100,000 rows" in text and "~1 row" in text and "~1 rows" not in text
    assert "at least 100,000 rows" in render(env.describe_table("events"))


@pytest.fixture(scope="module")
def subjects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("subjects") / "school.sqlite"
    rows = [("Physics",)] * 3 + [("Physics Teaching",)] * 2 + [("Astrophysics",), ("Chemistry",)] * 5
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE courses (id INTEGER PRIMARY KEY, subject TEXT)")
        conn.executemany("INSERT INTO courses (subject) VALUES (?)", rows * 100)
        conn.commit()
    return path


@pytest.mark.parametrize("scan_rows", [100_000, 1_000], ids=["in-memory", "live"])
def test_an_exact_match_comes_first_then_a_few_values_holding_it(subjects: Path, scan_rows: int) -> None:
    # issue 21, item 11: 'physics' finds 'Physics' and also shows 'Physics Teaching', in one call.
    env = Environment.open(subjects, settings=Settings(distinct_scan_rows=scan_rows))
    try:
        found = env.get_distinct_values("courses", "subject", search="physics")
        assert [(v.value, v.match) for v in found.values] == [
            ("Physics", "exact"),
            ("Astrophysics", "substring"),
            ("Physics Teaching", "substring"),
        ]
        assert found.note is not None and found.note.startswith("Exact match first")
        assert [v.value for v in env.get_distinct_values("courses", "subject", search="chemistry").values] == [
            "Chemistry"
        ]
    finally:
        env.db.close()


@pytest.mark.parametrize("written", ["Nov 3, 2025", "November 3 2025", "3 Nov 2025", "11/03/2025"])
def test_a_date_written_another_way_finds_the_stored_date(written: str) -> None:
    # issue 21, item 10: the demo stores dates as 2025-11-03; a question says "Nov 3, 2025".
    env = Environment.open("demo")
    try:
        found = env.get_distinct_values("absence_records", "absence_date", search=written)
        assert [(v.value, v.match) for v in found.values] == [("2025-11-03", "exact")]
        assert found.note is not None and "as the date 2025-11-03 it does" in found.note
        nowhere = env.get_distinct_values("absence_records", "absence_date", search="Nov 3, 2031")
        assert not nowhere.values and nowhere.note and "do not filter on a guess" in nowhere.note
    finally:
        env.db.close()
