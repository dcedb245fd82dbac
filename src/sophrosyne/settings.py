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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from sophrosyne.errors import ConfigError

ENV_PREFIX = "SOPHROSYNE_"

DirectivesMode = Literal["none", "directives", "oracle"]
ToolMode = Literal["auto", "native", "json"]

# Read when the matching setting is given nowhere else, so an OpenAI-style setup works as it is.
FALLBACK_VARIABLES = {"api_key": "OPENAI_API_KEY", "base_url": "OPENAI_BASE_URL"}


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelPrice(Section):
    """What a model costs, in US dollars per million tokens."""

    input: float = Field(ge=0, description="Dollars per million prompt tokens.")
    output: float = Field(ge=0, description="Dollars per million completion tokens.")


class Limits(Section):
    """What one call may cost: time, rows, tokens, memory, and the shape of a statement (sql/shape.py)."""

    row_cap: int = Field(200, ge=1, le=100_000, description="Most rows execute_sql returns to a client.")
    timeout_s: float = Field(10.0, gt=0, le=3600, description="Longest a single statement may run, seconds.")
    slow_query_s: float = Field(
        1.0, gt=0, le=3600, description="Seconds from which an execute_sql comes back with performance hints."
    )
    sql_max_depth: int = Field(
        100, ge=10, le=200, description="Deepest nesting of a statement's expressions and parentheses."
    )
    sql_max_ctes: int = Field(32, ge=1, le=200, description="Most CTEs a statement may define.")
    sql_max_tables: int = Field(
        20,
        ge=1,
        le=1000,
        description="Most tables one query joins (a CTE or subquery in FROM counts as its tables); all reads: twice.",
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
    sql_max_size_argument: int = Field(
        1_000_000, ge=1000, le=10**9, description="Largest width, length, count or precision a call may ask."
    )
    token_budget: int = Field(
        4000, ge=200, le=200_000, description="Most tokens a single tool response may hold before it is cut."
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
    question_chars: int = Field(
        2000, ge=100, le=1_000_000, description="Longest question read for directives; a longer one is cut, noted."
    )
    knowledge_chars: int = Field(
        4000, ge=100, le=1_000_000, description="Longest knowledge read for directives; a longer one is cut, noted."
    )
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
    connect_timeout_s: float = Field(5.0, gt=0, le=300, description="Seconds to open a database server's connection.")
    worker_threads: int = Field(32, ge=2, le=1024, description="Threads running tool calls (per HTTP worker).")
    python_programs: int = Field(4, ge=2, le=256, description="Python programs running at once, in their own threads.")
    client_calls: int = Field(2, ge=1, le=1024, description="Most calls one client may have running at once.")
    client_queue: int = Field(64, ge=0, le=100_000, description="Most calls of one client waiting to run.")
    client_wait_s: float = Field(30.0, ge=0, le=3600, description="Longest a call may wait to run, seconds.")


class Reading(Section):
    """What is read of a database and when: schemas, samples, distinct values, the value index, joins."""

    schemas: str = Field(
        "*",
        description="Schemas to read, comma-separated: `*` is every schema the connection can read (the search "
        "path's first, by plain name; others as schema.table); `search_path` is the search path's only.",
    )
    schema_check_s: float = Field(
        2.0, ge=0, le=3600, description="Seconds between checks that the schema changed; 0 checks on every call."
    )
    sample_values: int = Field(5, ge=0, le=50, description="Distinct sample values describe_table shows per column.")
    sample_rows: int = Field(
        200, ge=10, le=1_000_000, description="Rows describe_table reads for samples and null shares."
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


class Inference(Section):
    """Directives: the mode, and the inexpensive model that infers a question's column names (optional)."""

    directives: DirectivesMode = Field("directives", description="Directive mode: none, directives or oracle.")
    embedder: Literal["wordllama", "minilm", "e5-small"] = Field("wordllama", description="The index's embedder.")
    base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint (…/v1) of an inexpensive model that infers column names."
    )
    model: str | None = Field(None, description="Model name at the inference endpoint.")
    api_key: SecretStr | None = Field(None, description="API key of the inference endpoint, if it needs one.")


class Agent(Section):
    """The agent's model (`sophrosyne ask`, the solvers) and how far a solver may go."""

    model: str | None = Field(None, description="Chat model the agent uses, e.g. gpt-4o-mini or a local model name.")
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint (…/v1) of the agent's model; OPENAI_BASE_URL when unset, else OpenAI.",
    )
    api_key: SecretStr | None = Field(
        None, description="API key of the agent's model endpoint; OPENAI_API_KEY when unset."
    )
    tool_mode: ToolMode = Field(
        "auto",
        description="How the model calls tools: native tool calls, plain JSON replies, or auto (native, and JSON "
        "from then on when the server refuses `tools`).",
    )
    call_retries: int = Field(2, ge=0, le=20, description="Retries of a model call after a rate limit or server error.")
    backoff_s: float = Field(
        1.0, ge=0, le=600, description="First wait before a retry, seconds; doubles each time unless Retry-After says."
    )
    max_wait_s: float = Field(30.0, ge=0, le=3600, description="Longest single wait before a retry, seconds.")
    call_timeout_s: float = Field(60.0, gt=0, le=3600, description="Longest a single model call may take, seconds.")
    connect_timeout_s: float = Field(5.0, gt=0, le=600, description="Seconds to wait for the endpoint to connect.")
    wait_notice_s: float = Field(5.0, gt=0, le=600, description="Seconds between the `waiting for the model` lines.")
    temperature: float | None = Field(
        None, ge=0, le=2, description="Sampling temperature sent to the model (unset: the server's default)."
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description='Price table, dollars per million tokens by model: {"gpt-4o-mini": {"input": 0.15, '
        '"output": 0.6}} (JSON in SOPHROSYNE_LLM_PRICES).',
    )
    tool_calls: int = Field(
        40, ge=1, le=1000, description="Most tool calls one solver run may make before it gives up."
    )
    retries: int = Field(
        3, ge=0, le=10, description="Times a failing query (or program) is sent back to the model with its error."
    )
    flex_plans: int = Field(3, ge=1, le=16, description="Plans the FlexSQL solver asks for in one call.")


class Sandbox(Section):
    """What one sandboxed Python program may use (`run_python`, the FlexSQL solver's programs)."""

    cpu_s: float = Field(10.0, gt=0, le=3600, description="CPU seconds a sandboxed Python program may use.")
    wall_s: float = Field(30.0, gt=0, le=3600, description="Wall-clock seconds a Python program may run.")
    memory_mb: int = Field(1024, ge=256, le=65536, description="Address space a sandboxed Python program may use, MB.")
    output_chars: int = Field(
        4000, ge=100, le=1_000_000, description="Most characters of a Python program's printed output kept."
    )


class Paths(Section):
    """Files the environment reads or writes."""

    cache_dir: Path = Field(Path.home() / ".cache" / "sophrosyne", description="Where offline indexes are stored.")
    audit_log: Path | None = Field(None, description="JSONL record per tool call, resource read, prompt, completion.")
    policy_file: Path | None = Field(None, description="TOML file with roles, row filters and column rules.")


SECTIONS: dict[str, type[Section]] = {
    s.__name__.lower(): s for s in (Limits, Reading, Inference, Agent, Sandbox, Paths)
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
