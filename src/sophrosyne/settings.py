"""One settings model: every limit is typed, documented, and set by TOML file or SOPHROSYNE_* variables."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from sophrosyne.errors import ConfigError

DirectivesMode = Literal["none", "directives", "oracle"]


class Settings(BaseSettings):
    """Limits and defaults of the environment. Each field can be set as `SOPHROSYNE_<NAME>`."""

    model_config = SettingsConfigDict(env_prefix="SOPHROSYNE_", extra="forbid", validate_assignment=True)

    row_cap: int = Field(200, ge=1, le=100_000, description="Most rows execute_sql returns to a client.")
    timeout_s: float = Field(10.0, gt=0, le=3600, description="Longest a single statement may run, seconds.")
    token_budget: int = Field(
        4000, ge=200, le=200_000, description="Most tokens a single tool response may hold before it is cut."
    )
    sample_values: int = Field(5, ge=0, le=50, description="Distinct sample values describe_table shows per column.")
    sample_rows: int = Field(
        200, ge=10, le=1_000_000, description="Rows describe_table reads for samples and null shares."
    )
    value_chars: int = Field(60, ge=8, le=2000, description="Longest a single value is shown before it is cut.")
    distinct_limit: int = Field(
        50, ge=1, le=10_000, description="Default number of values get_distinct_values returns."
    )
    distinct_budget_s: float = Field(
        0.25,
        gt=0,
        le=60,
        description="Seconds a live value search on a large column may take; its values then load for later calls.",
    )
    distinct_scan_rows: int = Field(
        200_000,
        ge=1000,
        description="Tables above this many rows get live value searches while their values load in the background.",
    )
    find_rows_limit: int = Field(20, ge=1, le=1000, description="Default number of rows find_rows returns.")
    exact_count_rows: int = Field(
        100_000,
        ge=0,
        description="Largest table whose row count may be counted exactly when the engine has no estimate.",
    )
    value_index_s: float = Field(
        10.0, gt=0, le=3600, description="Seconds the value index (for grounding literals) may spend reading values."
    )
    llm_base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint (…/v1) of an inexpensive model that infers column names."
    )
    llm_model: str | None = Field(None, description="Model name for llm_base_url.")
    llm_api_key: SecretStr | None = Field(None, description="API key for llm_base_url, if it needs one.")
    directives: DirectivesMode = Field("directives", description="Directive mode: none, directives or oracle.")
    cache_dir: Path = Field(Path.home() / ".cache" / "sophrosyne", description="Where offline indexes are stored.")
    audit_log: Path | None = Field(None, description="JSONL file that receives one record per tool call.")
    policy_file: Path | None = Field(None, description="TOML file with roles, row filters and column rules.")

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
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            # The file is read first; environment variables win over it, explicit overrides win over both.
            env_only = cls()
            merged = {**data, **{k: getattr(env_only, k) for k in env_only.model_fields_set}}
            merged.update({k: v for k, v in overrides.items() if v is not None})
            return cls(**merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"setting `{where}` is invalid: {first['msg']}.") from None
