"""`sophrosyne bench`: benchmark commands (mounted into the main CLI as a sub-app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from sophrosyne.bench.datasets import DATASETS, Dataset, load_custom, load_dataset
from sophrosyne.bench.directives_bench import SYSTEMS, plot_curve, report, run_directives_bench, write_json
from sophrosyne.directives import DirectiveSettings
from sophrosyne.terminal import console, progress_bar, reported

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks on real text-to-SQL data. Example: sophrosyne bench directives --dataset bird-dev",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
METRICS = (
    "questions",
    "safe_rate",
    "table_recall",
    "prune_rate",
    "flagged_per_question",
    "latency_ms_p50",
    "latency_ms_p95",
)


@bench_app.callback()
def bench() -> None:
    """Benchmarks on real text-to-SQL data.

    Example: sophrosyne bench directives --dataset spider-dev
    """


@bench_app.command("directives")
def directives_command(
    dataset: Annotated[
        str | None, typer.Option(help=f"Shared dataset: {' or '.join(DATASETS)}.", show_default=False)
    ] = None,
    questions: Annotated[
        Path | None, typer.Option(help="Custom questions: JSON or JSONL with question, evidence, SQL, db_id.")
    ] = None,
    tables: Annotated[Path | None, typer.Option(help="Schemas for --questions (Spider/BIRD tables.json).")] = None,
    descriptions: Annotated[
        Path | None, typer.Option(help="Folder of <db>/database_description/*.csv column descriptions.")
    ] = None,
    databases: Annotated[
        Path | None, typer.Option(help="Folder of <db>/<db>.sqlite files, for value grounding.")
    ] = None,
    split: Annotated[
        str, typer.Option(help="tune (alphabetically first 6 databases), holdout (the rest) or all.")
    ] = "all",
    threshold: Annotated[
        float | None, typer.Option(help="Flag tables whose probability of being needed is below this.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.", min=1)] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the JSON report here.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw the safe-rate vs prune-rate curve to this PNG.")] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Directives on every question: none, directives, oracle and the paper's method, in one run.

    Example: sophrosyne bench directives --dataset bird-dev --json bench-out/bird.json --plot bench-out/bird.png
    """
    if split not in ("tune", "holdout", "all"):
        raise typer.BadParameter("--split is tune, holdout or all.")
    with reported():
        data = _load(dataset, questions, tables, descriptions, databases)
        settings = DirectiveSettings() if threshold is None else DirectiveSettings(threshold=threshold)
        with progress_bar(not quiet) as tick:
            run = run_directives_bench(data, settings=settings, split=split, tick=tick, limit=limit)
        result = report(run)
        result["settings"] = {"threshold": settings.threshold_for(True), "split": split}
        print_report(result)
        if json_path:
            write_json(result, json_path)
            console.print(f"[dim]wrote {json_path}[/]")
        if plot:
            plot_curve(result, plot)
            console.print(f"[dim]wrote {plot}[/]")


def _load(
    dataset: str | None,
    questions: Path | None,
    tables: Path | None,
    descriptions: Path | None,
    databases: Path | None,
) -> Dataset:
    if dataset and questions:
        raise typer.BadParameter("give --dataset or --questions, not both.")
    if dataset:
        return load_dataset(dataset)
    if questions and tables:
        return load_custom(questions, tables, descriptions, databases)
    raise typer.BadParameter("give --dataset bird-dev|spider-dev, or --questions FILE with --tables FILE.")


def _table(title: str, rows: dict[str, dict[str, Any]], first: str) -> RichTable:
    table = RichTable(title=title, title_justify="left", header_style="bold")
    table.add_column(first)
    for metric in METRICS:
        table.add_column(metric.replace("_", " "), justify="right")
    for name, values in rows.items():
        table.add_row(escape(name), *(_cell(values.get(m)) for m in METRICS))
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_report(result: dict[str, Any]) -> None:
    summary = result["summary"]
    console.print(
        _table(
            f"Directives on {result['dataset']} (index build {summary['index_build_s']:.2f} s, "
            f"values {summary['value_index_build_s']:.2f} s)",
            {s: summary[s] for s in SYSTEMS},
            "system",
        )
    )
    splits = {f"{name} {s}": result["splits"][name][s] for name in ("tune", "holdout") for s in ("directives", "paper")}
    if any(v.get("questions") for v in splits.values()):
        console.print(
            _table(
                f"Tune {', '.join(result['tune_databases'])} | holdout {', '.join(result['holdout_databases'])}",
                splits,
                "split",
            )
        )
    console.print(
        _table(
            "Per database (directives)", {db: v["directives"] for db, v in result["per_database"].items()}, "database"
        )
    )
    console.print(
        _table(
            "Per difficulty (directives)",
            {d: v["directives"] for d, v in result["per_difficulty"].items()},
            "difficulty",
        )
    )
    curve = RichTable(title="Curve over the threshold", title_justify="left", header_style="bold")
    for column in ("threshold", "safe_rate", "prune_rate"):
        curve.add_column(column.replace("_", " "), justify="right")
    for point in result["curve"]:
        curve.add_row(*(_cell(point[c]) for c in ("threshold", "safe_rate", "prune_rate")))
    console.print(curve)
    if result["skipped"]:
        console.print(f"[yellow]{len(result['skipped'])} question(s) skipped: gold SQL does not parse.[/]")


if __name__ == "__main__":
    bench_app()
