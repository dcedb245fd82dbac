"""Terminal output shared by every command: the consoles, the one error-to-exit mapping, the progress bar."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from typer.core import TyperCommand, TyperGroup
from typer.exceptions import TyperException

from sophrosyne.base.data_blocks import escaped
from sophrosyne.errors import SophrosyneError
from sophrosyne.tools.registry import TOOLS

# Output is often piped to a file: keep tables wide enough to read there.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

Tick = Callable[[str, int, int], None]

# Hints are written for agents, who call MCP tools; a person at the terminal runs the matching command.
_COMMANDS = {entry.name: entry.command for entry in TOOLS if entry.command}
_TOOL_NAME = re.compile(r"\b(" + "|".join(_COMMANDS) + r")\b(\([^()]*\))?")


def for_the_terminal(text: str) -> str:
    """A hint with each MCP tool it names (and its arguments) replaced by the command that does the same."""
    return _TOOL_NAME.sub(lambda m: f"`{_COMMANDS[m.group(1)]}`", text).replace("``", "`")


@contextmanager
def reported() -> Iterator[None]:
    """The one place where errors become a one-line reason (and a hint) on stderr and the error's exit code
    (1, or 2 for a missing model); an error we did not expect is one line too (its traceback goes to the log,
    at --log-level debug)."""
    try:
        yield
    except SophrosyneError as exc:
        # With the database's own words, escaped: a value they quote cannot move the terminal's cursor.
        err_console.print(f"[bold red]error:[/] {escape(shorten_line(exc.full_message))}", soft_wrap=True)
        if exc.hint:
            err_console.print(f"[yellow]hint:[/] {escape(escaped(for_the_terminal(exc.hint)))}", soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    except (typer.Exit, typer.Abort, TyperException, KeyboardInterrupt, SystemExit):
        raise  # usage errors keep click's own message and exit code
    except Exception as exc:
        logging.getLogger("sophrosyne").debug("unexpected error", exc_info=True)
        text = shorten_line(f"{type(exc).__name__}: {exc}")
        err_console.print(f"[bold red]error:[/] unexpected: {escape(text)}", soft_wrap=True)
        err_console.print("[yellow]hint:[/] run with --log-level debug for the details.", soft_wrap=True)
        raise typer.Exit(1) from None


def _flags_take_no_value(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # `--http`, not `--http <bool>`: a flag is given or not, it takes no value
    return params


class Command(TyperCommand):
    """A command whose `--help` shows its flags without a value."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_take_no_value(super().get_params(ctx))


class Group(TyperGroup):
    """A group of commands whose `--help` shows its flags without a value."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_take_no_value(super().get_params(ctx))


def say(line: str) -> None:
    """One line of what a command is waiting for, on stderr (the model client's `on_wait`)."""
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def shorten_line(text: str, limit: int = 1000) -> str:
    """The first line of `text`, at most `limit` characters."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def set_log_level(name: str) -> None:
    """Logs go to stderr (stdout carries results, and the MCP stdio protocol)."""
    level = _LEVELS.get(name.lower())
    if level is None:
        raise typer.BadParameter(f"--log-level must be one of {', '.join(_LEVELS)}, not {name!r}.")
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)


def current_log_level() -> str:
    level = logging.getLogger().level
    return next((name for name, value in _LEVELS.items() if value == level), "warning")


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Tick]:
    """A progress bar on stderr driven by tick(stage, done, total) callbacks, one bar per stage."""
    progress = Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not enabled,
    )
    tasks: dict[str, TaskID] = {}

    def tick(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(stage, total=total)
        progress.update(tasks[stage], completed=done, total=total)

    with progress:
        yield tick


Status = Callable[[int, int, str], None]


@contextmanager
def status_bar(label: str, enabled: bool = True) -> Iterator[Status]:
    """One progress bar on stderr with a running status after it (accuracy and cost so far, say), driven by
    update(done, total, status)."""
    progress = Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        console=err_console,
        disable=not enabled,
    )
    task = progress.add_task(label, total=None, status="")

    def update(done: int, total: int, status: str) -> None:
        progress.update(task, completed=done, total=total, status=status)

    with progress:
        yield update
