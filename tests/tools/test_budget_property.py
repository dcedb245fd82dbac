"""A property of every tool: whatever the schema (up to 20,000 tables, 2,000 columns) and the input (up to
1 MB), the response fits the token budget as text and as structured content, or is a short error."""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sophrosyne.environment import Environment
from sophrosyne.errors import SophrosyneError
from sophrosyne.settings import Settings
from sophrosyne.tools.budget import measure

# Characters that break quoting, splitting and rendering: dots, quotes, pipes, newlines, wide letters.
ODD = st.sampled_from([*"ab_.'\"` |\\\n%é日", "x"])
NAME = st.text(ODD, min_size=1, max_size=40).filter(lambda s: s.strip() and not s.lower().startswith("sqlite_"))
SIZES = [0, 1, 100, 10_000, 1_000_000]


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    """A text of 0 to 1,000,000 characters (made by repetition: drawing a megabyte would take minutes)."""
    unit = draw(st.text(ODD, min_size=1, max_size=8))
    size = draw(st.sampled_from(SIZES))
    return (unit * (size // len(unit) + 1))[:size]


@st.composite
def schemas(draw: st.DrawFn, most_tables: int, most_columns: int) -> dict[str, Any]:
    tables = draw(st.integers(1, most_tables))
    names = draw(st.lists(NAME, min_size=1, max_size=min(tables, 30), unique_by=str.lower))
    # Beyond the drawn names, plain ones: the schema's size is what matters for those.
    names += [f"t_{i:05d}" for i in range(tables - len(names))]
    wide = draw(st.integers(1, most_columns))
    value = draw(long_texts())
    return {"names": names, "wide": wide, "value": value[:100_000], "budget": draw(st.sampled_from([200, 800, 4000]))}


def build(spec: dict[str, Any], folder: Path) -> Path:
    path = folder / "random.sqlite"
    quoted = ['"' + n.replace('"', '""') + '"' for n in spec["names"]]
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("BEGIN")
        columns = ", ".join(f'"c{i}" TEXT' for i in range(spec["wide"]))
        conn.execute(f"CREATE TABLE {quoted[0]} (id INTEGER PRIMARY KEY, {columns})")
        marks = ", ".join("?" * (spec["wide"] + 1))
        conn.executemany(
            f"INSERT INTO {quoted[0]} VALUES ({marks})", [(i, *([spec["value"]] * spec["wide"])) for i in range(3)]
        )
        for name in quoted[1:]:
            conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, label TEXT, ref INTEGER)")
        conn.execute("COMMIT")
    return path


def within(budget: int, call: Any) -> None:
    try:
        result = call()
    except SophrosyneError as error:
        assert len(str(error)) <= 1500, str(error)[:200]
        return
    results = result if isinstance(result, list) else [result]
    for item in results:
        assert measure(item) <= budget, (type(item).__name__, measure(item))


def every_tool(spec: dict[str, Any], text: str, number: int, directives: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = build(spec, Path(folder))
        budget = spec["budget"]
        env = Environment.open(path, settings=Settings(token_budget=budget, directives=directives))
        try:
            first, other = spec["names"][0], spec["names"][-1]
            literal = text.replace("'", "''")
            table = '"' + first.replace('"', '""') + '"'
            within(budget, env.list_sources)
            within(budget, lambda: env.list_tables(question=text or None, knowledge=text or None))
            within(budget, lambda: env.list_tables(pattern=text[:50] or None, offset=number))
            within(budget, lambda: env.describe_table(first))
            within(budget, lambda: env.describe_table(text or other, offset=number))
            within(budget, lambda: env.get_distinct_values(first, "c0", search=text or None, limit=number or None))
            within(budget, lambda: env.get_distinct_values(other, text or "label"))
            within(budget, lambda: env.find_rows(text or "a", limit=number or None))
            within(budget, lambda: env.execute_sql(f"SELECT '{literal}' AS v, * FROM {table}"))
            within(budget, lambda: env.execute_sql(text or "SELECT 1", limit=number or None))
            within(budget, lambda: env.explain_sql(f"SELECT '{literal[:10_000]}' AS v"))
            if directives != "none":
                within(budget, lambda: env.search_schema(text or "label", k=number or 10))
        finally:
            env.db.close()


def common(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
    )


@common(8)
@given(spec=schemas(60, 200), text=long_texts(), number=st.integers(0, 5000))
def test_every_tool_fits_the_budget_on_small_random_schemas(spec: dict[str, Any], text: str, number: int) -> None:
    every_tool(spec, text, number, "none")


@common(3)
@given(spec=schemas(30, 20), text=long_texts())
def test_directives_and_schema_search_fit_the_budget(spec: dict[str, Any], text: str) -> None:
    every_tool(spec, text, 3, "directives")


@pytest.mark.slow
@common(6)
@given(spec=schemas(20_000, 2000), text=long_texts(), number=st.integers(0, 50_000))
def test_every_tool_fits_the_budget_on_large_random_schemas(spec: dict[str, Any], text: str, number: int) -> None:
    every_tool(spec, text, number, "directives")
