"""The sections of the settings model, one class each: what one call may cost, what is read of a database,
directives, the agent, the sandbox, and the files read or written."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

DirectivesMode = Literal["none", "directives", "oracle"]
ToolMode = Literal["auto", "native", "json"]


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


class Exports(Section):
    """Whole results written to files (`export_sql`): the bounds of one export, and how long exports are kept."""

    allow_exports: bool = Field(
        False,
        description="Serve export_sql over MCP (it writes files on the server); the Python API always has it.",
    )
    export_max_rows: int = Field(
        1_000_000, ge=1, le=10**10, description="Most rows one export writes; past it the file ends, marked cut."
    )
    export_max_bytes: int = Field(
        1_000_000_000,
        ge=1_000_000,
        le=10**13,
        description="Largest file one export may write, bytes; past it the export stops and its file is removed.",
    )
    export_timeout_s: float = Field(
        300.0, gt=0, le=86_400, description="Longest one export may run (its statement and its writing), seconds."
    )
    export_keep_s: float = Field(
        86_400.0, gt=0, le=10**8, description="Seconds an export is kept after it is written; then it is removed."
    )
    export_count: int = Field(
        50, ge=1, le=100_000, description="Most exports one caller keeps; a new one removes that caller's oldest."
    )
    export_total_bytes: int = Field(
        10_000_000_000,
        ge=1_000_000,
        le=10**15,
        description="Most bytes all callers' exports may hold together; the oldest are removed first.",
    )
    export_page_bytes: int = Field(
        65_536, ge=1024, le=16_000_000, description="Bytes of one page of an export read through resources/read."
    )
    export_dir: Path | None = Field(
        None, description="Folder of the exports (one private folder per caller inside); unset: CACHE_DIR/exports."
    )
