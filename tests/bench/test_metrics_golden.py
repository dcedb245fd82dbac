"""Every scoring rule on hand-made golden cases (`tests/golden/metrics/*.json`); each file names the official code
its expected values come from (they were checked against that code, run on the same cases)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.spider2_eval import Spider2Gold, Spider2Rule, load_gold, read_result_csv, vectors_match
from sophrosyne.bench.execution import Runner
from sophrosyne.bench.metrics import (
    bird_ex,
    order_matters,
    r_ves,
    soft_f1,
    spider_prepare,
    spider_result_eq,
    ves_reward,
)

GOLDEN = Path(__file__).parents[1] / "golden" / "metrics"


def _cases(name: str, key: str = "cases") -> list[dict[str, Any]]:
    return list(json.loads((GOLDEN / name).read_text())[key])


def _rows(rows: list[list[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("case", _cases("bird.json"), ids=lambda c: c["rule"])
def test_bird_execution_accuracy_and_soft_f1(case: dict[str, Any]) -> None:
    predicted, gold = _rows(case["predicted"]), _rows(case["gold"])
    assert bird_ex(predicted, gold) == case["ex"]
    assert soft_f1(predicted, gold) == pytest.approx(case["soft_f1"])


@pytest.mark.parametrize("case", _cases("ves.json", "rewards"), ids=lambda c: c["rule"])
def test_r_ves_reward_of_the_time_ratios(case: dict[str, Any]) -> None:
    assert ves_reward(case["ratios"]) == case["reward"]


@pytest.mark.parametrize("case", _cases("ves.json", "scores"), ids=lambda c: c["rule"])
def test_r_ves_score(case: dict[str, Any]) -> None:
    assert r_ves(case["rewards"]) == pytest.approx(case["r_ves"])


@pytest.mark.parametrize("case", _cases("spider.json", "results"), ids=lambda c: c["rule"])
def test_spider_denotation_match(case: dict[str, Any]) -> None:
    assert spider_result_eq(_rows(case["gold"]), _rows(case["predicted"]), case["ordered"]) is case["match"]


@pytest.mark.parametrize("case", _cases("spider.json", "rewrites"), ids=lambda c: c["rule"])
def test_spider_query_rewrites(case: dict[str, Any]) -> None:
    assert spider_prepare(case["sql"]) == case["expected"]


@pytest.mark.parametrize("case", _cases("spider2.json"), ids=lambda c: c["rule"])
def test_spider2_result_comparison(case: dict[str, Any], tmp_path: Path) -> None:
    paths = []
    for i, text in enumerate(case["gold"]):
        path = tmp_path / f"x001_{'abcdefgh'[i]}.csv"
        path.write_text(text)
        paths.append(path)
    gold = Spider2Gold({"x001": Spider2Rule(case["condition_cols"], case["ignore_order"])}, {"x001": paths})
    assert gold.score("x001", read_result_csv(case["predicted"])) == case["score"]


def test_the_sort_key_orders_numbers_by_their_text_on_both_sides() -> None:
    # The official sort key is (is None, str(x), is a number): 10 sorts before 9, on both sides alike.
    assert vectors_match([9, 10], [10, 9], ignore_order=True)
    assert not vectors_match([9, 10], [10, 9], ignore_order=False)


# -- rules that need a database: errors, timeouts, Spider's order rule -------------------------------------


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        db.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "y"), (2, "y"), (3, "z")])
    return path


def test_an_error_is_an_execution_without_rows(shop: Path) -> None:
    result = Runner(shop).run("SELECT nope FROM t", 5)
    assert not result.ok and "nope" in (result.error or "")


def test_a_query_past_its_deadline_is_stopped(shop: Path) -> None:
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    result = Runner(shop).run(slow, 0.3)
    assert result.timed_out and result.seconds == pytest.approx(0.3)


def test_the_runner_cannot_write(shop: Path) -> None:
    result = Runner(shop).run("DELETE FROM t", 5)
    assert not result.ok and "readonly" in (result.error or "").replace(" ", "").lower()
    assert sqlite3.connect(shop).execute("SELECT count(*) FROM t").fetchone() == (4,)


def test_spider_orders_rows_only_when_the_gold_sorts(shop: Path) -> None:
    runner = Runner(shop)
    gold_sql = "SELECT a FROM t ORDER BY a"
    gold = runner.run(spider_prepare(gold_sql), 5).rows
    reversed_rows = runner.run("SELECT a FROM t ORDER BY a DESC", 5).rows
    assert order_matters(gold_sql) and not spider_result_eq(gold, reversed_rows, True)
    assert spider_result_eq(gold, reversed_rows, order_matters("SELECT a FROM t"))


def test_spider_compares_queries_without_distinct(shop: Path) -> None:
    runner = Runner(shop)
    gold = runner.run(spider_prepare("SELECT DISTINCT b FROM t"), 5).rows
    assert spider_result_eq(gold, runner.run(spider_prepare("SELECT b FROM t"), 5).rows, False)
    assert not spider_result_eq(gold, runner.run("SELECT DISTINCT b FROM t", 5).rows, False)


# -- Spider 2.0 on its gold CSVs -------------------------------------------------------------------------


def test_every_spider2_gold_variant_scores_1_as_a_prediction() -> None:
    root = shared_datasets("spider2_lite")
    gold = load_gold(root / "spider2_lite")
    assert len(gold.variants) == 28 and sum(len(v) for v in gold.variants.values()) == 80
    for instance, paths in gold.variants.items():
        for path in paths:
            assert gold.score(instance, read_result_csv(path)) == 1, path.name


def test_spider2_gold_csvs_changed_beyond_the_tolerance_score_0() -> None:
    root = shared_datasets("spider2_lite")
    gold = load_gold(root / "spider2_lite")
    changed = 0
    for instance, paths in gold.variants.items():
        if len(paths) != 1 or gold.rules[instance].condition_cols:
            continue  # one gold, every column compared: any change of any cell must fail
        table = read_result_csv(paths[0])
        for j, kind in enumerate(table.kinds):
            if kind in ("int", "float") and table.rows:
                moved = [None if v is None else v + 0.5 for v in table.cells[j]]
                table.cells[j], table.kinds[j] = moved, "float"
                assert gold.score(instance, table) == 0, instance
                changed += 1
                break
    assert changed > 0
