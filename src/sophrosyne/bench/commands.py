"""`sophrosyne bench score|tokens|report|merge`: registered on the bench sub-app; heavy modules load per command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from sophrosyne.bench.cli import bench_app, cell_text, figures_table
from sophrosyne.cli.terminal import console, err_console, progress_bar, reported

if TYPE_CHECKING:
    from sophrosyne.bench.data.types import Metric, Suite

DatasetOption = Annotated[
    str | None,
    typer.Option(
        help="Shared dataset: bird-dev, bird-mini-dev, bird-mini-dev-mysql, bird-mini-dev-postgresql, "
        "spider-dev or spider2-lite.",
        show_default=False,
    ),
]
QuestionsOption = Annotated[
    Path | None,
    typer.Option(help="Your own questions: JSON or JSONL with question, evidence, SQL, db_id (question_id)."),
]
DatabasesOption = Annotated[Path | None, typer.Option(help="Folder of <db_id>/<db_id>.sqlite for --questions.")]
DbUrlOption = Annotated[
    str | None,
    typer.Option(help="Server URL for MySQL/PostgreSQL gold ({db_id} is replaced by each database's name)."),
]
TablesOption = Annotated[Path | None, typer.Option(help="Schemas for --questions (Spider/BIRD tables.json).")]
MetricOption = Annotated[str, typer.Option(help="How --questions are scored: bird (row sets) or spider.")]
LimitOption = Annotated[int | None, typer.Option(help="Only the first N questions.", min=1)]
DbOption = Annotated[list[str] | None, typer.Option("--db", help="Only questions on this database (repeatable).")]
DifficultyOption = Annotated[
    list[str] | None, typer.Option("--difficulty", help="Only questions of this difficulty (repeatable).")
]
JsonOption = Annotated[Path | None, typer.Option("--json", help="Write the JSON report here.")]
QuietOption = Annotated[bool, typer.Option(help="No progress bar.")]


def open_suite(
    dataset: str | None,
    questions: Path | None,
    databases: Path | None,
    db_url: str | None,
    tables: Path | None,
    metric: str,
) -> Suite:
    from sophrosyne.bench.data.registry import load_suite
    from sophrosyne.bench.data.suites import suite_from_files

    if dataset and questions:
        raise typer.BadParameter("give --dataset or --questions, not both.")
    if dataset:
        return load_suite(dataset, db_url=db_url)
    if questions:
        if metric not in ("bird", "spider"):
            raise typer.BadParameter("--metric is bird or spider.")
        chosen: Metric = "spider" if metric == "spider" else "bird"
        return suite_from_files(questions, databases=databases, tables=tables, db_url=db_url, metric=chosen)
    raise typer.BadParameter("give --dataset NAME, or --questions FILE with --databases DIR or --db-url URL.")


@bench_app.command("score")
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


def write_json(result: dict[str, Any], path: Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    console.print(f"[dim]wrote {path}[/]")


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


@bench_app.command("tokens")
def tokens_command(
    dataset: Annotated[
        list[str] | None,
        typer.Option(help="bird-dev, spider-dev, or another dataset with gold SQL (repeatable).", show_default=False),
    ] = None,
    db: DbOption = None,
    json_path: JsonOption = None,
    quiet: QuietOption = False,
) -> None:
    """Tokens per database without a model: the whole schema (coarse) against exploring what is needed (fine).

    Coarse: every table described with sample values. Fine: list_tables with directives plus describe_table
    of the gold tables. Counted with o200k, offline.

    Databases shipped without data are described from an empty copy of their schema (marked `values: no`).

    Example: sophrosyne bench tokens --dataset bird-dev --dataset spider-dev --json bench-out/tokens.json
    """
    from sophrosyne.bench.data.registry import load_suite
    from sophrosyne.bench.tokens import measure_tokens, tokens_summary

    with reported():
        names = dataset or ["bird-dev", "spider-dev"]
        result: dict[str, Any] = {"datasets": {}}
        for name in names:
            suite = load_suite(name)
            if db:
                suite.questions = [q for q in suite.questions if q.db_id in db]
                suite.skipped = [s for s in suite.skipped if s.db_id in db]
            with progress_bar(not quiet) as tick:
                entries = measure_tokens(suite, tick=tick)
            result["datasets"][name] = {
                "summary": tokens_summary(entries),
                "per_database": [e.to_json() for e in entries],
            }
        every = [d for part in result["datasets"].values() for d in part["per_database"]]
        result["summary"] = _tokens_overall(result["datasets"], every)
        print_tokens(result)
        if json_path:
            write_json(result, json_path)


def _tokens_overall(parts: dict[str, Any], every: list[dict[str, Any]]) -> dict[str, Any]:
    import statistics

    from sophrosyne.bench.tokens import percentile

    ratios = [d["ratio"] for d in every if d["ratio"] is not None]
    return {
        "databases": len(every),
        "questions": sum(p["summary"]["questions"] for p in parts.values()),
        "ratio_median": round(statistics.median(ratios), 3) if ratios else None,
        "ratio_p90": round(percentile(ratios, 0.9) or 0.0, 3) if ratios else None,
        "tokenizer": "o200k_base (quicktok)",
    }


def print_tokens(result: dict[str, Any]) -> None:
    columns = ["tables", "values", "questions", "coarse", "fine median", "fine p90", "coarse/fine"]
    for name, part in result["datasets"].items():
        table = RichTable(title=f"Tokens on {name} (o200k)", title_justify="left", header_style="bold")
        table.add_column("database")
        for column in columns:
            table.add_column(column, justify="right")
        for d in part["per_database"]:
            table.add_row(
                escape(d["db_id"]),
                str(d["tables"]),
                "yes" if d["with_values"] else "no",
                str(d["questions"]),
                str(d["coarse_tokens"]),
                cell_text(d["fine_tokens_median"]),
                cell_text(d["fine_tokens_p90"]),
                cell_text(d["ratio"]),
            )
        console.print(table)
        s = part["summary"]
        console.print(
            f"{name}: {s['databases']} databases ({s['databases_with_values']} with values), "
            f"{s['questions']} questions; coarse/fine median {cell_text(s['ratio_median'])}, "
            f"p90 {cell_text(s['ratio_p90'])}"
        )
    s = result["summary"]
    console.print(
        f"[bold]All: {s['databases']} databases; coarse/fine median {cell_text(s['ratio_median'])}, "
        f"p90 {cell_text(s['ratio_p90'])}[/]"
    )


@bench_app.command("report")
def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run files (JSONL) of `bench run`; shards are merged.")],
    json_path: JsonOption = None,
    html_path: Annotated[Path | None, typer.Option("--html", help="Write the self-contained HTML page here.")] = None,
    curve: Annotated[
        bool, typer.Option(help="Compute the directive curve on the run's questions (the directives benchmark).")
    ] = True,
    directives: Annotated[
        Path | None, typer.Option(help="Take the directive curve from this `bench directives --json` file instead.")
    ] = None,
) -> None:
    """A run's figures per arm, per difficulty and per database: a table, JSON, and an HTML page.

    Accuracy, over-exploration, tokens and cost with 95% intervals; the HTML page (no network needed) has the
    plots, the directive curve and a browser of every question's trace.

    Example: sophrosyne bench report bench-out/run.jsonl --html bench-out/report.html --json bench-out/report.json
    """
    from sophrosyne.bench import plots
    from sophrosyne.bench.report import build_html, curve_for, print_runs
    from sophrosyne.bench.runs import read_runs, summarize_runs

    with reported():
        records = read_runs(runs)
        if not records:
            raise typer.BadParameter("the run files hold no records.")
        result = summarize_runs(records)
        print_runs(result)
        found = None
        if directives is not None:
            bench = json.loads(Path(directives).read_text(encoding="utf-8"))
            point = bench["summary"]["directives"]
            found = {
                "points": bench["curve"],
                "used": {"safe_rate": point["safe_rate"], "prune_rate": point["prune_rate"]},
                "note": f"from {directives.name}",
            }
        elif curve and html_path is not None:
            found = curve_for(records)
        result["directive_curve"] = found
        if json_path:
            write_json(result, json_path)
        if html_path:
            Path(html_path).parent.mkdir(parents=True, exist_ok=True)
            Path(html_path).write_text(build_html(result, records, found), encoding="utf-8")
            console.print(f"[dim]wrote {html_path}[/]")
            if not plots.available():
                note = f"the page has no plots: matplotlib is not installed ({plots.INSTALL})."
                err_console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
