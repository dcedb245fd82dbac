"""The directives benchmark end to end on a tiny fixture, and the shared datasets when they are present."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.datasets import shared_datasets
from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.data.files import catalog_from_spider, load_custom
from sophrosyne.bench.data.registry import load_dataset
from sophrosyne.bench.directives_bench import run_directives_bench
from sophrosyne.bench.directives_report import report
from sophrosyne.bench.tune import split_databases

FIXTURES = Path(__file__).parents[1] / "fixtures" / "directives"
REQUIRED = {
    "questions",
    "safe_rate",
    "table_recall",
    "prune_rate",
    "flagged_per_question",
    "latency_ms_p50",
    "latency_ms_p95",
    "index_build_s",
}


@pytest.fixture()
def databases(tmp_path: Path) -> Path:
    folder = tmp_path / "dbs"
    (folder / "shop").mkdir(parents=True)
    with sqlite3.connect(folder / "shop" / "shop.sqlite") as db:
        db.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, full_name TEXT, city TEXT)")
        db.execute("INSERT INTO customers VALUES (1, 'Ann', 'Lyon')")
    return folder


def test_bench_directives_runs_end_to_end_and_writes_the_summary(tmp_path: Path, databases: Path) -> None:
    out = tmp_path / "out" / "report.json"
    plot = tmp_path / "out" / "curve.png"
    result = CliRunner().invoke(
        bench_app,
        [
            "directives",
            "--questions",
            str(FIXTURES / "questions.jsonl"),
            "--tables",
            str(FIXTURES / "tables.json"),
            "--descriptions",
            str(FIXTURES / "descriptions"),
            "--databases",
            str(databases),
            "--json",
            str(out),
            "--plot",
            str(plot),
            "--quiet",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "safe rate" in result.output and "Per database" in result.output
    data = json.loads(out.read_text())
    summary = data["summary"]
    assert set(summary) >= REQUIRED
    for system in ("none", "oracle", "paper_rules_top1"):
        assert set(summary["baselines"][system]) >= REQUIRED
    assert summary["questions"] == 4
    assert summary["oracle"]["safe_rate"] == 1.0 and summary["oracle"]["prune_rate"] == 1.0
    assert summary["none"]["prune_rate"] == 0.0
    assert data["curve"] and {"threshold", "safe_rate", "prune_rate"} <= set(data["curve"][0])
    assert plot.stat().st_size > 1000


def test_bench_help_has_an_example() -> None:
    result = CliRunner().invoke(bench_app, ["directives", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "Example:" in result.output


def test_catalog_from_spider_reads_nested_primary_keys() -> None:
    entry = json.loads((FIXTURES / "tables.json").read_text())[0]
    catalog = catalog_from_spider(entry)
    assert catalog.tables["order_items"].primary_key == ["order_id", "product_id"]
    assert catalog.tables["orders"].foreign_keys[0].ref_table == "customers"
    assert catalog.tables["customers"].columns[0].primary_key


def test_custom_dataset_and_split() -> None:
    data = load_custom(FIXTURES / "questions.jsonl", FIXTURES / "tables.json", FIXTURES / "descriptions")
    assert data.catalogs["shop"].tables["customers"].column("loyalty_tier").description  # type: ignore[union-attr]
    assert split_databases(["k", "b", "a", "j", "c", "d", "e", "f"]) == (["a", "b", "c", "d", "e", "f"], ["j", "k"])
    run = run_directives_bench(data, limit=2)
    assert report(run)["summary"]["questions"] == 2


def test_shared_datasets_load() -> None:
    shared_datasets("bird_dev", "spider")
    bird = load_dataset("bird-dev")
    assert len(bird.questions) == 1534 and len(bird.catalogs) == 11
    assert set(bird.database_files) == {"student_club", "superhero", "toxicology"}
    assert any(c.readable_name or c.description for c in bird.catalogs["card_games"].tables["cards"].columns)
    spider = load_dataset("spider-dev")
    assert len(spider.questions) == 1034 and len(spider.catalogs) == 20
