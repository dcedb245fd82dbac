"""One settings model: every limit is typed, documented, and set by TOML file or SOPHROSYNE_* variables."""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from sophrosyne.errors import ConfigError

ENV_PREFIX = "SOPHROSYNE_"

DirectivesMode = Literal["none", "directives", "oracle"]
ToolMode = Literal["auto", "native", "json"]

# Read when the matching setting is given nowhere else, so an OpenAI-style setup works as it is.
FALLBACK_VARIABLES = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}


class ModelPrice(BaseModel):
    """What a model costs, in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="Dollars per million prompt tokens.")
    output: float = Field(ge=0, description="Dollars per million completion tokens.")


class Settings(BaseModel):
    """Limits and defaults of the environment. Each field can be set as `SOPHROSYNE_<NAME>`.

    Arguments given to the constructor win over `SOPHROSYNE_*` variables, which win over the defaults.
    (A plain pydantic model reading its own variables: pydantic-settings costs 0.2 s of start-up.)
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    row_cap: int = Field(200, ge=1, le=100_000, description="Most rows execute_sql returns to a client.")
    timeout_s: float = Field(10.0, gt=0, le=3600, description="Longest a single statement may run, seconds.")
    slow_query_s: float = Field(
        1.0,
        gt=0,
        le=3600,
        description="execute_sql taking at least this many seconds comes back with performance hints.",
    )
    # -- the shape of a statement (sophrosyne/sql/shape.py): bounded before the engine plans it ---------------------
    sql_max_depth: int = Field(
        100, ge=10, le=200, description="Deepest nesting of a statement's expressions and parentheses."
    )
    sql_max_ctes: int = Field(32, ge=1, le=200, description="Most CTEs a statement may define.")
    sql_max_tables: int = Field(
        20,
        ge=1,
        le=1000,
        description="Most tables and subqueries in FROM and JOIN, each CTE counted as often as it is read.",
    )
    sql_max_query_depth: int = Field(
        32, ge=2, le=100, description="Deepest nesting of queries in a statement, a CTE read counting as its query."
    )
    sql_max_set_operations: int = Field(
        64, ge=1, le=1000, description="Most UNION, INTERSECT and EXCEPT operations in a statement."
    )
    sql_max_literal_chars: int = Field(
        10_000, ge=100, le=1_000_000, description="Longest string literal in a statement, characters."
    )
    sql_max_pattern_chars: int = Field(
        4_000,
        ge=10,
        le=100_000,
        description="Longest LIKE, SIMILAR TO or regular expression pattern, characters (a search term of 1,000, "
        "escaped, makes at most 2,002).",
    )
    token_budget: int = Field(
        4000, ge=200, le=200_000, description="Most tokens a single tool response may hold before it is cut."
    )
    sample_values: int = Field(5, ge=0, le=50, description="Distinct sample values describe_table shows per column.")
    sample_rows: int = Field(
        200, ge=10, le=1_000_000, description="Rows describe_table reads for samples and null shares."
    )
    value_chars: int = Field(60, ge=8, le=2000, description="Longest a single value is shown before it is cut.")
    read_value_chars: int = Field(
        100_000,
        ge=2000,
        le=100_000_000,
        description="Longest a single value is kept in memory as a result is read; a longer one is cut as it "
        "arrives, and the response says so.",
    )
    read_result_bytes: int = Field(
        50_000_000,
        ge=1_000_000,
        le=4_000_000_000,
        description="Most bytes of values one statement's result may hold in memory; reading stops there, and "
        "the response says so.",
    )
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
    join_inference_s: float = Field(
        3.0,
        gt=0,
        le=3600,
        description="Seconds join inference may spend confirming undeclared joins by sampled values.",
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
    # -- the agent's model (`sophrosyne ask`, the solvers) -------------------------------------------------
    model: str | None = Field(None, description="Chat model the agent uses, e.g. gpt-4o-mini or a local model name.")
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint (…/v1) of the agent's model; OPENAI_BASE_URL when unset, else OpenAI.",
    )
    api_key: SecretStr | None = Field(
        None, description="API key of the agent's model endpoint; OPENAI_API_KEY when unset."
    )
    llm_tool_mode: ToolMode = Field(
        "auto",
        description="How the model calls tools: native tool calls, plain JSON replies, or auto (native, and JSON "
        "from then on when the server refuses `tools`).",
    )
    llm_retries: int = Field(4, ge=0, le=20, description="Retries of a model call after a rate limit or server error.")
    llm_backoff_s: float = Field(
        1.0, ge=0, le=600, description="First wait before a retry, seconds; doubles each time unless Retry-After says."
    )
    llm_max_wait_s: float = Field(60.0, ge=0, le=3600, description="Longest single wait before a retry, seconds.")
    llm_timeout_s: float = Field(120.0, gt=0, le=3600, description="Longest a single model call may take, seconds.")
    llm_temperature: float | None = Field(
        None, ge=0, le=2, description="Sampling temperature sent to the model (unset: the server's default)."
    )
    llm_prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description='Price table, dollars per million tokens by model: {"gpt-4o-mini": {"input": 0.15, '
        '"output": 0.6}} (JSON in SOPHROSYNE_LLM_PRICES).',
    )
    agent_tool_calls: int = Field(
        40, ge=1, le=1000, description="Most tool calls one solver run may make before it gives up."
    )
    agent_retries: int = Field(
        3, ge=0, le=10, description="Times a failing query (or program) is sent back to the model with its error."
    )
    flex_plans: int = Field(3, ge=1, le=16, description="Plans the FlexSQL solver asks for in one call.")
    python_cpu_s: float = Field(10.0, gt=0, le=3600, description="CPU seconds a sandboxed Python program may use.")
    python_wall_s: float = Field(30.0, gt=0, le=3600, description="Wall-clock seconds a Python program may run.")
    python_memory_mb: int = Field(
        1024, ge=256, le=65536, description="Address space a sandboxed Python program may use, MB."
    )
    python_output_chars: int = Field(
        4000, ge=100, le=1_000_000, description="Most characters of a Python program's printed output kept."
    )
    # -- serving over HTTP ------------------------------------------------------------------------------
    http_request_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds an HTTP client has to send a whole request (headers and body), from connecting or "
        "from its previous answer; a slower connection is closed.",
    )
    http_connections_per_client: int = Field(
        128,
        ge=1,
        le=1_000_000,
        description="Most HTTP connections one client address may hold open (per worker); beyond, a connection "
        "is answered 429 and closed. Behind a reverse proxy every client has the proxy's address: raise it there.",
    )
    directives: DirectivesMode = Field("directives", description="Directive mode: none, directives or oracle.")
    cache_dir: Path = Field(Path.home() / ".cache" / "sophrosyne", description="Where offline indexes are stored.")
    audit_log: Path | None = Field(None, description="JSONL file that receives one record per tool call.")
    policy_file: Path | None = Field(None, description="TOML file with roles, row filters and column rules.")

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {**cls.fallback_variables(), **cls.from_variables(), **data}

    @classmethod
    def from_variables(cls) -> dict[str, Any]:
        """The settings given as `SOPHROSYNE_<NAME>` environment variables, by field name.

        A dict-valued setting (a price table) is written as JSON."""
        found: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            raw = os.environ.get(ENV_PREFIX + name.upper())
            if raw is None:
                continue
            if getattr(field.annotation, "__origin__", None) is dict:
                try:
                    found[name] = json.loads(raw)
                except ValueError as exc:
                    raise ConfigError(
                        f"{ENV_PREFIX}{name.upper()} is not valid JSON: {exc}.",
                        hint='Write a JSON object, e.g. {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}.',
                    ) from None
            else:
                found[name] = raw
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
        merged = {
            **cls.fallback_variables(),
            **data,
            **cls.from_variables(),
            **{k: v for k, v in overrides.items() if v is not None},
        }
        try:
            return cls(**merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            source = f" in {path}" if path is not None and where in data else ""
            if first["type"] == "extra_forbidden":
                close = difflib.get_close_matches(where, list(cls.model_fields), n=1)
                raise ConfigError(
                    f"unknown setting `{where}`{source}.",
                    hint=(f"Did you mean `{close[0]}`? " if close else "")
                    + "The README's Settings section lists every setting.",
                ) from None
            raise ConfigError(f"setting `{where}`{source} is invalid: {first['msg']}.") from None
