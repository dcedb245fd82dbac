"""The package surface: `from sophrosyne import ...` gives the API, and importing it (or the CLI) stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time

import pytest

import sophrosyne

HEAVY = ("sqlglot", "sqlalchemy", "numpy", "mcp", "bm25s", "duckdb", "rapidfuzz")


@pytest.mark.parametrize("name", sorted(set(sophrosyne.__all__) - {"__version__"}))
def test_every_exported_name_resolves_to_its_home(name: str) -> None:
    value = getattr(sophrosyne, name)
    home = importlib.import_module(sophrosyne._HOME[name])
    assert value is getattr(home, name)


def test_exports_and_homes_agree() -> None:
    assert set(sophrosyne.__all__) - {"__version__"} == set(sophrosyne._HOME)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = sophrosyne.Nope  # type: ignore[attr-defined]


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(m for m in sys.modules if '.' not in m)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.splitlines()[-1].split())  # the last line: a command prints before it


def _loaded_by_command(*argv: str) -> set[str]:
    """The top-level modules loaded by running `sophrosyne ARGV` as the console script does."""
    run = f"sys.argv = ['sophrosyne', *{list(argv)!r}]\nfrom sophrosyne.cli.entry import main\n"
    return _loaded_after(run + "try:\n    main()\nexcept SystemExit:\n    pass")


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    assert not _loaded_after("import sophrosyne") & {*HEAVY, "pydantic"}


def test_the_cli_loads_no_heavy_dependency_before_a_command_runs() -> None:
    # `sophrosyne --help` pays only for typer and rich; each command imports what it needs.
    assert not _loaded_after("import sophrosyne.cli.app") & set(HEAVY)


def test_the_version_is_answered_before_the_command_line_loads() -> None:
    # 0.07-0.17 s at load 15, was 0.26-0.43 s at load 1-4: typer, rich, click and the commands are not imported.
    assert not _loaded_by_command("--version") & {"typer", "rich", "click", "pydantic", *HEAVY}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sophrosyne", "--version"], capture_output=True, text=True)
    assert done.stdout.startswith("sophrosyne ") and time.monotonic() - started < 2.0  # a generous bound


def test_listing_the_sources_does_not_load_the_mcp_sdk() -> None:
    # The SDK took 1.8 s of `sophrosyne sources demo`'s 2.4 s; the command only reads the databases.
    assert "mcp" not in _loaded_by_command("sources", "demo")


@pytest.mark.parametrize(
    ("text", "limit", "at_word", "expected"),
    [
        ("short", 10, False, "short"),
        ("abcdefghij", 5, False, "abcd…"),
        ("the knowledge says 'x = ten'", 22, True, "the knowledge says…"),
        ("word", 1, False, "…"),
    ],
)
def test_one_shorten_cuts_every_text(text: str, limit: int, at_word: bool, expected: str) -> None:
    from sophrosyne.base.text import shorten

    assert shorten(text, limit, at_word=at_word) == expected
    assert len(shorten(text, limit, at_word=at_word)) <= limit
