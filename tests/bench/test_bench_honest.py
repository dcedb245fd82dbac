"""The directive bench reports what it ran: a held-out headline, the options it used, baselines by what they are."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from fixtures.datasets import shared_datasets
from fixtures.openai_server import chat_reply, scripted_server
from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.cli.directives import print_report
from sophrosyne.bench.data.files import load_custom
from sophrosyne.bench.directives_bench import run_directives_bench
from sophrosyne.bench.directives_report import report, summarize
from sophrosyne.cli.terminal import console
from sophrosyne.directives import DirectiveSettings, fitted_model

FIXTURES = Path(__file__).parents[1] / "fixtures" / "directives"
SHOP = ("--questions", str(FIXTURES / "questions.jsonl"), "--tables", str(FIXTURES / "tables.json"))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(bench_app, ["directives", *args, "--quiet"], env={"COLUMNS": "200"})


def written(result: Result, path: Path) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def shop_twice(tmp_path: Path, without_knowledge: bool = False) -> tuple[Path, Path]:
    """The shop fixture as two databases, `shop` and `shop_copy`, with the same questions on each; with
    `without_knowledge`, each question a second time with no knowledge."""
    entry = json.loads((FIXTURES / "tables.json").read_text())[0]
    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps([entry, {**entry, "db_id": "shop_copy"}]))
    rows = [json.loads(line) for line in (FIXTURES / "questions.jsonl").read_text().splitlines() if line.strip()]
    rows += [{**r, "question_id": r["question_id"] + 100, "db_id": "shop_copy"} for r in rows]
    if without_knowledge:
        rows += [{**r, "question_id": r["question_id"] + 1000, "evidence": ""} for r in rows]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(r) for r in rows))
    return questions, tables


# -- 6: the headline is the held-out part -----------------------------------------------------------------


def test_the_headline_is_the_held_out_part_with_tuning_and_whole_beside_it(tmp_path: Path) -> None:
    questions, tables = shop_twice(tmp_path)
    data = load_custom(questions, tables, FIXTURES / "descriptions")
    origin = {**fitted_model().origin, "dataset": "custom", "tuning_databases": ["shop"]}
    run = run_directives_bench(data, settings=DirectiveSettings(model=replace(fitted_model(), origin=origin)))
    result = report(run)
    assert result["headline"] == "holdout" and list(result["parts"]) == ["holdout", "tune", "all"]
    assert result["tuning"] == {"dataset": "custom", "databases": ["shop"], "holdout_databases": ["shop_copy"]}
    held_out = result["parts"]["holdout"]
    assert result["summary"] == held_out["summary"] and result["curve"] == held_out["curve"]
    assert result["per_difficulty"] == held_out["per_difficulty"]
    assert result["summary"]["questions"] == 4 and result["parts"]["all"]["summary"]["questions"] == 8
    copy = [o for o in run.outcomes if o.system == "directives" and o.question.db_id == "shop_copy"]
    assert result["summary"]["directives"] == summarize(copy, run.index_build_s)
    with console.capture() as captured:
        print_report(result)
    text = captured.get()
    assert "held-out databases (never used in tuning): 4 questions" in text.splitlines()[0]
    assert "Each part beside the headline" in text and "shop_copy (held-out)" in text and "shop (tuning)" in text
    assert "held-out safe rate" in text and "tuning prune rate" in text and "whole safe rate" in text


def test_a_dataset_never_tuned_on_prints_no_split(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = invoke(*SHOP, "--json", str(out), "--plot", str(tmp_path / "curve.png"))
    data = written(result, out)
    assert data["headline"] == "all" and list(data["parts"]) == ["all"] and data["tuning"] is None
    assert "all databases" in result.output.splitlines()[0]
    assert "held-out" not in result.output and "tuning" not in result.output
    refused = invoke(*SHOP, "--split", "holdout")
    assert refused.exit_code == 1 and "never tuned on custom" in refused.output


def test_spider_dev_has_no_split_and_bird_dev_names_its_parts(tmp_path: Path) -> None:
    shared_datasets("bird_dev", "spider")
    spider = written(
        invoke("--dataset", "spider-dev", "--limit", "20", "--json", str(tmp_path / "s.json")), tmp_path / "s.json"
    )
    assert spider["headline"] == "all" and spider["tuning"] is None
    assert invoke("--dataset", "spider-dev", "--split", "tune").exit_code == 1
    holdout = invoke("--dataset", "bird-dev", "--split", "holdout", "--limit", "20", "--json", str(tmp_path / "b.json"))
    bird = written(holdout, tmp_path / "b.json")
    assert bird["headline"] == "holdout" and bird["tuning"]["databases"] == fitted_model().origin["tuning_databases"]
    assert "held-out databases (never used in tuning)" in holdout.output.splitlines()[0]
    first = invoke("--dataset", "bird-dev", "--limit", "20")  # the first questions are all on a tuning database
    assert "tuning databases (fitted on them)" in first.output.splitlines()[0]


# -- 7: every option a run reports is the value it used ----------------------------------------------------


def test_the_report_records_every_option_as_the_run_used_it(tmp_path: Path) -> None:
    questions, tables = shop_twice(tmp_path, without_knowledge=True)
    files = ("--questions", str(questions), "--tables", str(tables))
    with scripted_server(lambda path, body: chat_reply("- products.category")) as (url, received):
        out = tmp_path / "report.json"
        args = ("--threshold", "0.9", "--question-threshold", "0.02", "--limit", "12", "--json", str(out))
        data = written(invoke(*files, *args, "--llm-base-url", url, "--llm-model", "small"), out)
    settings = data["settings"]
    assert settings["threshold"] == 0.9 and settings["question_threshold"] == 0.02
    assert settings["limit"] == 12 and settings["split"] == "all" and settings["dataset"] == "custom"
    assert settings["llm"] == {"base_url": url, "model": "small", "api_key": None}
    assert settings["bridge_ends"] == DirectiveSettings().bridge_ends
    assert settings["model"]["commit"] == fitted_model().origin["commit"]
    # ... and they are what the run did: 12 questions, 12 model calls, and the recorded thresholds reproduce
    # the figures, which swapping the two thresholds would not.
    assert data["summary"]["questions"] == 12 and len(received) == 12 and {r["model"] for r in received} == {"small"}
    dataset = load_custom(questions, tables)
    recorded = DirectiveSettings(threshold=settings["threshold"], question_threshold=settings["question_threshold"])
    again = report(run_directives_bench(dataset, settings=recorded, limit=12))["summary"]["directives"]
    swapped = DirectiveSettings(threshold=0.02, question_threshold=0.9)
    other = report(run_directives_bench(dataset, settings=swapped, limit=12))["summary"]["directives"]
    for key in ("safe_rate", "prune_rate", "flagged_per_question"):
        assert again[key] == data["summary"]["directives"][key]
    assert other["flagged_per_question"] != again["flagged_per_question"]


def test_without_options_the_report_holds_the_fitted_thresholds(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    settings = written(invoke(*SHOP, "--json", str(out)), out)["settings"]
    assert settings["threshold"] == fitted_model().with_knowledge.threshold
    assert settings["question_threshold"] == fitted_model().without_knowledge.threshold
    assert settings["limit"] is None and settings["llm"] is None


# -- 8: the paper's baseline by what it is; the model's column inference benchmarked ---------------------------


def test_the_model_runs_beside_the_rules_and_the_paper_baseline_says_what_it_is(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    reply = chat_reply("- suppliers.country\n- products.category")
    with scripted_server(lambda path, body: reply) as (url, received):
        result = invoke(*SHOP, "--llm-base-url", url, "--llm-model", "small", "--json", str(out))
    data = written(result, out)
    summary = data["summary"]
    assert {"directives", "paper_rules_top1", "directives_llm", "paper_llm_top1"} <= set(summary)
    assert "paper" not in summary and "paper" not in data["per_database"]["shop"]
    assert summary["directives_llm"]["questions"] == 4 and len(received) == 4
    assert "Which supplier provides the product named Tea?" in received[1]["messages"][0]["content"]
    # The paper's method keeps the top-1 table of each name the model gave, and nothing else.
    assert summary["paper_llm_top1"]["flagged_per_question"] == 6.0
    labels = data["systems"]
    assert "rules standing in for its LLM column inference" in labels["paper_rules_top1"]
    assert "top-1 table per inferred column name" in labels["paper_rules_top1"]
    assert "no foreign-key bridging" in labels["paper_rules_top1"]
    assert all("abstain_rate" in summary[s] for s in labels)
    assert "abstain rate" in result.output and "paper_rules_top1" in result.output
    assert "directives_llm" in result.output


def test_a_model_needs_both_its_endpoint_and_its_name() -> None:
    result = invoke(*SHOP, "--llm-base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 2 and "go together" in result.output
