"""Settings: file, then SOPHROSYNE_* variables, then explicit overrides; bad values are clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sophrosyne.errors import ConfigError
from sophrosyne.settings import Settings


def test_file_then_environment_then_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[sophrosyne]\nrow_cap = 50\ntimeout_s = 3\n")
    assert Settings.load(path).limits.row_cap == 50
    monkeypatch.setenv("SOPHROSYNE_ROW_CAP", "7")
    settings = Settings.load(path)
    assert (settings.limits.row_cap, settings.limits.timeout_s) == (7, 3.0)
    assert Settings.load(path, row_cap=9).limits.row_cap == 9


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
    with pytest.raises(
        ConfigError, match=r"^setting `timeout_s` \(from the environment variable SOPHROSYNE_TIMEOUT_S\)"
    ):
        Settings.load()
    monkeypatch.setenv("SOPHROSYNE_LLM_RETRIES", "many")  # a renamed setting names its own variable
    monkeypatch.delenv("SOPHROSYNE_TIMEOUT_S")
    with pytest.raises(ConfigError, match="SOPHROSYNE_LLM_RETRIES") as caught:
        Settings.load()
    assert "many" not in str(caught.value)  # a variable's value may be a secret: never shown
    assert Settings.load(llm_retries=1).agent.call_retries == 1  # an override wins over the bad variable


def test_a_price_table_is_read_from_a_json_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOPHROSYNE_LLM_PRICES", '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}')
    for settings in (Settings(), Settings.load()):
        assert settings.agent.prices["gpt-4o-mini"].output == 0.6
    monkeypatch.setenv("SOPHROSYNE_LLM_PRICES", "{gpt: 1}")
    with pytest.raises(ConfigError, match="SOPHROSYNE_LLM_PRICES is not valid JSON"):
        Settings.load()


def test_openai_variables_fill_in_only_what_nothing_else_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    settings = Settings.load()
    assert settings.agent.api_key is not None and settings.agent.api_key.get_secret_value() == "sk-from-openai"
    assert settings.agent.base_url == "http://127.0.0.1:9/v1"
    path = tmp_path / "s.toml"
    path.write_text('base_url = "http://127.0.0.1:8/v1"\n')
    assert Settings.load(path).agent.base_url == "http://127.0.0.1:8/v1"
    monkeypatch.setenv("SOPHROSYNE_API_KEY", "sk-ours")
    key = Settings.load(path).agent.api_key
    assert key is not None and key.get_secret_value() == "sk-ours"


def test_sections_in_a_file_flat_names_and_variables_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[limits]\ntimeout_s = 3\n[agent]\ncall_retries = 2\n[inference]\nmodel = "small"\n')
    settings = Settings.load(path)
    assert (settings.limits.timeout_s, settings.agent.call_retries, settings.inference.model) == (3.0, 2, "small")
    # A variable keeps its flat name, and wins over the file's section.
    monkeypatch.setenv("SOPHROSYNE_LLM_RETRIES", "6")
    monkeypatch.setenv("SOPHROSYNE_PYTHON_WALL_S", "12")
    settings = Settings.load(path)
    assert (settings.agent.call_retries, settings.sandbox.wall_s) == (6, 12.0)
    # The agent's model and the inference model are two settings, no longer two `llm_` and `model` names.
    assert Settings(llm_model="small", model="large").inference.model == "small"
    assert Settings(llm_model="small", model="large").agent.model == "large"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[limits]\nrows = 5\n", "unknown setting `limits.rows` in .*s.toml"),
        ("[limits]\nrow_cap = 0\n", "`limits.row_cap` in .*s.toml is invalid"),
        ("limits = 5\n", "`limits` is a section"),
        ("timout_s = 5\n", "Did you mean `timeout_s`"),
    ],
)
def test_bad_sections_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Settings.load(path)


def test_a_copy_with_some_settings_changed_is_checked() -> None:
    base = Settings(row_cap=5)
    changed = base.replaced(policy_file="p.toml", directives="none")
    assert (changed.paths.policy_file, changed.inference.directives, changed.limits.row_cap) == (
        Path("p.toml"),
        "none",
        5,
    )
    assert base.paths.policy_file is None
    with pytest.raises(ConfigError, match="`directives` is invalid"):
        base.replaced(directives="sometimes")
