"""`sophrosyne bench run|merge`: the agent over a dataset in the paper's arms, and joining a sharded run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sophrosyne.bench.cli.figures import write_json
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
from sophrosyne.cli.terminal import console, reported, say, status_bar


def run_command(
    out: Annotated[Path, typer.Option(help="JSONL of records, one per question and arm; a rerun resumes it.")],
    dataset: DatasetOption = None,
    questions: QuestionsOption = None,
    databases: DatabasesOption = None,
    db_url: DbUrlOption = None,
    tables: TablesOption = None,
    metric: MetricOption = "bird",
    arm: Annotated[
        list[str] | None,
        typer.Option(help="coarse, none, directives or oracle (repeatable; default: all four).", show_default=False),
    ] = None,
    solver: Annotated[str, typer.Option(help="explorer or flex.")] = "explorer",
    concurrency: Annotated[int, typer.Option(help="Questions solved at once.", min=1)] = 4,
    limit: LimitOption = None,
    db: DbOption = None,
    difficulty: DifficultyOption = None,
    shard: Annotated[
        str | None, typer.Option(help="i/n: every n-th question from the i-th, to split a run across machines.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Chat model (default: the `model` setting).")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint …/v1 (default: `base_url`).")] = None,
    config: Annotated[Path | None, typer.Option(help="Settings file (TOML).")] = None,
    question_timeout: Annotated[float, typer.Option(help="Seconds one question may take in one arm.")] = 600.0,
    json_path: JsonOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run the agent over a dataset in the paper's arms and score every answer (EX, exploration, tokens, cost).

    Arms: coarse (whole schema in the prompt, SQL tool only), none (fine-grained tools), directives
    (Sophrosyne), oracle (directives from the gold SQL). Records are appended as questions finish; run the same
    command again to resume.

    Example: sophrosyne bench run --dataset bird-dev --limit 50 --concurrency 8 --out bench-out/run.jsonl
    """
    import asyncio
    import logging

    from sophrosyne.bench.data.suites import parse_shard, select
    from sophrosyne.bench.run import ARMS, RunPlan, run_plan
    from sophrosyne.bench.runs import read_runs, summarize_runs
    from sophrosyne.llm import ModelClient
    from sophrosyne.settings import Settings

    if solver not in ("explorer", "flex"):
        raise typer.BadParameter("--solver must be explorer or flex.")
    with reported():
        suite = open_suite(dataset, questions, databases, db_url, tables, metric)
        if suite.metric == "spider2":
            raise typer.BadParameter("Spider 2.0's databases are not reachable here: score its result CSVs instead.")
        suite = select(suite, limit=limit, databases=db, difficulties=difficulty, shard=parse_shard(shard))
        settings = Settings.load(config)
        llm = ModelClient.from_settings(
            settings, model=model, base_url=base_url, on_wait=say
        )  # exits 2 without a model
        plan = RunPlan(
            suite,
            list(arm or ARMS),
            out,
            settings,
            solver="flex" if solver == "flex" else "explorer",
            concurrency=concurrency,
            question_timeout_s=question_timeout,
        )

        # The MCP SDK turns the root logger to INFO whenever a server is built; its request logs and the HTTP
        # clients' would bury the progress bar.
        for name in ("mcp", "httpx", "httpx2", "openai"):
            logging.getLogger(name).setLevel(logging.WARNING)

        async def go() -> Any:
            try:
                with status_bar("run", not quiet) as update:
                    return await run_plan(plan, llm, update)
            finally:
                await llm.aclose()

        totals = asyncio.run(go())
        skipped = ", ".join(f"{n} {reason}" for reason, n in suite.skipped_by_reason().items())
        console.print(
            f"{totals.done} answer(s) this run, {totals.already} already in {escape(str(out))}; "
            f"{totals.failed} failed (a rerun retries them)."
            + (f" Questions of the dataset skipped: {escape(skipped)}." if skipped else "")
        )
        ran = {q.id for q in suite.questions}
        result = summarize_runs([r for r in read_runs([out]) if r.get("question_id") in ran])
        from sophrosyne.bench.report import print_runs

        print_runs(result)
        if json_path:
            write_json(result, json_path)


def merge_command(
    runs: Annotated[list[Path], typer.Argument(help="Run files (JSONL) of the shards.")],
    out: Annotated[Path, typer.Option(help="The merged JSONL.")],
    json_path: JsonOption = None,
) -> None:
    """Join the records of a sharded run (or of resumed runs) into one file: one record per question and arm.

    Example: sophrosyne bench merge bench-out/shard1.jsonl bench-out/shard2.jsonl --out bench-out/run.jsonl
    """
    from sophrosyne.bench.report import print_runs
    from sophrosyne.bench.runs import merge_runs, read_runs, summarize_runs, write_runs

    with reported():
        records = read_runs(runs)
        merged = merge_runs(records)
        write_runs(merged, out)
        console.print(f"{len(records)} record(s) in {len(runs)} file(s) → {len(merged)} in {escape(str(out))}")
        result = summarize_runs(merged)
        print_runs(result)
        if json_path:
            write_json(result, json_path)
