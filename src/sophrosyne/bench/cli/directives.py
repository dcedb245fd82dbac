"""`sophrosyne bench directives`: directives on every question of a dataset, against the baselines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from sophrosyne.bench.cli.figures import cell_text, figures_table
from sophrosyne.cli.terminal import console, progress_bar, reported

if TYPE_CHECKING:
    from sophrosyne.bench.data.types import Dataset

BESIDE = ("questions", "safe_rate", "table_recall", "prune_rate", "flagged_per_question", "abstain_rate")


def directives_command(
    dataset: Annotated[
        str | None,
        typer.Option(
            help="Shared dataset: bird-dev, spider-dev, spider2-cloud, spider-syn, spider-syn-original, "
            "text2sql-classic (six classic sets) or text2sql-classic-SET (academic, geography, imdb, restaurants, "
            "scholar, yelp).",
            show_default=False,
        ),
    ] = None,
    questions: Annotated[
        Path | None,
        typer.Option(help="Custom questions: JSON or JSONL with question, knowledge (or evidence), SQL, db_id."),
    ] = None,
    tables: Annotated[Path | None, typer.Option(help="Schemas for --questions (Spider/BIRD tables.json).")] = None,
    descriptions: Annotated[
        Path | None, typer.Option(help="Folder of <db>/database_description/*.csv column descriptions.")
    ] = None,
    databases: Annotated[
        Path | None, typer.Option(help="Folder of <db>/<db>.sqlite files, for value grounding.")
    ] = None,
    split: Annotated[
        str,
        typer.Option(
            help="tune (the databases fitted on), holdout (the rest) or all; only for a dataset with a tuning split."
        ),
    ] = "all",
    threshold: Annotated[
        float | None,
        typer.Option(help="Flag tables whose probability of being needed is below this (questions with knowledge)."),
    ] = None,
    question_threshold: Annotated[float | None, typer.Option(help="The same, for questions without knowledge.")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.", min=1)] = None,
    llm_base_url: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible endpoint (…/v1) of a model that infers column names, run beside."),
    ] = None,
    llm_model: Annotated[str | None, typer.Option(help="Model name for --llm-base-url.")] = None,
    llm_api_key: Annotated[
        str | None,
        typer.Option(help="API key for --llm-base-url.", envvar="SOPHROSYNE_LLM_API_KEY", show_default=False),
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the JSON report here.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw the safe-rate vs prune-rate curve to this PNG.")] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    drop_keys: Annotated[
        bool, typer.Option(help="Remove every declared primary and foreign key first: joins are then inferred.")
    ] = False,
    perturb: Annotated[
        str,
        typer.Option(
            help="Change the dataset first (never its files): none, schema-only (no values), warehouse (abbreviated "
            "upper-case DIM_/FACT_ names, _KEY columns, no descriptions), no-keys, or synonyms (Spider-Syn's "
            "wording; spider-syn-original only); several joined by '+' apply in turn (warehouse+schema-only+no-keys)."
        ),
    ] = "none",
) -> None:
    """Directives on every question: none, directives, oracle and the paper's method, in one run.

    The headline is the held-out part when the model was tuned on some databases of the dataset.

    Example: sophrosyne bench directives --dataset bird-dev --json bench-out/bird.json --plot bench-out/bird.png
    """
    from sophrosyne.bench.directives_bench import ModelEndpoint, run_directives_bench
    from sophrosyne.bench.directives_report import plot_curve, report, write_json
    from sophrosyne.bench.perturb import perturb as perturbed
    from sophrosyne.directives import DirectiveSettings

    if bool(llm_base_url) != bool(llm_model):
        raise typer.BadParameter("--llm-base-url and --llm-model go together.")
    with reported():
        data = perturbed(_load(dataset, questions, tables, descriptions, databases), perturb)
        settings = DirectiveSettings(threshold=threshold, question_threshold=question_threshold)
        llm = ModelEndpoint(llm_base_url, llm_model, llm_api_key) if llm_base_url and llm_model else None
        with progress_bar(not quiet) as tick:
            run = run_directives_bench(
                data, settings=settings, split=split, tick=tick, limit=limit, llm=llm, drop_keys=drop_keys
            )
        result = report(run)
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
    from sophrosyne.bench.data.files import load_custom
    from sophrosyne.bench.data.registry import load_dataset

    if dataset and questions:
        raise typer.BadParameter("give --dataset or --questions, not both.")
    if dataset:
        return load_dataset(dataset)
    if questions and tables:
        return load_custom(questions, tables, descriptions, databases)
    raise typer.BadParameter(
        "give --dataset bird-dev|spider-dev|spider2-cloud|spider-syn|spider-syn-original|text2sql-classic, "
        "or --questions FILE with --tables FILE."
    )


def _beside(title: str, first: str, rows: dict[str, dict[str, dict[str, Any]]]) -> RichTable:
    """Each key's figures in every part, one row per part, the headline part first."""
    from sophrosyne.bench.directives_report import PART_NAMES

    table = RichTable(title=title, title_justify="left", header_style="bold")
    table.add_column(first)
    table.add_column("part")
    for metric in BESIDE:
        table.add_column(metric.replace("_", " "), justify="right")
    for name, by_part in rows.items():
        for i, (part, values) in enumerate(by_part.items()):
            table.add_row(escape(name) if i == 0 else "", PART_NAMES[part], *(cell_text(values.get(m)) for m in BESIDE))
    return table


