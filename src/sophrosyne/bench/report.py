"""`bench report`: a run's figures as a terminal table, JSON, and a self-contained HTML page with plots and a
question browser (every answer's trace, directives, final SQL, result and verdict)."""

from __future__ import annotations

import html
import json
from importlib import resources
from string import Template
from typing import Any

from rich.markup import escape
from rich.table import Table as RichTable

from sophrosyne.bench.runs import merge_runs
from sophrosyne.cli.terminal import console

ACCURACY = (
    ("questions", "questions"),
    ("ex", "EX"),
    ("ex_ci", "EX 95% CI"),
    ("soft_f1", "soft F1"),
    ("answered", "answered"),
    ("gave_up", "gave up"),
    ("errors", "errors"),
)
EXPLORATION = (
    ("over_exploration", "over-explored"),
    ("over_exploration_rate", "over-expl. rate"),
    ("extra_final_tables", "extra final"),
    ("tool_calls", "tool calls"),
    ("tokens_in", "tokens in"),
    ("tokens_out", "tokens out"),
    ("wall_s", "wall s"),
    ("cost", "cost $"),
)
COLUMNS = ACCURACY + EXPLORATION


def fmt(value: Any) -> str:
    """A figure for a table: a mean with an interval shows the mean, an interval its two ends."""
    if isinstance(value, dict) and "mean" in value:
        value = value["mean"]
    if isinstance(value, list) and len(value) == 2:
        return f"{fmt(value[0])}–{fmt(value[1])}"
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def print_runs(result: dict[str, Any]) -> None:
    """The per-arm table, then EX per difficulty and per database, arm by arm."""
    arms = result["arms"]
    title = f"{', '.join(result['datasets'])}: {result['summary']['questions']} questions, solver " + ", ".join(
        result["solvers"]
    )
    for heading, columns in ((title, ACCURACY), ("Exploration and cost (means per question)", EXPLORATION)):
        table = RichTable(title=heading, title_justify="left", header_style="bold")
        table.add_column("arm")
        for _, label in columns:
            table.add_column(label, justify="right")
        for arm, figures in arms.items():
            table.add_row(escape(arm), *(fmt(figures.get(key)) for key, _ in columns))
        console.print(table)
    for name, key in (("difficulty", "per_difficulty"), ("database", "per_database")):
        sliced = RichTable(title=f"EX per {name}", title_justify="left", header_style="bold")
        sliced.add_column(name)
        for arm in arms:
            sliced.add_column(arm, justify="right")
        sliced.add_column("questions", justify="right")
        for group, per_arm in result[key].items():
            n = max((f["questions"] for f in per_arm.values()), default=0)
            sliced.add_row(escape(group), *(fmt(per_arm.get(a, {}).get("ex")) for a in arms), str(n))
        console.print(sliced)


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _sliced_table(result: dict[str, Any], key: str, label: str) -> str:
    arms = list(result["arms"])
    rows = []
    for group, per_arm in result[key].items():
        n = max((f["questions"] for f in per_arm.values()), default=0)
        rows.append([group, *(fmt(per_arm.get(a, {}).get("ex")) for a in arms), str(n)])
    return _html_table([label, *arms, "questions"], rows)


def _plots(result: dict[str, Any], curve: dict[str, Any] | None) -> list[str]:
    from sophrosyne.bench import plots

    if not plots.available():
        return [f'<p class="plot">No plots: matplotlib is not installed ({plots.INSTALL}).</p>']
    arms = result["arms"]
    figures = []

    def interval(name: str, label: str, ylabel: str) -> str:
        bars = [(a, f[name]["mean"], f[name]["low"], f[name]["high"]) for a, f in arms.items()]
        return plots.bars_with_ci(label, ylabel, bars)

    figures.append(
        plots.bars_with_ci(
            "Execution accuracy (95% CI)",
            "EX",
            [(a, f["ex"], f["ex_ci"][0], f["ex_ci"][1]) for a, f in arms.items()],
        )
    )
    figures.append(interval("over_exploration", "Over-exploration (95% CI)", "irrelevant tables explored"))
    figures.append(interval("tokens", "Tokens per question (95% CI)", "prompt + completion tokens"))
    figures.append(interval("extra_final_tables", "Tables in the final SQL beyond gold", "tables"))
    names = list(arms)
    for key, title in (("per_difficulty", "EX per difficulty"), ("per_database", "EX per database")):
        groups = {g: {a: f["ex"] for a, f in per_arm.items()} for g, per_arm in result[key].items()}
        figures.append(plots.grouped_bars(title, "EX", groups, names))
    if curve and curve.get("points"):
        figures.append(plots.directive_curve(curve["points"], curve.get("used")))
    return [f'<div class="plot">{svg}</div>' for svg in figures]


def build_html(result: dict[str, Any], records: list[dict[str, Any]], curve: dict[str, Any] | None) -> str:
    """The whole page: figures, plots as inline SVG, and the records for the browser as embedded JSON."""
    arms = result["arms"]
    arm_rows = [[arm, *(fmt(f.get(key)) for key, _ in COLUMNS)] for arm, f in arms.items()]
    meta = (
        f"{', '.join(result['datasets'])} · {result['summary']['questions']} questions · arms {', '.join(arms)} · "
        f"solver {', '.join(result['solvers'])} · model {', '.join(result['models'])}"
    )
    if curve and curve.get("note"):
        meta += f" · directive curve: {curve['note']}"
    # Embedded as JSON inside <script>: no `</` may close the element early.
    data = json.dumps(merge_runs(records), ensure_ascii=False, default=str)
    data = data.replace("</", "<\\/").replace("<!--", "<\\!--")
    page = Template(resources.files("sophrosyne.bench").joinpath("report_page.html").read_text(encoding="utf-8"))
    return page.substitute(
        title=html.escape(", ".join(result["datasets"])),
        meta=html.escape(meta),
        arm_table=_html_table(["arm", *(label for _, label in COLUMNS)], arm_rows),
        plots="\n".join(_plots(result, curve)),
        difficulty_table=_sliced_table(result, "per_difficulty", "difficulty"),
        database_table=_sliced_table(result, "per_database", "database"),
        records=data,
    )


def curve_for(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The directive curve (safe rate against prune rate over the threshold) on the run's questions, from the
    directives benchmark; None when the run's dataset is not one it loads."""
    from dataclasses import replace

    from sophrosyne.bench.data.registry import DATASETS, load_dataset
    from sophrosyne.bench.directives_bench import run_directives_bench
    from sophrosyne.bench.directives_report import report

    names = {str(r.get("dataset")) for r in records}
    if len(names) != 1 or next(iter(names)) not in DATASETS:
        return None
    dataset = load_dataset(next(iter(names)))
    wanted = {str(r["question_id"]) for r in records}
    dataset = replace(dataset, questions=[q for q in dataset.questions if q.id in wanted])
    if not dataset.questions:
        return None
    bench = report(run_directives_bench(dataset))
    used = bench["summary"]["directives"]
    return {
        "points": bench["curve"],
        "used": {"safe_rate": used["safe_rate"], "prune_rate": used["prune_rate"]},
        "note": f"the directives benchmark on these {len(dataset.questions)} questions",
    }
