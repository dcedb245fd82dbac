"""The one registry of tools: the Environment, the MCP server, the terminal and the facade all follow it."""

from __future__ import annotations

import asyncio
import inspect

import pytest
import typer
from mcp import Client

import sophrosyne
from sophrosyne.cli.app import app, demo_path
from sophrosyne.cli.terminal import for_the_terminal
from sophrosyne.environment import Environment
from sophrosyne.serve.server import build_server
from sophrosyne.tools.base import Result
from sophrosyne.tools.declared import run_declared
from sophrosyne.tools.registry import NAMES, TOOLS, ToolEntry, tool_named


@pytest.mark.parametrize("entry", TOOLS, ids=NAMES)
def test_each_tool_is_its_modules_function_over_an_environment_returning_a_result(entry: ToolEntry) -> None:
    function = entry.function()
    signature = inspect.signature(function, eval_str=True)
    assert next(iter(signature.parameters)) == "env"
    assert issubclass(signature.return_annotation, Result)
    assert function.__doc__ and "Example:" in function.__doc__


def test_the_environment_has_a_method_per_tool_and_no_other() -> None:
    bound = {
        name: value.__wrapped__
        for name, value in vars(Environment).items()
        if getattr(getattr(value, "__wrapped__", None), "__module__", "").startswith("sophrosyne.tools.")
    }
    # Besides the registry's tools, the runner of the tools a policy file declares (sql/policy/tools.py).
    assert bound == {entry.name: entry.function() for entry in TOOLS} | {"run_declared": run_declared}


def test_the_server_lists_the_registry_in_its_order() -> None:
    async def listed() -> list[str]:
        with Environment.open(demo_path()) as env:
            async with Client(build_server(env)) as client:
                return [t.name for t in (await client.list_tools()).tools]

    # A tool served only when a setting says so (export_sql: allow_exports) is not listed by default.
    assert asyncio.run(listed()) == [entry.name for entry in TOOLS if entry.served_if is None]


def test_each_command_the_registry_names_exists() -> None:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for entry in TOOLS:
        assert entry.command is not None
        _, name, *options = entry.command.split()
        command = commands[name]
        flags = {flag for param in command.params for flag in param.opts}
        assert set(options) <= flags, entry.command
    assert for_the_terminal("call describe_table(table='x') first") == "call `sophrosyne describe` first"


def test_the_facade_names_each_tools_results() -> None:
    for entry in TOOLS:
        for name in entry.exports.split():
            assert name in sophrosyne.__all__
            assert sophrosyne._HOME[name] == entry.module


def test_an_unknown_name_is_no_tool() -> None:
    assert tool_named("execute_sql").explores == "sql"
    with pytest.raises(KeyError):
        tool_named("drop_table")
