"""How tool results look to a person in a terminal: rich tables, or JSON with --json.

Each result draws itself (its `show`, in its tool's module) on the screen this module gives."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel
from rich import box
from rich.markup import escape as escape_markup
from rich.table import Table as RichTable

from sophrosyne.base.data_blocks import escaped
from sophrosyne.cli.terminal import console
from sophrosyne.tools.base import Result, render


def emit(result: BaseModel | list[Any], as_json: bool) -> None:
    """JSON for machines; for people, tables (what an agent sees is in `sophrosyne demo` and over MCP)."""
    if as_json:
        data = (
            [r.model_dump(mode="json") for r in result] if isinstance(result, list) else result.model_dump(mode="json")
        )
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, Result):
            item.show(SCREEN)
        else:
            SCREEN.plain(render(item))


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


class Terminal:
    """The screen results draw on (tools/base.py's Screen): rich tables and dim notes on the console."""

    grid = staticmethod(grid)
    notes = staticmethod(notes)
    escape = staticmethod(escape)
    text = staticmethod(text)

    def show(self, table: Any) -> None:
        console.print(table)

    def plain(self, line: str) -> None:
        console.print(escape_markup(line), highlight=False)


SCREEN = Terminal()
