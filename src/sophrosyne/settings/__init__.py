"""One settings model in sections: every limit is typed, documented, and set by TOML file or SOPHROSYNE_* variables.

Each setting has a flat name too (`timeout_s`, `llm_retries`), unique over all sections: its environment variable
is `SOPHROSYNE_<FLAT NAME>`, and files and `Settings(...)` may give it flat or in its section (`[limits]`).
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sophrosyne.errors import ConfigError
from sophrosyne.settings.sections import (
    Agent,
    DirectivesMode,
    Exports,
    Inference,
    Limits,
    ModelPrice,
    Paths,
    Reading,
    Sandbox,
    Section,
    ToolMode,
)

ENV_PREFIX = "SOPHROSYNE_"

# Read when the matching setting is given nowhere else, so an OpenAI-style setup works as it is.
FALLBACK_VARIABLES = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}


SECTIONS: dict[str, type[Section]] = {
    s.__name__.lower(): s for s in (Limits, Reading, Inference, Agent, Sandbox, Exports, Paths)
}
# Flat names that differ from the name in the section: the inference model's and the agent's model settings
# had one `llm_` prefix for two models, and the sandbox's a `python_` one. Every other flat name is the field's.
_RENAMED = {
    flat: (section, name)
    for section, renames in {
        "inference": "llm_base_url=base_url llm_model=model llm_api_key=api_key",
        "agent": "llm_tool_mode=tool_mode llm_retries=call_retries llm_backoff_s=backoff_s llm_max_wait_s=max_wait_s "
        "llm_timeout_s=call_timeout_s llm_connect_timeout_s=connect_timeout_s llm_wait_notice_s=wait_notice_s "
        "llm_temperature=temperature llm_prices=prices agent_tool_calls=tool_calls agent_retries=retries",
        "sandbox": "python_cpu_s=cpu_s python_wall_s=wall_s python_memory_mb=memory_mb "
        "python_output_chars=output_chars",
    }.items()
    for flat, name in (rename.split("=") for rename in renames.split())
}
_IN_SECTION = {v: k for k, v in _RENAMED.items()}
# Flat name -> (section, field), for every setting.
FLAT: dict[str, tuple[str, str]] = {
    _IN_SECTION.get((section, name), name): (section, name)
    for section, model in SECTIONS.items()
    for name in model.model_fields
}


def flat_name(section: str, name: str) -> str:
    """The flat name of a setting (and, upper-cased after SOPHROSYNE_, its environment variable)."""
    return _IN_SECTION.get((section, name), name)


def _nested(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Settings given flat or by section, as section -> field -> value (a flat name wins over its section's)."""
    nested: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key in SECTIONS:
            given = dict(value) if isinstance(value, Section) else value
            if not isinstance(given, dict):
                raise ConfigError(f"setting `{key}` is a section: give it as a table ([{key}]).")
            for name, item in given.items():
                nested.setdefault(key, {}).setdefault(name, item)
        elif key in FLAT:
            section, name = FLAT[key]
            nested.setdefault(section, {})[name] = value
        else:
            nested.setdefault("", {})[key] = value  # refused by the model as an unknown setting
    return nested


def _merged(*sources: dict[str, Any]) -> dict[str, Any]:
    """Later sources win, setting by setting."""
    out: dict[str, dict[str, Any]] = {}
    for source in sources:
        for section, values in _nested(source).items():
            out.setdefault(section, {}).update(values)
    unknown = out.pop("", {})
    return {**out, **unknown}