def print_report(result: dict[str, Any]) -> None:
    """The headline part first (held-out when the model was tuned on this dataset), the other parts beside."""
    from sophrosyne.bench.directives_report import PART_LABELS, PART_NAMES

    headline, parts, summary = result["headline"], result["parts"], result["summary"]
    systems = list(result["systems"])
    console.print(
        figures_table(
            f"Directives on {result['dataset']}, {PART_LABELS[headline]}: {summary.get('questions', 0)} questions "
            f"(index build {summary.get('index_build_s', 0.0):.2f} s, "
            f"values {summary.get('value_index_build_s', 0.0):.2f} s)",
            {s: summary[s] for s in systems},
            "system",
        )
    )
    for system, label in result["systems"].items():
        console.print(f"[dim]  {escape(system)}: {escape(label)}[/]")
    tuning = result["tuning"]
    names = list(parts)
    if tuning is not None:
        console.print(
            f"[dim]Tuning databases: {', '.join(tuning['databases'])}; held out: "
            f"{', '.join(tuning['holdout_databases'])}.[/]"
        )
    if len(names) > 1:
        shown = [s for s in systems if s not in ("none", "oracle")]  # the same in every part: 0 and 1
        rows = {s: {p: parts[p]["summary"][s] for p in names} for s in shown}
        console.print(_beside("Each part beside the headline", "system", rows))
    part_of = {}
    if tuning is not None:
        part_of = {db: PART_NAMES["tune"] for db in tuning["databases"]}
        part_of |= {db: PART_NAMES["holdout"] for db in tuning["holdout_databases"]}
    per_database = {
        f"{db} ({part_of[db]})" if db in part_of else db: v["directives"] for db, v in result["per_database"].items()
    }
    console.print(figures_table("Per database (directives)", per_database, "database"))
    title = f"Per difficulty (directives), {PART_LABELS[headline]}"
    console.print(figures_table(title, {d: v["directives"] for d, v in result["per_difficulty"].items()}, "difficulty"))
    if len(names) > 1:
        difficulties = sorted({d for p in names for d in parts[p]["per_difficulty"]})
        rows = {
            d: {p: parts[p]["per_difficulty"][d]["directives"] for p in names if d in parts[p]["per_difficulty"]}
            for d in difficulties
        }
        console.print(_beside("Per difficulty (directives), each part", "difficulty", rows))
    curve = RichTable(
        title="Curve over the threshold (both thresholds set to it)", title_justify="left", header_style="bold"
    )
    curve.add_column("threshold", justify="right")
    for part in names:
        for column in ("safe_rate", "prune_rate"):
            prefix = f"{PART_NAMES[part]} " if len(names) > 1 else ""
            curve.add_column(prefix + column.replace("_", " "), justify="right")
    for i, point in enumerate(result["curve"]):
        cells = [cell_text(parts[p]["curve"][i][c]) for p in names for c in ("safe_rate", "prune_rate")]
        curve.add_row(cell_text(point["threshold"]), *cells)
    console.print(curve)
    if result["skipped"]:
        # Each reason by its kind (the words before any detail), most frequent first.
        kinds = Counter(str(s.get("error", "unknown")).split(":")[0] for s in result["skipped"])
        said = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
        console.print(
            f"[yellow]{len(result['skipped'])} question(s) skipped: {escape(said)} (each reason in the JSON report).[/]"
        )


