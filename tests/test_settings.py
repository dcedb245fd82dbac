"""Settings: file, then SOPHROSYNE_* variables, then explicit overrides; bad values are clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sophrosyne.errors import ConfigError
from sophrosyne.settings import Settings


def test_file_then_environment_then_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[sophrosyne]\nrow_cap = 50\ntimeout_s = 3\n")
    assert Settings.load(path).row_cap == 50
    monkeypatch.setenv("SOPHROSYNE_ROW_CAP", "7")
    settings = Settings.load(path)
    assert (settings.row_cap, settings.timeout_s) == (7, 3.0)
    assert Settings.load(path, row_cap=9).row_cap == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("row_cap = 0\n", "`row_cap` is invalid"),
        ("rows = 5\n", "`rows` is invalid"),
        ("row_cap = \n", "not valid TOML"),
        ('directives = "sometimes"\n', "`directives` is invalid"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Settings.load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.load(tmp_path / "nope.toml")


def test_bad_environment_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOPHROSYNE_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="timeout_s"):
        Settings.load()
