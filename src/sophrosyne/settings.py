"""One settings model: every limit is typed, documented, and set by TOML file or SOPHROSYNE_* variables."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from sophrosyne.errors import ConfigError

ENV_PREFIX = "SOPHROSYNE_"

DirectivesMode = Literal["none", "directives", "oracle"]


class Settings(BaseModel):
    """Limits and defaults of the environment. Each field can be set as `SOPHROSYNE_<NAME>`.

    Arguments given to the constructor win over `SOPHROSYNE_*` variables, which win over the defaults.
    (A plain pydantic model reading its own variables: pydantic-settings costs 0.2 s of start-up.)
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

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
    question_chars: int = Field(
        2000, ge=100, le=1_000_000, description="Longest question read for directives; a longer one is cut, noted."
    )
    knowledge_chars: int = Field(
        4000, ge=100, le=1_000_000, description="Longest knowledge read for directives; a longer one is cut, noted."
    )
    schemas: str = Field(
        "*",
        description="Schemas to read, comma-separated: `*` is every schema the connection can read (the search "
        "path's first, by plain name; others as schema.table); `search_path` is the search path's only.",
    )
    schema_check_s: float = Field(
        2.0, ge=0, le=3600, description="Seconds between checks that the schema changed; 0 checks on every call."
    )
    database: str | None = Field(
        None,
        description="Database served when no DB argument is given (a path or URL): keeps a password off the "
        "command line.",
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

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {**cls.from_variables(), **data}

    @classmethod
    def from_variables(cls) -> dict[str, str]:
        """The settings given as `SOPHROSYNE_<NAME>` environment variables, by field name."""
        return {
            name: os.environ[ENV_PREFIX + name.upper()]
            for name in cls.model_fields
            if ENV_PREFIX + name.upper() in os.environ
        }

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
        merged = {**data, **cls.from_variables(), **{k: v for k, v in overrides.items() if v is not None}}
        try:
            return cls(**merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"setting `{where}` is invalid: {first['msg']}.") from None
