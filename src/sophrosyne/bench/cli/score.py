"""`sophrosyne bench score`: predicted SQL (or Spider 2.0 result CSVs) scored by execution."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sophrosyne.bench.cli.figures import figures_table, write_json
from sophrosyne.bench.cli.options import (
    DatabasesOption,
    DatasetOption,
    DbOption,
    DbUrlOption,
    DifficultyOption,
    JsonOption,
    LimitOption,
    MetricOption,
    QuestionsOption,
    QuietOption,
    TablesOption,
    open_suite,
)
from sophrosyne.cli.terminal import console, progress_bar, reported


def score_command(
    predictions: Annotated[
        Path,
        typer.Option(
            help="BIRD's predict_dev.json, Spider's one SQL per line, JSONL {question_id, sql}, or a folder of "
            "<id>.sql / <id>.csv files (Spider 2.0).",
        ),
    ],
    dataset: DatasetOption = None,
    questions: QuestionsOption = None,
    databases: DatabasesOption = None,
    db_url: DbUrlOption = None,
    tables: TablesOption = None,
    metric: MetricOption = "bird",
    audit: Annotated[
        Path | None,
        typer.Option(help="Audit log of `sophrosyne serve --audit-log`: adds the agent's exploration metrics."),
    ] = None,
    sessions: Annotated[
        Path | None, typer.Option(help="JSON {question_id: session} when sessions do not pass the question.")
    ] = None,
    limit: LimitOption = None,
    db: DbOption = None,
    difficulty: DifficultyOption = None,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds per query (default: BIRD 30, Spider 60, as their scripts).")
    ] = None,
    ves: Annotated[
        int, typer.Option(help="R-VES timing runs per correct BIRD question (mini-dev uses 100; 0 skips R-VES).")
    ] = 0,
    jobs: Annotated[int, typer.Option(help="Queries run at once.", min=1)] = 2,
    json_path: JsonOption = None,
    quiet: QuietOption = False,
) -> None:
    """Score predicted SQL (or Spider 2.0 result CSVs) by execution, with each benchmark's official rules.

    A question with no prediction scores 0; questions whose database is absent are reported and skipped.

    Example: sophrosyne bench score --dataset bird-dev --predictions predict_dev.json --json bench-out/score.json
    """
    from sophrosyne.bench.data.suites import select, suite_summary
    from sophrosyne.bench.predictions import read_predictions
    from sophrosyne.bench.score import grouped, score_predictions, summarize

    with reported():
        suite = open_suite(dataset, questions, databases, db_url, tables, metric)
        suite = select(suite, limit=limit, databases=db, difficulties=difficulty)
        predicted = read_predictions(predictions, suite.order)
        with progress_bar(not quiet) as tick:
            verdicts = score_predictions(suite, predicted, jobs=jobs, timeout_s=timeout, ves_iterations=ves, tick=tick)
        matched_note = ""
        if audit is not None:
            from sophrosyne.bench.score_audit import attach_audit

            matched = attach_audit(verdicts, suite, predicted, audit, sessions)
            matched_note = (
                f"{len(matched.work)} question(s) matched in the audit log; "
                f"{matched.unmatched_calls} call(s) in {len(matched.unmatched_sessions)} session(s) unmatched"
            )
        timed = ves > 0 and suite.metric == "bird"
        result: dict[str, Any] = {
            "summary": summarize(verdicts, suite.metric, ves=timed),
            "per_difficulty": grouped(verdicts, lambda v: v.question.difficulty, suite.metric, timed),
            "per_database": grouped(verdicts, lambda v: v.question.db_id, suite.metric, timed),
            "suite": suite_summary(suite),
            "predictions": {"path": str(predictions), "format": predicted.source, "unknown": predicted.unknown},
            "settings": {"timeout_s": timeout, "ves_iterations": ves, "jobs": jobs, "audit": str(audit or "")},
            "questions": [v.to_json() for v in verdicts],
            "skipped": [s.to_json() for s in suite.skipped],
        }
        print_score(result)
        if matched_note:
            console.print(f"[dim]{escape(matched_note)}[/]")
        if json_path:
            write_json(result, json_path)


def print_score(result: dict[str, Any]) -> None:
    suite, summary = result["suite"], result["summary"]
    metrics = [m for m in ("questions", "ex", "soft_f1", "r_ves", "predicted", "errors", "timeouts") if m in summary]
    console.print(figures_table(f"{suite['dataset']} ({suite['metric']} rules)", {"all": summary}, "", metrics))
    console.print(figures_table("Per difficulty", result["per_difficulty"], "difficulty", metrics))
    console.print(figures_table("Per database", result["per_database"], "database", metrics))
    exploration = summary.get("exploration")
    if exploration:
        names = [k for k, v in exploration.items() if v is not None]
        console.print(figures_table("Exploration (from the audit log)", {"all": exploration}, "", names))
    if suite["skipped"]:
        reasons = ", ".join(f"{n} {r}" for r, n in suite["skipped_by_reason"].items())
        console.print(f"[yellow]{suite['skipped']} question(s) skipped: {escape(reasons)}.[/]")
