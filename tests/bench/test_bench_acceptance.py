"""The harness's acceptance run (slow): 50 BIRD dev questions, concurrency 8, all four arms, with the scripted
model over real HTTP; killed midway and resumed; two shards merged equal to the whole; the report opened in
headless Chromium. `pytest -m slow tests/bench/test_bench_acceptance.py -s` prints every command's output; with
SOPHROSYNE_BENCH_OUT=DIR the run, report and page are copied there."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.bench_model import PRICES, bench_agent, plans_for
from fixtures.browser import rendered_dom
from fixtures.datasets import shared_datasets
from fixtures.openai_server import scripted_server
from sophrosyne.bench.data.registry import load_suite
from sophrosyne.bench.runs import read_runs, stable_view

COMMON = ["--dataset", "bird-dev", "--limit", "50", "--concurrency", "8", "--quiet"]


def _sophrosyne(args: list[str], env: dict[str, str]) -> str:
    command = [sys.executable, "-m", "sophrosyne", *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"\n$ sophrosyne {' '.join(args)}\n{result.stdout}")
    return result.stdout


@pytest.mark.slow
def test_fifty_bird_questions_in_four_arms_resume_merge_and_report(tmp_path: Path) -> None:
    shared_datasets("bird_dev")
    plans = plans_for(load_suite("bird-dev"))
    with scripted_server(bench_agent(plans)) as (url, _received):
        env = {
            **os.environ,
            "COLUMNS": "200",
            "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
            "SOPHROSYNE_MODEL": "scripted",
            "SOPHROSYNE_BASE_URL": url,
            "SOPHROSYNE_API_KEY": "test",
            "SOPHROSYNE_LLM_PRICES": json.dumps(PRICES),
        }
        run = tmp_path / "run.jsonl"
        # Killed midway: SIGKILL once a third of the 200 answers are recorded.
        command = [sys.executable, "-m", "sophrosyne", "bench", "run", *COMMON, "--out", str(run)]
        with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and process.poll() is None:
                if run.is_file() and len(run.read_bytes().splitlines()) >= 70:
                    break
                time.sleep(0.05)
            assert process.poll() is None, "the run ended before it could be killed"
            process.send_signal(signal.SIGKILL)
            process.wait()
        first = {r["key"] for r in read_runs([run])}
        print(f"\nkilled after {len(first)} of 200 answers were recorded")
        output = _sophrosyne(["bench", "run", *COMMON, "--out", str(run), "--json", str(tmp_path / "run.json")], env)
        assert f"{200 - len(first)} answer(s) this run, {len(first)} already" in output
        records = read_runs([run])
        assert len(records) == 200 and len({r["key"] for r in records}) == 200
        assert all(r["outcome"] != "error" for r in records)
        for shard in ("1/2", "2/2"):
            _sophrosyne(
                ["bench", "run", *COMMON, "--shard", shard, "--out", str(tmp_path / f"part{shard[0]}.jsonl")], env
            )
        merged = tmp_path / "merged.jsonl"
        parts = [str(tmp_path / "part1.jsonl"), str(tmp_path / "part2.jsonl")]
        _sophrosyne(["bench", "merge", *parts, "--out", str(merged)], env)
        whole = {r["key"]: stable_view(r) for r in records}
        assert {r["key"]: stable_view(r) for r in read_runs([merged])} == whole
        print("the two shards, merged, equal the unsharded run record for record (timings aside)")
        page, figures = tmp_path / "report.html", tmp_path / "report.json"
        _sophrosyne(["bench", "report", str(run), "--html", str(page), "--json", str(figures)], env)
    report = json.loads(figures.read_text())
    assert set(report["arms"]) == {"coarse", "none", "directives", "oracle"}
    for arm, f in report["arms"].items():
        assert f["questions"] == 50, arm
        for name in ("over_exploration", "extra_final_tables", "tool_calls", "tokens_in", "tokens_out", "wall_s"):
            assert f[name]["mean"] is not None, (arm, name)
        assert f["cost"] > 0 and f["ex_ci"][0] <= f["ex"] <= f["ex_ci"][1]
    assert report["directive_curve"]["points"]
    dom = rendered_dom(page)
    assert dom.count("<svg") == 7 and re.search(r'id="browser-count"[^>]*>50 of 50 questions', dom)
    assert dom.count('class="item') == 50 and dom.count('class="arm"') == 4
    items = dom.count('class="item')
    print(f"headless Chromium: {dom.count('<svg')} plots, {items} questions in the browser")
    keep = os.environ.get("SOPHROSYNE_BENCH_OUT")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for name in ("run.jsonl", "merged.jsonl", "report.html", "report.json", "run.json"):
            shutil.copy(tmp_path / name, Path(keep) / name)
