"""Docs are tested: every CLI command, MCP tool and setting has help text and is in the README."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sophrosyne.cli.app import app
from sophrosyne.environment import Environment
from sophrosyne.serve.server import build_server
from sophrosyne.settings import FLAT, SECTIONS, flat_name
from sophrosyne.tools.registry import TOOLS, ToolEntry

README = (Path(__file__).parents[1] / "README.md").read_text()
COMMANDS = sorted(info.name or info.callback.__name__ for info in app.registered_commands if info.callback)
SUBCOMMANDS = sorted(
    (group.name or "", info.name or info.callback.__name__)
    for group in app.registered_groups
    if group.typer_instance
    for info in group.typer_instance.registered_commands
    if info.callback
)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example_and_is_in_the_readme(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
    assert f"sophrosyne {command}" in README


@pytest.mark.parametrize(("group", "command"), SUBCOMMANDS)
def test_every_subcommand_has_help_with_an_example_and_is_in_the_readme(group: str, command: str) -> None:
    result = CliRunner().invoke(app, [group, command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
    assert f"sophrosyne {group} {command}" in README


def test_every_setting_is_documented_and_in_the_readme() -> None:
    for section, model in SECTIONS.items():
        assert model.__doc__ and f"**`{section}`**" in README, f"section {section} is missing from the README"
        for name, field in model.model_fields.items():
            assert field.description, f"setting {section}.{name} has no description"
            assert f"| `{flat_name(section, name)}` | `{section}.{name}` |" in README, (
                f"{section}.{name} not in the README"
            )
    assert set(FLAT) == {flat_name(s, n) for s, m in SECTIONS.items() for n in m.model_fields}


def test_every_mcp_tool_has_a_description_with_an_example_and_is_in_the_readme(tmp_path: Path) -> None:
    from sophrosyne.cli.app import demo_path

    server = build_server(Environment.open(demo_path()))
    tools = asyncio.run(server.list_tools())
    assert tools
    for tool in tools:
        assert tool.description and "Example:" in tool.description, tool.name
        assert f"`{tool.name}" in README, f"tool {tool.name} is missing from the README"
        for prop in (tool.input_schema.get("properties") or {}).values():
            assert prop.get("description"), f"an argument of {tool.name} has no description"


@pytest.mark.parametrize("entry", TOOLS, ids=[entry.name for entry in TOOLS])
def test_the_readme_gives_each_tool_its_arguments(entry: ToolEntry) -> None:
    parameters = list(inspect.signature(entry.function()).parameters.values())[1:]  # less the environment
    shown = ", ".join(p.name + ("?" if p.default is not inspect.Parameter.empty else "") for p in parameters)
    assert f"| `{entry.name}({shown})` |" in README
