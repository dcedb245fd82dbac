"""The command line for a new user, round two (issue 37, item 6): flags shown without a value, counts in the
singular when there is one, and the match words of the tool."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from sophrosyne.base.text import counted
from sophrosyne.cli.app import app


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("command", "flags"),
    [(["serve"], ["--http", "--allow-python", "--help"]), ([], ["--version"]), (["bench", "report"], ["--curve"])],
)
def test_help_shows_flags_without_a_value(command: list[str], flags: list[str]) -> None:
    code, out, _ = invoke(*command, "--help")
    assert code == 0
    for flag in flags:
        line = next(line for line in out.splitlines() if re.search(rf"{flag}\b", line) and "Example" not in line)
        assert "<bool>" not in line, line
    assert command != ["serve"] or re.search(r"--port\s+<int>", out)  # an option with a value keeps its type


def test_one_is_said_in_the_singular() -> None:
    assert [counted(n, "row") for n in (0, 1, 2, 1500)] == ["0 rows", "1 row", "2 rows", "1,500 rows"]
    assert (counted(1, "retry"), counted(3, "retry"), counted(2, "key")) == ("1 retry", "3 retries", "2 keys")
    code, out, _ = invoke("sql", "demo", "SELECT 1 AS one")
    assert code == 0 and re.search(r"\b1 row in \d+ ms", out) and "1 rows" not in out


def test_values_search_shows_the_match_words_of_the_tool() -> None:
    code, out, _ = invoke("values", "demo", "departments", "dept_name", "--search", "operations")
    assert code == 0
    assert re.search(r"Field Operations\s+1\s+substring", out) and " 100 " not in out