class Settings(BaseModel):
    """Limits and defaults of the environment, in sections. Each setting can be set as `SOPHROSYNE_<FLAT NAME>`.

    Arguments given to the constructor win over `SOPHROSYNE_*` variables, which win over the defaults.
    (A plain pydantic model reading its own variables: pydantic-settings costs 0.2 s of start-up.)
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    limits: Limits = Field(default_factory=Limits, description=Limits.__doc__)
    reading: Reading = Field(default_factory=Reading, description=Reading.__doc__)
    inference: Inference = Field(default_factory=Inference, description=Inference.__doc__)
    agent: Agent = Field(default_factory=Agent, description=Agent.__doc__)
    sandbox: Sandbox = Field(default_factory=Sandbox, description=Sandbox.__doc__)
    exports: Exports = Field(default_factory=Exports, description=Exports.__doc__)
    paths: Paths = Field(default_factory=Paths, description=Paths.__doc__)

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return _merged(cls.fallback_variables(), cls.from_variables(), data)

    @classmethod
    def from_variables(cls) -> dict[str, Any]:
        """The settings given as `SOPHROSYNE_<FLAT NAME>` environment variables, by flat name.

        A dict-valued setting (a price table) is written as JSON."""
        found: dict[str, Any] = {}
        for flat, (section, name) in FLAT.items():
            raw = os.environ.get(ENV_PREFIX + flat.upper())
            if raw is None:
                continue
            if getattr(SECTIONS[section].model_fields[name].annotation, "__origin__", None) is dict:
                try:
                    found[flat] = json.loads(raw)
                except ValueError as exc:
                    raise ConfigError(
                        f"{ENV_PREFIX}{flat.upper()} is not valid JSON: {exc}.",
                        hint='Write a JSON object, e.g. {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}.',
                    ) from None
            else:
                found[flat] = raw
        return found

    @classmethod
    def fallback_variables(cls) -> dict[str, str]:
        """OPENAI_API_KEY and OPENAI_BASE_URL, used where no file or SOPHROSYNE_* variable sets those settings."""
        return {name: os.environ[var] for name, var in FALLBACK_VARIABLES.items() if os.environ.get(var)}

    @classmethod
    def load(cls, path: Path | None = None, **overrides: Any) -> Settings:
        """Settings from an optional TOML file, then SOPHROSYNE_* variables, then explicit overrides."""
        data: dict[str, Any] = {}
        if path is not None:
            try:
                data = tomllib.loads(Path(path).read_text())
            except FileNotFoundError:
                raise ConfigError(
                    f"settings file {path} does not exist.", hint="Give the path of a TOML file."
                ) from None
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"settings file {path} is not valid TOML: {exc}.") from None
            data = data.get("sophrosyne", data)
        # The file is read first; environment variables win over it, explicit overrides win over both.
        given = {k: v for k, v in overrides.items() if v is not None}
        variables = {flat: value for flat, value in cls.from_variables().items() if flat not in given}
        try:
            return cls(**_merged(cls.fallback_variables(), data, variables, given))
        except ValidationError as exc:
            raise _config_error(exc, path, data, variables) from None

    def replaced(self, **changes: Any) -> Settings:
        """A copy with some settings changed, named flat (`policy_file=...`) or by section, checked as given."""
        try:
            return type(self).model_validate(_merged(self.model_dump(), changes))
        except ValidationError as exc:
            raise _config_error(exc, None, changes, {}) from None


__all__ = [
    "ENV_PREFIX",
    "FLAT",
    "SECTIONS",
    "Agent",
    "DirectivesMode",
    "Exports",
    "Inference",
    "Limits",
    "ModelPrice",
    "Paths",
    "Reading",
    "Sandbox",
    "Section",
    "Settings",
    "ToolMode",
    "flat_name",
]


def _config_error(exc: ValidationError, path: Path | None, data: dict[str, Any], env: dict[str, Any]) -> ConfigError:
    """The first error, naming the setting as the file wrote it (flat, or section.name), or the variable."""
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"]]
    section, name = [*loc, ""][:2]
    flat = flat_name(section, name) if section in SECTIONS else section
    where = flat if flat in data or section not in SECTIONS else f"{section}.{name}"
    written = flat in data or (section in data and isinstance(data[section], dict) and name in data[section])
    source = f" in {path}" if path is not None and written else ""
    if first["type"] == "extra_forbidden":
        choices = list(FLAT) + [f"{s}.{n}" for s, n in FLAT.values()]
        close = difflib.get_close_matches(where, choices, n=1)
        return ConfigError(
            f"unknown setting `{where}`{source}.",
            hint=(f"Did you mean `{close[0]}`? " if close else "")
            + "The README's Settings section lists every setting.",
        )
    if flat in env:  # the value is not shown: the variable may hold a secret
        where, source = flat, f" (from the environment variable {ENV_PREFIX}{flat.upper()})"
    return ConfigError(f"setting `{where}`{source} is invalid: {first['msg']}.")