def robustness_command(
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            "--dataset",
            help="A set to run (repeatable); default: bird-dev, spider-dev, spider2-cloud, spider-syn, "
            "spider-syn-original and text2sql-classic (reported per classic set).",
            show_default=False,
        ),
    ] = None,
    perturb: Annotated[
        list[str] | None,
        typer.Option(
            "--perturb",
            help="A perturbation to run (repeatable; several at once joined by '+'); default: none, schema-only, "
            "warehouse, no-keys, warehouse+schema-only+no-keys, synonyms.",
            show_default=False,
        ),
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the table as JSON here.")] = None,
    quiet: Annotated[bool, typer.Option(help="No line per finished run.")] = False,
) -> None:
    """Directives on every set under every perturbation: one table, safe rate / prune rate per cell.

    Each cell is `bench directives --dataset SET --perturb KIND` (its headline part: held-out databases where
    the model was tuned on the set).

    Example: sophrosyne bench robustness --json bench-out/robustness.json
    """
    from sophrosyne.bench.cli.figures import write_json
    from sophrosyne.bench.robustness import ROBUSTNESS_PERTURBATIONS, ROBUSTNESS_SETS, run_robustness

    def progress(name: str, kind: str, seconds: float) -> None:
        if not quiet:
            console.print(f"[dim]{escape(name)} / {escape(kind)}: {seconds:.1f} s[/]")

    with reported():
        result = run_robustness(
            tuple(dataset or ROBUSTNESS_SETS), tuple(perturb or ROBUSTNESS_PERTURBATIONS), progress=progress
        )
        console.print(robustness_table(result))
        if json_path:
            write_json(result, json_path)


def robustness_table(result: dict[str, Any]) -> RichTable:
    """Rows: sets; columns: perturbations; cells: safe rate / prune rate (the whole beside a held-out part)."""
    table = RichTable(
        title=f"Directives under perturbation: safe rate / prune rate ({result['elapsed_s']} s)",
        title_justify="left",
        header_style="bold",
    )
    table.add_column("set", no_wrap=True)
    table.add_column("questions", justify="right")
    for kind in result["perturbations"]:
        table.add_column(kind, justify="right")
    for row in result["rows"]:
        cells = result["cells"][row]
        counted: dict[str, Any] = next((c for c in cells.values() if "questions" in c), {})
        part = counted.get("part", "all")
        label = f"{row} ({'held-out' if part == 'holdout' else part})" if part != "all" else row
        texts = []
        for kind in result["perturbations"]:
            cell = cells.get(kind, {})
            if "n/a" in cell or not cell.get("questions"):
                texts.append("n/a")
                continue
            text = f"{cell_text(cell['safe_rate'])} / {cell_text(cell['prune_rate'])}"
            whole = cell.get("whole")
            texts.append(
                f"{text}\n(whole {cell_text(whole['safe_rate'])} / {cell_text(whole['prune_rate'])})" if whole else text
            )
        table.add_row(escape(label), str(counted.get("questions", "-")), *texts)
    return table
