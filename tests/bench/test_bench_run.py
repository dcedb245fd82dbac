"""`bench run` end to end with the scripted model over real HTTP: four arms, resume after a kill, shards merged,
the report (terminal, JSON, HTML with plots and the question browser)."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fixtures.bench_model import PRICES, Plan, bench_agent, plans_for
from fixtures.browser import rendered_dom
from fixtures.datasets import shared_datasets
from fixtures.openai_server import scripted_server
from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.data.registry import load_suite
from sophrosyne.bench.runs import read_runs, stable_view

ARMS = ("coarse", "none", "directives", "oracle")


@functools.cache
def _plans() -> dict[str, Plan]:
    return plans_for(load_suite("bird-dev"))


@pytest.fixture()
def model_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The scripted agent for BIRD dev's questions, and the settings that point `bench run` at it."""
    shared_datasets("bird_dev")
    plans = _plans()
    with scripted_server(bench_agent(plans)) as (url, _received):
        variables = {
            "SOPHROSYNE_MODEL": "scripted",
            "SOPHROSYNE_BASE_URL": url,
            "SOPHROSYNE_API_KEY": "test",
            "SOPHROSYNE_LLM_PRICES": json.dumps(PRICES),
        }
        for key, value in variables.items():
            monkeypatch.setenv(key, value)
        yield variables


def bench(*args: str) -> str:
    result = CliRunner().invoke(bench_app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def _by_key(path: Path) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in read_runs([path])}


def test_four_arms_record_every_metric_and_the_report_opens_in_headless_chromium(
    tmp_path: Path, model_env: dict[str, str]
) -> None:
    common = ["--dataset", "bird-dev", "--db", "superhero", "--limit", "3", "--concurrency", "4", "--quiet"]
    whole = tmp_path / "whole.jsonl"
    output = bench("run", *common, "--out", str(whole), "--json", str(tmp_path / "run.json"))
    assert "12 answer(s) this run, 0 already" in output
    records = _by_key(whole)
    assert len(records) == 12 and {r["arm"] for r in records.values()} == set(ARMS)
    for record in records.values():
        assert record["outcome"] == "answer", record
        x = record["exploration"]
        for name in ("over_exploration", "extra_final_tables", "tool_calls", "tokens_in", "tokens_out", "wall_s"):
            assert x[name] is not None, (record["key"], name)
        assert x["cost"] > 0
    coarse = [r for r in records.values() if r["arm"] == "coarse"]
    assert all(r["trace"][0]["name"] == "execute_sql" or r["trace"][0]["kind"] == "model" for r in coarse)
    assert all(not any(s["name"] == "describe_table" for s in r["trace"]) for r in coarse)
    summary = json.loads((tmp_path / "run.json").read_text())
    assert summary["summary"]["questions"] == 3 and 0 <= summary["summary"]["ex"] <= 1
    arms = summary["arms"]
    assert arms["oracle"]["over_exploration"]["mean"] == 0.0
    assert arms["none"]["over_exploration"]["mean"] > arms["oracle"]["over_exploration"]["mean"]
    assert arms["directives"]["ex"] >= arms["none"]["ex"]
    # The report: terminal table, JSON with every metric, HTML with plots and the browser's data.
    report = tmp_path / "report.json"
    page = tmp_path / "report.html"
    output = bench("report", str(whole), "--json", str(report), "--html", str(page))
    assert "over-explored" in output and "directives" in output
    figures = json.loads(report.read_text())
    assert figures["directive_curve"]["points"] and figures["per_difficulty"] and figures["per_database"]
    html = page.read_text()
    assert html.count("<svg") == 7 and '"key": "oracle/' in html
    # Headless Chromium, with no network, runs the page: the plots are there and the browser lists and opens
    # the questions.
    dom = rendered_dom(page)
    assert dom.count("<svg") == 7
    assert re.search(r'id="browser-count"[^>]*>3 of 3 questions', dom)
    assert dom.count('class="item') == 3 and 'class="item active"' in dom
    assert dom.count('class="arm"') == 4 and "Trace" in dom and "Gold SQL" in dom
    # Nothing to fetch: no external source, link, stylesheet or font (SVG namespaces are names, not fetched).
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import""", html)


def test_a_killed_run_resumes_without_redoing_finished_questions_and_shards_merge_into_it(
    tmp_path: Path, model_env: dict[str, str]
) -> None:
    out = tmp_path / "run.jsonl"
    args = ["--dataset", "bird-dev", "--db", "superhero", "--limit", "4", "--arm", "none", "--arm", "coarse"]
    args += ["--concurrency", "2", "--quiet"]
    command = [sys.executable, "-m", "sophrosyne", "bench", "run", *args, "--out", str(out)]
    environment = {**os.environ, **model_env, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    with subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            if out.is_file() and len(out.read_bytes().splitlines()) >= 3:
                break
            time.sleep(0.05)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        process.send_signal(signal.SIGKILL)  # midway: no chance to finish what is in flight
        process.wait()
    before = out.read_bytes()
    finished = {r["key"] for r in read_runs([out])}
    assert 3 <= len(finished) < 8
    output = bench("run", *args, "--out", str(out))
    assert f"{8 - len(finished)} answer(s) this run, {len(finished)} already" in output
    after = read_runs([out])
    assert out.read_bytes().startswith(before.rstrip(b"\n"))  # the first run's records are left as they were
    assert len(after) == 8 and len({r["key"] for r in after}) == 8
    assert bench("run", *args, "--out", str(out)).count("0 answer(s) this run, 8 already") == 1
    # Two shards of the same run, merged, hold the same records (timings aside).
    for shard in ("1/2", "2/2"):
        bench("run", *args, "--shard", shard, "--out", str(tmp_path / f"shard{shard[0]}.jsonl"))
    merged = tmp_path / "merged.jsonl"
    bench("merge", str(tmp_path / "shard1.jsonl"), str(tmp_path / "shard2.jsonl"), "--out", str(merged))
    assert {k: stable_view(r) for k, r in _by_key(merged).items()} == {
        k: stable_view(r) for k, r in _by_key(out).items()
    }


def test_the_flex_solver_runs_in_the_harness(tmp_path: Path, model_env: dict[str, str]) -> None:
    out = tmp_path / "flex.jsonl"
    args = ["--dataset", "bird-dev", "--db", "superhero", "--limit", "2", "--arm", "none", "--arm", "directives"]
    bench("run", *args, "--solver", "flex", "--quiet", "--out", str(out))
    records = read_runs([out])
    assert len(records) == 4 and {r["solver"] for r in records} == {"flex"}
    for record in records:
        assert record["outcome"] == "answer", record["reason"]
        assert any(s["name"] == "execute_sql" and s["plan"] == 1 for s in record["trace"])  # the plan's program
        assert record["exploration"]["explored"] and record["exploration"]["tokens_in"] > 0
