"""`sophrosyne bench report`: a run's figures as a table, JSON and a self-contained HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sophrosyne.bench.cli.figures import write_json
from sophrosyne.bench.cli.options import JsonOption
from sophrosyne.cli.terminal import console, err_console, reported
from sophrosyne.errors import ConfigError


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
            try:
                found = curve_for(records)
            except ConfigError as exc:  # the datasets are not here: the page is written from the run alone
                note = f"the page has no directive curve (it needs the run's dataset): {exc.message}"
                err_console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
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
