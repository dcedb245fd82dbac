"""The command line for a new user (issue 21, item 10): a forgotten argument, oracle directives, hints that name
commands rather than MCP tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sophrosyne.cli.app import app
from sophrosyne.cli.terminal import for_the_terminal


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def no_default_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOPHROSYNE_DATABASE", raising=False)


@pytest.mark.parametrize(
    ("args", "missing", "example"),
    [
        (["values", "demo", "departments"], "COLUMN", "demo departments COLUMN"),
        (["describe", "demo"], "TABLE", "demo TABLE"),
        (["find", "sqlite:///shop.db"], "TERM", "sqlite:///shop.db TERM"),
    ],
)
def test_a_database_without_its_arguments_says_what_is_missing(args: list[str], missing: str, example: str) -> None:
    code, _, err = invoke(*args)
    assert code == 2
    assert f"`{args[1]}` is a database, so {missing} is missing" in err and f"e.g. {example}." in err


def test_a_table_named_like_the_database_is_still_a_table_when_another_database_is_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOPHROSYNE_DATABASE", "demo")
    code, _, err = invoke("describe", "demo")
    assert code == 1 and err.startswith("error: no table `demo` in demo.")


def test_oracle_directives_on_the_command_line_say_where_they_work() -> None:
    code, _, err = invoke("tables", "demo", "--directives", "oracle", "--question", "How many employees?")
    assert code == 2
    assert "oracle directives need each question's gold SQL" in err and "bench run --arm oracle" in err
    assert "set_oracle" in err  # the Python API, named as such
    assert invoke("tables", "demo", "--directives", "none")[0] == 0


def test_hints_name_the_command_a_person_runs() -> None:
    code, _, err = invoke("sql", "demo", "SELECT nope FROM employees")
    assert code == 1
    hint = err.splitlines()[1]
    assert hint == "hint: Call `sophrosyne describe` to see what exists."
    assert for_the_terminal("Use get_distinct_values(table, column, search=...) or `find_rows`.") == (
        "Use `sophrosyne values` or `sophrosyne find`."
    )
    assert for_the_terminal("the describe_tables column") == "the describe_tables column"  # whole names only


def test_an_unknown_setting_is_named_with_its_file_and_the_closest_setting(tmp_path: Path) -> None:
    config = tmp_path / "settings.toml"
    config.write_text("timeout_sec = 3\n")
    code, _, err = invoke("tables", "demo", "--config", str(config))
    assert code == 1
    assert err.splitlines() == [
        f"error: unknown setting `timeout_sec` in {config}.",
        "hint: Did you mean `timeout_s`? The README's Settings section lists every setting.",
    ]


def test_an_offset_past_the_end_says_so() -> None:
    code, out, _ = invoke("tables", "demo", "--offset", "100")
    assert code == 0 and "offset 100 is past the last of the 12 entries; start again at offset 0." in out


@pytest.mark.parametrize("command", [["tables", "demo"], ["index", "demo"]])
def test_a_descriptions_folder_that_does_not_exist_is_refused(tmp_path: Path, command: list[str]) -> None:
    code, _, err = invoke(*command, "--descriptions", str(tmp_path / "nope"))
    assert code == 2 and "--descriptions" in err and "does not exist" in err


def test_the_python_api_refuses_a_descriptions_folder_that_does_not_exist(tmp_path: Path) -> None:
    from sophrosyne.environment import Environment
    from sophrosyne.errors import ConfigError

    with pytest.raises(ConfigError, match=r"the descriptions folder .* does not exist"):
        Environment.open("demo", descriptions=tmp_path / "nope")


def test_a_source_that_cannot_be_reached_says_so_with_its_name(tmp_path: Path) -> None:
    sources = tmp_path / "sources.toml"
    sources.write_text('[sources.shop]\nurl = "postgresql://postgres@127.0.0.1:1/shop"\ndescription = "Sales."\n')
    code, _, err = invoke("sources", "--sources", str(sources))
    assert code == 1 and "unexpected" not in err
    assert err.startswith("error: source `shop`: cannot connect to postgresql+psycopg://postgres@127.0.0.1:1/shop")
    assert "hint: Check that the server runs" in err


def test_serve_without_a_database_says_it_serves_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    monkeypatch.delenv("SOPHROSYNE_SOURCES", raising=False)
    hello = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    hello += '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    done = subprocess.run(
        [sys.executable, "-m", "sophrosyne", "serve"], input=hello, capture_output=True, text=True, timeout=120
    )
    assert done.stderr.startswith("no database given (no DB, --sources, SOPHROSYNE_DATABASE or SOPHROSYNE_SOURCES)")
    assert '"serverInfo"' in done.stdout
