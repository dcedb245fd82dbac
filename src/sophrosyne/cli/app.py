"""The `sophrosyne` command: a thin adapter that parses, calls Environment and renders."""

from __future__ import annotations

from typing import Annotated

import typer

from sophrosyne.bench.cli.app import bench_app
from sophrosyne.cli import explore, server, tasks
from sophrosyne.cli.targets import demo_path as demo_path  # where tests and scripts have found it
from sophrosyne.cli.terminal import Command, Group, console, set_log_level

# Only typer and rich load at start-up; each command imports what it needs, so `--help` and a small
# query stay quick (the database drivers, sqlglot and the index are heavy).

app = typer.Typer(
    cls=Group,
    name="sophrosyne",
    help="A moderated data environment for SQL agents: fine-grained read-only tools over MCP.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _show_version(value: bool) -> None:
    if value:
        from sophrosyne.base.version import __version__

        console.print(f"sophrosyne {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    log_level: Annotated[
        str, typer.Option("--log-level", help="Log level of the messages on stderr: debug, info, warning, error.")
    ] = "warning",
) -> None:
    """A moderated data environment for SQL agents: fine-grained read-only tools over MCP.

    Example: sophrosyne --log-level info serve demo
    """
    set_log_level(log_level)


# The commands, in the order `--help` lists them.
app.command(cls=Command)(explore.tables)
app.command(cls=Command)(explore.describe)
app.command(cls=Command)(explore.values)
app.command("find", cls=Command)(explore.find)
app.command(cls=Command)(explore.search)
app.command(cls=Command)(explore.sql)
app.command(cls=Command)(explore.export)
app.command(cls=Command)(explore.sources)
app.command(cls=Command)(server.serve)
app.command(cls=Command)(server.config)
app.command(cls=Command)(tasks.audit)
app.command(cls=Command)(tasks.ask)
app.command(cls=Command)(tasks.demo)
app.command("index", cls=Command)(tasks.index)
app.add_typer(bench_app, name="bench")
