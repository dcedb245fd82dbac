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
        ("row_cap = 0\n", "`row_cap` in .*s.toml is invalid"),
        ("rows = 5\n", "unknown setting `rows` in .*s.toml"),
        ("row_cap = \n", "not valid TOML"),
        ('directives = "sometimes"\n', "`directives` in .*s.toml is invalid"),
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


def test_a_price_table_is_read_from_a_json_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOPHROSYNE_LLM_PRICES", '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}')
    for settings in (Settings(), Settings.load()):
        assert settings.llm_prices["gpt-4o-mini"].output == 0.6
    monkeypatch.setenv("SOPHROSYNE_LLM_PRICES", "{gpt: 1}")
    with pytest.raises(ConfigError, match="SOPHROSYNE_LLM_PRICES is not valid JSON"):
        Settings.load()


def test_openai_variables_fill_in_only_what_nothing_else_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    settings = Settings.load()
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "sk-from-openai"
    assert settings.base_url == "http://127.0.0.1:9/v1"
    path = tmp_path / "s.toml"
    path.write_text('base_url = "http://127.0.0.1:8/v1"\n')
    assert Settings.load(path).base_url == "http://127.0.0.1:8/v1"
    monkeypatch.setenv("SOPHROSYNE_API_KEY", "sk-ours")
    key = Settings.load(path).api_key
    assert key is not None and key.get_secret_value() == "sk-ours"
