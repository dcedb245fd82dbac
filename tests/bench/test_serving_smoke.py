"""Smoke test of benchmarks/serving.py: its wire parsing and CPU reading, and (-m slow) a short run against our
own `serve --http` on a tiny database, whose JSON has the agreed shape."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "serving.py"
FIGURES = {
    "clients",
    "calls",
    "errors",
    "req_per_s",
    "p50_ms",
    "p99_ms",
    "server_cpu_per_call_ms",
    "client_cpu_per_call_ms",
}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))  # it imports peers.py and bytecode.py from its folder
    spec = importlib.util.spec_from_file_location("serving", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["serving"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_messages_of_json_and_event_streams(bench: ModuleType) -> None:
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}
    assert bench.messages(json.dumps(answer).encode()) == [answer]
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    stream = f"event: message\ndata: {json.dumps(progress)}\n\nevent: message\ndata: {json.dumps(answer)}\n\n"
    assert bench.messages(stream.encode()) == [progress, answer]
    assert bench.messages(b"id: 0\ndata: \n\n" + f"data: {json.dumps(answer)}".encode())[-1] == answer


def test_failure_names_tool_and_protocol_errors(bench: ModuleType) -> None:
    assert bench.failure({"id": 1, "result": {"content": [{"type": "text", "text": "ok"}]}}) is None
    refused = {"id": 1, "result": {"isError": True, "content": [{"type": "text", "text": "no table `x`"}]}}
    assert bench.failure(refused) == "tool error: no table `x`"
    assert "rpc error" in bench.failure({"id": 1, "error": {"code": -32602, "message": "bad"}})


def test_tree_cpu_counts_this_process(bench: ModuleType) -> None:
    before = bench.tree_cpu_s(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    assert bench.tree_cpu_s(os.getpid()) > before
    assert bench.tree_cpu_s(2**22 + 1) == 0.0  # no such process


def test_checks_compare_with_dbhub(bench: ModuleType) -> None:
    level = {"req_per_s": 80.0, "p50_ms": 10.0, "p99_ms": 30.0, "server_cpu_per_call_ms": 2.0, "errors": 0}
    peer = {"req_per_s": 100.0, "p50_ms": 5.0, "p99_ms": 15.0, "server_cpu_per_call_ms": 1.0, "errors": 0}
    results = {"sophrosyne": {"32": level, "64": level}, "dbhub": {"32": peer, "64": peer}}
    by_dbhub = bench.ratios(results, "sophrosyne", "dbhub")
    assert by_dbhub["32"] == {"req_per_s": 0.8, "p50_ms": 2.0, "p99_ms": 2.0, "server_cpu_per_call_ms": 2.0}
    found = bench.checks(results, by_dbhub)
    assert found["throughput_32_vs_dbhub"]["pass"] is True
    assert found["p99_64_vs_dbhub"]["pass"] is False
    assert found["cpu_per_call_ms"] == {"value": 2.0, "limit": 1.5, "pass": False}
    assert found["all_pass"] is False


def test_help_has_an_example(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--help"])
    assert "example:" in capsys.readouterr().out.lower()


def _tiny_toxicology(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(
            "CREATE TABLE atom (atom_id TEXT PRIMARY KEY, molecule_id TEXT, element TEXT);"
            "CREATE TABLE bond (bond_id TEXT PRIMARY KEY, molecule_id TEXT, bond_type TEXT);"
        )
        conn.executemany("INSERT INTO atom VALUES (?, ?, ?)", [(f"TR00{i}_1", f"TR00{i}", "c") for i in range(3)])
        conn.executemany("INSERT INTO bond VALUES (?, ?, ?)", [(f"TR00{i}_1_2", f"TR00{i}", "-") for i in range(3)])
        conn.commit()


@pytest.mark.slow
def test_short_run_against_our_server(bench: ModuleType, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # Spawns `serve --http` and loads it for a few seconds: too slow for the default suite.
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("spawns an HTTP server; run with -m slow")
    db = tmp_path / "tiny.sqlite"
    _tiny_toxicology(db)
    out = tmp_path / "out" / "serving.json"
    report = bench.run(
        out=out,
        peers_dir=tmp_path / "peers",
        servers=["sophrosyne"],
        levels=[1, 4],
        duration_s=1.5,
        warmup_s=0.5,
        workers=1,
        client_procs=1,
        base_src=None,
        db=db,
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    levels = report["results"]["sophrosyne"]
    assert set(levels) == {"1", "4"}
    for figures in levels.values():
        assert set(figures) >= FIGURES
        assert figures["errors"] == 0, figures["first_errors"]
        assert figures["calls"] > 0 and figures["server_cpu_per_call_ms"] > 0
        assert figures["p50_ms"] <= figures["p99_ms"]
    assert report["checks"]["no_errors"]["pass"] is True
    assert report["ratios_ours_over_peer"] == {}
