"""How tool results look to a person in a terminal: rich tables, or JSON with --json."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from rich import box
from rich.markup import escape as escape_markup
from rich.table import Table as RichTable

from sophrosyne.base.data_blocks import escaped
from sophrosyne.cli.terminal import console
from sophrosyne.tools.results import (
    DistinctValues,
    FoundRows,
    QueryOutput,
    SchemaHits,
    TableDescription,
    TableList,
    render,
)


def emit(result: BaseModel | list[Any], as_json: bool) -> None:
    """JSON for machines; for people, tables (what an agent sees is in `sophrosyne demo` and over MCP)."""
    if as_json:
        data = (
            [r.model_dump(mode="json") for r in result] if isinstance(result, list) else result.model_dump(mode="json")
        )
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    for item in result if isinstance(result, list) else [result]:
        show = HUMAN.get(type(item))
        if show is not None:
            show(item)
        else:
            console.print(escape_markup(render(item)), highlight=False)


def escape(text: str) -> str:
    """Text for a rich cell or line: markup escaped, and every line break or control character too (a value
    holding ESC could otherwise move the terminal's cursor or recolour what follows)."""
    return escape_markup(escaped(text))


def grid(title: str | None, *columns: str) -> RichTable:
    return RichTable(*columns, title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)


def text(value: Any) -> str:
    return "NULL" if value is None else escape(str(value))


def notes(*lines: str | None) -> None:
    for line in lines:
        if line:
            console.print(f"[dim]{escape(line)}[/]")


def print_rows(result: QueryOutput) -> None:
    table = grid(None, *(escape(c) for c in result.columns))
    for row in result.rows:
        table.add_row(*(text(v) for v in row))
    console.print(table)
    more = " (truncated: more rows exist)" if result.truncated else ""
    notes(f"{result.row_count} rows{more} in {result.elapsed_ms:.0f} ms", result.reminder, result.cut)


def print_tables(result: TableList) -> None:
    title = f"{len(result.tables)} tables in {escape(result.source)}"
    table = grid(title, "table", "rows", "joins", "description")
    for t in result.tables:
        rows = f"~{t.row_estimate:,}" if t.row_estimate is not None else "?"
        name = f"{t.name} (view)" if t.kind == "view" else t.name
        table.add_row(escape(name), rows, "\n".join(escape(k) for k in t.join_keys), escape(t.description))
    console.print(table)
    for g in result.groups:
        notes(f"group {g.pattern}: {g.count} tables with the same {g.columns} columns ({g.first} … {g.last})")
    if result.directives:
        flagged = grid("likely irrelevant to the question", "table", "confidence", "reason")
        for d in result.directives:
            flagged.add_row(escape(d.table), d.confidence, escape(d.reason))
        console.print(flagged)
    notes(result.note, result.directive_note, result.cut)


def print_description(result: TableDescription) -> None:
    rows = f"~{result.row_estimate:,} rows" if result.row_estimate is not None else "rows unknown"
    title = f"{result.kind} {escape(result.table)} ({rows}; samples from {result.sampled_rows:,} rows)"
    table = grid(title, "column", "type", "key", "null", "samples", "description")
    for c in result.columns:
        null = "" if c.null_share is None else f"{c.null_share:.0%}"
        samples = ", ".join(repr(v) for v in c.samples)
        table.add_row(escape(c.name), escape(c.type), escape(c.key or ""), null, escape(samples), escape(c.description))
    console.print(table)
    notes(
        result.description,
        "references: " + ", ".join(result.references) if result.references else None,
        "referenced by: " + ", ".join(result.referenced_by) if result.referenced_by else None,
        result.reminder,
        result.cut,
    )


def print_values(result: DistinctValues) -> None:
    what = f" matching {result.search!r}" if result.search else ""
    table = grid(escape(f"{result.table}.{result.column}{what}"), "value", "count", "match")
    for v in result.values:
        table.add_row(text(v.value), f"{v.count:,}", "" if v.score is None else f"{v.score:.0f}")
    console.print(table)
    notes(result.note, result.cut)


def print_found(result: FoundRows) -> None:
    for m in result.matches:
        title = escape(f"{m.table} (matched in {', '.join(m.matched_columns)})")
        table = grid(title, *(escape(c) for c in m.columns))
        for row in m.rows:
            table.add_row(*(text(v) for v in row))
        console.print(table)
    notes(f"searched {result.searched_tables} tables" + ("" if result.matches else "; no rows matched"))
    notes(result.note, result.cut)


def print_hits(result: SchemaHits) -> None:
    table = grid(escape(f"columns best matching {result.query!r}"), "table.column", "score", "description")
    for h in result.hits:
        table.add_row(escape(f"{h.table}.{h.column}"), f"{h.score:.3f}", escape(h.description))
    console.print(table)


HUMAN: dict[type, Callable[[Any], None]] = {
    QueryOutput: print_rows,
    TableList: print_tables,
    TableDescription: print_description,
    DistinctValues: print_values,
    FoundRows: print_found,
    SchemaHits: print_hits,
}
