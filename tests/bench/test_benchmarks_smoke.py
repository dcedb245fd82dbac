"""Smoke test of benchmarks/tool_latency.py on a tiny database: it runs, and its JSON has the agreed shape."""

from __future__ import annotations

import importlib.util
import io
import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tool_latency.py"
STATS = {"n", "mean_ms", "p50_ms", "p95_ms", "min_ms", "max_ms"}
CHECKS = {
    "list_tables_p95_in_process",
    "describe_table_p95_in_process",
    "get_distinct_values_search_p95",
    "get_distinct_values_search_cold_p95",
    "stdio_round_trip_vs_echo",
}
REPEATS = 3


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    # The script imports its synthetic database builder from its own folder, as `python SCRIPT` would.
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("tool_latency", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tool_latency"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _run(bench: ModuleType, tmp_path: Path, *, stdio: bool) -> dict:
    out = tmp_path / "out" / "report.json"
    report = bench.run(
        db=tmp_path / "bench.sqlite",
        out=out,
        tables=20,
        rows=5_000,
        repeats=REPEATS,
        stdio=stdio,
        console=Console(file=io.StringIO()),
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    return report


def _assert_stats(stats: dict) -> None:
    assert set(stats) >= STATS
    assert stats["min_ms"] <= stats["p50_ms"] <= stats["p95_ms"] <= stats["max_ms"]


def test_in_process_report_shape(bench: ModuleType, tmp_path: Path) -> None:
    report = _run(bench, tmp_path, stdio=False)
    assert report["machine"]["cores"] >= 1
    assert {"mcp", "sqlglot", "sqlalchemy"} <= set(report["machine"]["versions"])
    db = report["database"]
    assert (db["tables"], db["rows"], db["big_table"]) == (20, 5_000, "people")
    assert 0 < db["distinct_values"] < 5_000
    cases = report["in_process"]["cases"]
    tools = {c["tool"] for c in cases.values()}
    assert {"list_tables", "describe_table", "get_distinct_values", "find_rows", "execute_sql"} <= tools
    for case in cases.values():
        _assert_stats(case)
        assert case["n"] == REPEATS
    assert any(c["args"].get("search") == "jhonson" for c in cases.values())  # a misspelling is searched
    groups = report["in_process"]["groups"]
    assert {"list_tables", "describe_table", "get_distinct_values_search"} <= set(groups)
    assert report["in_process"]["cold_search"]["n"] == REPEATS
    assert report["stdio"] is None
    checks = report["checks"]
    assert set(checks) == CHECKS | {"all_pass"}
    assert checks["stdio_round_trip_vs_echo"] == {"pass": None, "skipped": True}
    for name in CHECKS - {"stdio_round_trip_vs_echo"}:
        assert isinstance(checks[name]["pass"], bool)
        assert checks[name]["value"] >= 0


def test_database_is_cached_and_deterministic(bench: ModuleType, tmp_path: Path) -> None:
    quiet = Console(file=io.StringIO())
    first = bench.build_database(tmp_path / "a.sqlite", tables=8, rows=2_000, seed=3, console=quiet)
    again = bench.build_database(tmp_path / "a.sqlite", tables=8, rows=2_000, seed=3, console=quiet)
    other = bench.build_database(tmp_path / "b.sqlite", tables=8, rows=2_000, seed=3, console=quiet)
    assert (first.reused, again.reused, other.reused) == (False, True, False)

    def content(path: Path) -> tuple:
        with closing(sqlite3.connect(path)) as conn:
            schema = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
            names = conn.execute("SELECT group_concat(full_name) FROM people").fetchone()
        return schema, names

    assert content(tmp_path / "a.sqlite") == content(tmp_path / "b.sqlite")
    foreign = tmp_path / "foreign.sqlite"  # a database this script did not build is never overwritten
    with closing(sqlite3.connect(foreign)) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(SystemExit):
        bench.build_database(foreign, tables=8, rows=2_000, console=quiet)


def test_help_has_an_example(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--help"])
    assert "example:" in capsys.readouterr().out


@pytest.mark.slow
def test_stdio_report_shape(bench: ModuleType, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # Spawning two MCP servers takes 5-15 s on two busy cores: too slow for the default suite.
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("spawns two MCP servers; run with -m slow")
    report = _run(bench, tmp_path, stdio=True)
    stdio = report["stdio"]
    _assert_stats(stdio["echo"])
    assert stdio["echo"]["n"] == REPEATS * len(stdio["cases"])
    assert stdio["errors"] == {}
    for case in stdio["cases"].values():
        _assert_stats(case)
        assert case["ratio_p50"] > 0 and case["ratio_p95"] > 0
    check = report["checks"]["stdio_round_trip_vs_echo"]
    assert isinstance(check["pass"], bool)
    assert set(check["per_tool_pass"]) == set(stdio["cases"])
