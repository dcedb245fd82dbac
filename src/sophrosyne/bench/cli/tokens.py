"""`sophrosyne bench tokens`: tokens per database without a model, the whole schema against exploring."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from sophrosyne.bench.cli.figures import cell_text, write_json
from sophrosyne.bench.cli.options import DbOption, JsonOption, QuietOption
from sophrosyne.cli.terminal import console, progress_bar, reported


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
