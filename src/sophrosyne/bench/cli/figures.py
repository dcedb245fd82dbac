"""How every bench command prints and saves its figures: one table of figures, one JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table as RichTable

from sophrosyne.cli.terminal import console

METRICS = (
    "questions",
    "safe_rate",
    "table_recall",
    "prune_rate",
    "flagged_per_question",
    "abstain_rate",
    "latency_ms_p50",
    "latency_ms_p95",
)


def figures_table(
    title: str, rows: dict[str, dict[str, Any]], first: str, metrics: tuple[str, ...] | list[str] = METRICS
) -> RichTable:
    """One row per name, one right-aligned column per metric (every bench command prints its figures so)."""
    table = RichTable(title=title, title_justify="left", header_style="bold")
    table.add_column(first)
    for metric in metrics:
        table.add_column(metric.replace("_", " "), justify="right")
    for name, values in rows.items():
        table.add_row(escape(name), *(cell_text(values.get(m)) for m in metrics))
    return table


def cell_text(value: Any) -> str:
    """A figure as the bench tables print it: three decimals, or "-" when it is missing."""
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def write_json(result: dict[str, Any], path: Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    console.print(f"[dim]wrote {path}[/]")
