"""The options the scoring commands share, and the suite they name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

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
