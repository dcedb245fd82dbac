"""What a command works on: its database argument and common options, and the environment opened from them
(closed when the command ends)."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

if TYPE_CHECKING:
    from sophrosyne.environment import Environment

# Only typer loads here: each command imports what it needs (the database drivers and sqlglot are heavy).

DEMO = "demo"
DB_HELP = (
    "Database: a .sqlite/.db/.duckdb path or a SQLAlchemy URL; `demo` is the embedded HR demo. Default: "
    "SOPHROSYNE_DATABASE if set (keeps a password off the command line), else `demo`."
)
ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML settings file.", show_default=False)]
PolicyOption = Annotated[
    Path | None, typer.Option("--policy", help="TOML policy file: roles, row filters, column rules, tokens.")
]
DescriptionsOption = Annotated[
    Path | None,
    typer.Option(
        help="Folder of BIRD-style <table>.csv column descriptions.", exists=True, file_okay=False, dir_okay=True
    ),
]
RoleOption = Annotated[str | None, typer.Option("--role", help="Role to act as (default: the policy's default role).")]


def _command_line_directives(value: str | None) -> str | None:
    # Oracle directives come from each question's gold SQL: the benchmarks have it, a command line does not.
    if value == "oracle":
        raise typer.BadParameter(
            "oracle directives need each question's gold SQL, which a command line does not have: use "
            "`sophrosyne bench run --arm oracle` or `sophrosyne bench directives` (they compare it with none and "
            "directives), or Environment.set_oracle(sql) in Python."
        )
    return value


DirectivesOption = Annotated[
    str | None,
    typer.Option(
        help="Directive mode: none or directives (default).", show_default=False, callback=_command_line_directives
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def demo_path() -> Path:
    return Path(str(resources.files("sophrosyne") / "data" / "demo.sqlite"))


def resolve_db(target: str | None) -> str:
    """The database a command serves: the one given, else SOPHROSYNE_DATABASE, else the demo; a URL without a
    password takes the one in SOPHROSYNE_DATABASE_PASSWORD or the file SOPHROSYNE_DATABASE_PASSWORD_FILE names
    (so that a client's config names the database and only references its secret)."""
    target = target or os.environ.get("SOPHROSYNE_DATABASE") or DEMO
    if target == DEMO:
        return str(demo_path())
    if "://" not in target:
        return target
    from sophrosyne.serve.client_config import with_password

    return with_password(target, os.environ)


def split_db(args: list[str], needed: int, usage: str) -> tuple[str, list[str]]:
    """Commands take an optional DB before their own arguments: `[DB] TABLE ...`."""
    if len(args) == needed:
        if _names_a_database(args[0]):
            last = usage.split()[-1]
            raise typer.BadParameter(
                f"`{args[0]}` is a database, so {last} is missing: expected {usage}, e.g. {' '.join(args)} {last}."
            )
        return resolve_db(None), args
    if len(args) == needed + 1:
        return resolve_db(args[0]), args[1:]
    raise typer.BadParameter(f"expected {usage}, got {len(args)} argument(s).")


_DATABASE_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".duckdb")


def _names_a_database(arg: str) -> bool:
    """Whether a command's first argument can only be a database (so an argument after it was forgotten): a URL,
    a database file that exists, or `demo` when the default database is the demo (which has no table `demo`)."""
    if "://" in arg:
        return True
    if arg == DEMO:
        return not os.environ.get("SOPHROSYNE_DATABASE")
    return arg.lower().endswith(_DATABASE_SUFFIXES) and Path(arg).is_file()


def say_when_the_demo_is_served(db: str | None, sources: Path | None) -> None:
    """`serve` without a database says it serves the demo: a client that passes no environment (MCP Inspector
    drops SOPHROSYNE_DATABASE) would otherwise get the demo without a word."""
    if db is None and sources is None and not os.environ.get("SOPHROSYNE_DATABASE"):
        from sophrosyne.cli.terminal import err_console

        err_console.print(
            "no database given (no DB, --sources, SOPHROSYNE_DATABASE or SOPHROSYNE_SOURCES): serving the embedded "
            "demo database",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def open_env(
    db: str,
    config: Path | None,
    descriptions: Path | None = None,
    *,
    policy: Path | None = None,
    role: str | None = None,
    directives: str | None = None,
    audit_log: Path | None = None,
    probe: bool = True,
) -> Environment:
    from sophrosyne.environment import Environment
    from sophrosyne.settings import Settings

    settings = Settings.load(config, policy_file=policy, directives=directives, audit_log=audit_log)
    env = Environment.open(db, settings=settings, descriptions=descriptions, role_name=role, probe=probe)
    # Closed when the command ends, however it ends: its connections go back to the server.
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(env.close)
    return env
