"""`bench score` on the shared datasets: the gold SQL scores 100%, and wrong answers made from it score 0 wherever
their result differs. Fast tests take a sample; `pytest -m slow -s` runs every question and prints the figures."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fixtures.datasets import shared_datasets
from fixtures.mutations import MUTATIONS, bag_changed, set_changed
from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.data.registry import load_suite
from sophrosyne.bench.data.suites import select
from sophrosyne.bench.data.types import Suite
from sophrosyne.bench.metrics import order_matters, spider_prepare
from sophrosyne.bench.predictions import Predictions
from sophrosyne.bench.score import score_predictions


def _rows(path: str, sql: str, lenient: bool) -> list[tuple[Any, ...]] | None:
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    if lenient:
        conn.text_factory = lambda b: b.decode(errors="ignore")
    try:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def mutation_figures(suite: Suite) -> dict[str, dict[str, int]]:
    """Per mutation: questions it applies to, those whose result changed, and of those how many scored 0.

    Spider's results are those of the queries as its evaluation runs them: without DISTINCT (test-suite's
    default), so COUNT(DISTINCT a) and COUNT(DISTINCT b) are the same answer there; `distinct_only` counts the
    mutants whose result differs only with DISTINCT kept."""
    spider = suite.metric == "spider"
    figures: dict[str, dict[str, int]] = {}
    for name, mutate in MUTATIONS.items():
        wrong: dict[str, str] = {}
        for q in suite.questions:
            mutant = mutate(q.sql, suite.catalogs[q.db_id])
            if mutant is not None:
                wrong[q.id] = mutant
        applied = select(suite, limit=None)
        applied.questions = [q for q in suite.questions if q.id in wrong]
        verdicts = score_predictions(applied, Predictions(sql=wrong), jobs=2)
        changed = zero = unchanged_one = failed = distinct_only = 0
        for verdict in verdicts:
            q = verdict.question
            target = suite.targets[q.db_id]
            run = spider_prepare if spider else str
            gold = _rows(target, run(q.sql), spider)
            mutant = _rows(target, run(wrong[q.id]), spider)
            if gold is None:
                pytest.fail(f"gold SQL of {q.id} fails: {q.sql}")
            if mutant is None:
                failed += 1
                assert verdict.ex == 0, (q.id, wrong[q.id])
                continue
            differs = bag_changed(gold, mutant, order_matters(q.sql)) if spider else set_changed(gold, mutant)
            if differs:
                changed += 1
                zero += verdict.ex == 0
                assert verdict.ex == 0, f"{name} of {q.id} changed the result but scored 1: {wrong[q.id]}"
            else:
                unchanged_one += verdict.ex
                if not spider:  # the same set of rows is the same answer for BIRD, both ways
                    assert verdict.ex == 1, f"{name} of {q.id} kept the result but scored 0: {wrong[q.id]}"
                if spider:
                    raw_gold, raw_mutant = _rows(target, q.sql, True), _rows(target, wrong[q.id], True)
                    distinct_only += raw_mutant is not None and bag_changed(raw_gold or [], raw_mutant, False)
        figures[name] = {
            "applied": len(wrong),
            "result_changed": changed,
            "changed_scored_0": zero,
            "mutant_failed_scored_0": failed,
            "unchanged_scored_1": unchanged_one,
            **({"distinct_only": distinct_only} if spider else {}),
        }
    return figures


def _gold_predictions(suite: Suite) -> Predictions:
    return Predictions(sql={q.id: q.sql for q in suite.questions})


@pytest.mark.parametrize(("dataset", "expected"), [("bird-dev", 432), ("spider-dev", 972)])
def test_the_runnable_questions_are_the_ones_with_a_database(dataset: str, expected: int) -> None:
    shared_datasets("bird_dev", "spider")
    suite = load_suite(dataset)
    assert len(suite.questions) == expected
    assert all(s.reason == "database file absent" for s in suite.skipped)
    assert len(suite.questions) + len(suite.skipped) == len(suite.order)


@pytest.mark.parametrize("dataset", ["bird-dev", "spider-dev"])
def test_gold_sql_scores_100_percent_and_mutants_0_on_a_sample(dataset: str) -> None:
    shared_datasets("bird_dev", "spider")
    suite = load_suite(dataset)
    # Every 20th question: all three of BIRD's databases, a spread of Spider's.
    suite.questions = suite.questions[::20]
    verdicts = score_predictions(suite, _gold_predictions(suite))
    assert [v.ex for v in verdicts] == [1] * len(verdicts)
    figures = mutation_figures(suite)
    assert all(f["result_changed"] > 0 for f in figures.values()), figures


def test_bench_score_cli_reads_bird_predict_json_and_writes_the_summary(tmp_path: Path) -> None:
    root = shared_datasets("bird_dev")
    dev = json.loads((root / "bird_dev" / "dev.json").read_text())
    wanted = [q for q in dev if q["db_id"] == "superhero"][:6]
    predictions = {str(q["question_id"]): f"{q['SQL']}\t----- bird -----\t{q['db_id']}" for q in wanted}
    predictions[str(wanted[0]["question_id"])] = "SELECT 1\t----- bird -----\tsuperhero"  # one wrong answer
    path = tmp_path / "predict_dev.json"
    path.write_text(json.dumps(predictions))
    out = tmp_path / "score.json"
    args = ["score", "--dataset", "bird-dev", "--db", "superhero", "--limit", "6", "--predictions", str(path)]
    result = CliRunner().invoke(bench_app, [*args, "--json", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["summary"]["questions"] == 6
    assert report["summary"]["ex"] == pytest.approx(5 / 6, abs=1e-4)
    assert report["predictions"]["format"] == "bird-json"
    assert report["questions"][0]["ex"] == 0 and report["questions"][1]["ex"] == 1


@pytest.mark.slow
@pytest.mark.parametrize(("dataset", "expected"), [("bird-dev", 432), ("spider-dev", 972)])
def test_every_runnable_gold_query_scores_100_percent_and_every_changed_mutant_0(dataset: str, expected: int) -> None:
    shared_datasets("bird_dev", "spider")
    suite = load_suite(dataset)
    verdicts = score_predictions(suite, _gold_predictions(suite))
    assert len(verdicts) == expected
    assert sum(v.ex for v in verdicts) == expected
    figures = mutation_figures(suite)
    print(f"\n{dataset}: gold {sum(v.ex for v in verdicts)}/{expected}; mutations {json.dumps(figures)}")
