"""Read-only SQL validation on the sqlglot AST: one query, read-only node types only, no dangerous functions."""

from __future__ import annotations

import contextvars
import logging
import re
import unicodedata
from fnmatch import translate
from functools import lru_cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokenizer_core import Token

from sophrosyne.errors import ConfigError, RejectedSQL, SQLSyntaxError

__all__ = ["check_sql"]

_READ_ONLY = "only read-only queries (SELECT, WITH ... SELECT, set operations) run here."
_HINT_QUERY = "Send exactly one SELECT (optionally with WITH, UNION, INTERSECT or EXCEPT) that only reads."
_HINT_FUNCTION = (
    "Use ordinary SQL functions on this database's tables; "
    "file, network, admin and side-effecting functions are blocked."
)
_HINT_TABLE = "Query the database's own tables; list_tables and describe_table show what exists."

# Allow-list, so that any syntax sqlglot learns later is refused until someone looks at it.
# Func, Binary, Unary, Predicate and Condition cover functions, operators, columns and literals;
# functions are then checked by name.
_ALLOWED = (
    exp.Func, exp.Binary, exp.Unary, exp.Predicate, exp.Condition,
    exp.Select, exp.SetOperation, exp.Subquery, exp.With, exp.CTE, exp.RecursiveWithSearch,
    exp.From, exp.Join, exp.Lateral, exp.Table, exp.TableAlias, exp.TableSample, exp.Values, exp.Tuple,
    exp.Where, exp.Group, exp.GroupingSets, exp.Rollup, exp.Cube, exp.Having, exp.Qualify,
    exp.Order, exp.Ordered, exp.Limit, exp.LimitOptions, exp.Offset, exp.Fetch, exp.Distinct,
    exp.WindowSpec, exp.Filter, exp.WithinGroup, exp.IgnoreNulls, exp.RespectNulls, exp.HavingMax,
    exp.Alias, exp.Aliases, exp.Identifier, exp.Star, exp.Var, exp.DataType, exp.DataTypeParam,
    exp.ColumnDef, exp.Interval, exp.Lambda, exp.Slice, exp.Comprehension, exp.Introducer, exp.National,
    exp.AtTimeZone, exp.FromTimeZone, exp.OnCondition, exp.FormatJson,
    exp.JSONPath, exp.JSONPathPart, exp.JSONColumnDef, exp.JSONSchema, exp.JSONKeyValue, exp.JSONValue,
    exp.Pivot, exp.PivotAlias, exp.PivotAny, exp.UnpivotColumns, exp.MatchRecognize,
    exp.MatchRecognizeMeasure, exp.IndexTableHint, exp.WithTableHint, exp.PositionalColumn,
)  # fmt: skip

# Names for the refusal message; anything else refused is named by its sqlglot type.
_LABELS: dict[type[exp.Expr], str] = {
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE",
    exp.Create: "CREATE", exp.Drop: "DROP", exp.Alter: "ALTER", exp.TruncateTable: "TRUNCATE",
    exp.Copy: "COPY", exp.LoadData: "LOAD DATA", exp.Export: "EXPORT", exp.Pragma: "PRAGMA",
    exp.Attach: "ATTACH", exp.Detach: "DETACH", exp.Install: "INSTALL", exp.Transaction: "BEGIN",
    exp.Commit: "COMMIT", exp.Rollback: "ROLLBACK", exp.Set: "SET", exp.Use: "USE", exp.Grant: "GRANT",
    exp.Revoke: "REVOKE", exp.Analyze: "ANALYZE", exp.Describe: "DESCRIBE", exp.Show: "SHOW",
    exp.Summarize: "SUMMARIZE", exp.Kill: "KILL", exp.Comment: "COMMENT ON", exp.Into: "SELECT ... INTO",
    exp.Values: "VALUES", exp.Pivot: "PIVOT", exp.Refresh: "REFRESH", exp.Cache: "CACHE",
    exp.Declare: "DECLARE", exp.Execute: "EXECUTE", exp.Hint: "optimizer hint /*+ ... */",
}  # fmt: skip

_FILES = "it reads or writes files on the database server"
_REMOTE = "it reaches other databases or the network"
_CODE = "it loads code into the database engine"
_STALL = "it sleeps or takes locks, which stalls the server"
_ADMIN = "it reads or changes server settings, sessions or replication"
_STATE = "it changes state (sequences, variables)"
_DYNAMIC = "it runs SQL given as a string, which bypasses this check"

# Deny lists per dialect, as case-insensitive globs on the bare function name (schema dropped).
_DENIED: dict[str, dict[str, str]] = {
    "sqlite": {
        "load_extension": _CODE, "fts3_tokenizer": _CODE, "eval": _DYNAMIC,
        "readfile": _FILES, "writefile": _FILES, "edit": _FILES, "fsdir": _FILES, "lsdir": _FILES,
        "zipfile": _FILES, "sqlar_*": _FILES,
    },
    "postgres": {
        "pg_read_*file": _FILES, "pg_ls_*": _FILES, "pg_stat_file": _FILES, "pg_*file*": _FILES,
        "pg_logdir_ls": _FILES, "lo_*": _FILES,
        "dblink*": _REMOTE,
        "pg_sleep*": _STALL, "pg_advisory*": _STALL, "pg_try_advisory*": _STALL,
        "pg_terminate_backend": _ADMIN, "pg_cancel_backend": _ADMIN, "pg_reload_conf": _ADMIN,
        "pg_rotate_logfile": _ADMIN, "set_config": _ADMIN, "current_setting": _ADMIN,
        "pg_switch_wal": _ADMIN, "pg_create_*": _ADMIN, "pg_drop_replication_slot": _ADMIN,
        "pg_replication_*": _ADMIN, "pg_logical_*": _ADMIN, "pg_promote": _ADMIN, "pg_backup_*": _ADMIN,
        "pg_start_backup": _ADMIN, "pg_stop_backup": _ADMIN, "pg_stat_reset*": _ADMIN,
        "pg_wal_replay_*": _ADMIN, "pg_log_backend_memory_contexts": _ADMIN, "pg_notify": _ADMIN,
        "pg_import_system_collations": _ADMIN, "pg_config": _ADMIN,
        "nextval": _STATE, "setval": _STATE, "txid_current*": _STATE, "pg_current_xact_id*": _STATE,
        "*_to_xml*": _DYNAMIC, "ts_stat": _DYNAMIC,
    },
    "mysql": {
        "load_file": _FILES,
        "sleep": _STALL, "benchmark": _STALL, "get_lock": _STALL, "release_lock": _STALL,
        "release_all_locks": _STALL, "is_free_lock": _STALL, "is_used_lock": _STALL,
        "service_*_lock*": _STALL, "master_pos_wait": _STALL, "source_pos_wait": _STALL, "wait_*": _STALL,
        "sys_*": _CODE, "group_replication_*": _ADMIN, "asynchronous_connection_failover_*": _ADMIN,
        "audit_log_*": _ADMIN, "keyring_*": _ADMIN, "version_tokens_*": _ADMIN, "*firewall*": _ADMIN,
        "nextval": _STATE, "setval": _STATE, "lastval": _STATE, "last_insert_id": _STATE,
    },
    "duckdb": {
        "read_*": _FILES, "*_scan": _FILES, "parquet_*": _FILES, "iceberg_*": _FILES, "delta_*": _FILES,
        "glob": _FILES, "sniff_csv": _FILES, "st_read*": _FILES, "from_csv_auto": _FILES,
        "*_attach": _REMOTE, "*_query": _REMOTE, "*_execute": _REMOTE, "http_*": _REMOTE,
        "install": _CODE, "load": _CODE,
        "getenv": _ADMIN, "current_setting": _ADMIN, "duckdb_secrets": _ADMIN, "which_secret": _ADMIN,
        "query": _DYNAMIC, "query_table": _DYNAMIC, "json_execute_serialized_sql": _DYNAMIC,
        "nextval": _STATE, "setval": _STATE, "set_variable": _STATE,
    },
}  # fmt: skip
_ALIASES = {"mariadb": "mysql", "postgresql": "postgres"}  # SQLAlchemy's names for the same engines
# Another sqlglot dialect gets every list: refusing too much is better than too little.
_DENIED_ANY = {pattern: why for rules in _DENIED.values() for pattern, why in rules.items()}
_DENIED_TYPES: dict[type[exp.Func], str] = {
    exp.ReadCSV: _FILES, exp.ReadParquet: _FILES, exp.ToFile: _FILES, exp.NextValueFor: _STATE,
    exp.Secret: _ADMIN,
}  # fmt: skip

# Table-valued functions that only turn values into rows; every other one in FROM is refused,
# since engines hide file readers, catalog dumps and remote scans behind table functions.
_TABLE_FUNCTIONS = frozenset(
    {
        "generate_series", "range", "unnest", "generate_subscripts",
        "regexp_split_to_table", "regexp_matches", "string_to_table",
        "json_each", "json_tree", "json_each_text", "jsonb_each", "jsonb_each_text",
        "json_array_elements", "json_array_elements_text", "jsonb_array_elements", "jsonb_array_elements_text",
        "json_object_keys", "jsonb_object_keys", "jsonb_path_query",
        "json_to_recordset", "jsonb_to_recordset", "json_populate_recordset", "jsonb_populate_recordset",
    }
)  # fmt: skip
_TABLE_FUNCTION_TYPES = (exp.GenerateSeries, exp.ExplodingGenerateSeries, exp.Unnest, exp.Explode, exp.JSONTable)

# DuckDB turns an unknown table name that looks like a file or URL into a file scan ("replacement scan").
_FILE_SUFFIX = re.compile(r"\.(csv|tsv|txt|parquet|json|jsonl|ndjson|xlsx|arrow|avro|db|sqlite|duckdb|gz|zst)$", re.I)
_PATH_CHARS = re.compile(r"[./\\:*?~]")
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+.*?>")
_TOKEN_ERROR_AT = re.compile(r"from \d+:(\d+)$")

# sqlglot logs a warning whenever it falls back to exp.Command; the guard refuses those anyway,
# so it silences that logger while it parses, without touching other threads or callers.
_parsing = contextvars.ContextVar("sophrosyne_guard_parsing", default=False)


class _QuietWhileGuarding(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _parsing.get()


logging.getLogger("sqlglot").addFilter(_QuietWhileGuarding())


def check_sql(sql: str, dialect: str) -> exp.Expression:
    """Return the parsed statement if `sql` is exactly one read-only query, else raise.

    Raises `RejectedSQL` for anything that is not a single read-only query and `SQLSyntaxError`
    when the text does not parse.
    """
    dialect = _ALIASES.get(dialect.lower(), dialect.lower())
    engine = _dialect(dialect)
    if "\x00" in sql:
        # Engines disagree on where a NUL ends the text (MySQL ends a comment there), so refuse it.
        raise RejectedSQL("The SQL contains a NUL character.", hint="Remove the NUL (\\x00) character.")
    tokens, statements = _parse(sql, engine)
    _check_comments(tokens)
    # sqlglot yields None for an empty statement (`;;`) and Semicolon for a comment after the last `;`.
    present = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if not present:
        raise RejectedSQL("The SQL is empty: there is no statement to run.", hint=_HINT_QUERY)
    if len(present) > 1:
        raise RejectedSQL(
            f"{len(present)} statements were sent: only one statement may run per call.",
            hint="Send one query at a time, without a semicolon between statements.",
        )
    root = present[0]
    if not isinstance(root, (exp.Select, exp.SetOperation, exp.Subquery)):
        first_word = next(token.text for token in tokens if token.text != ";")
        label = _label(root) if type(root) in _LABELS or isinstance(root, exp.Command) else first_word
        raise RejectedSQL(f"`{_shown(label.upper())}` is not allowed: {_READ_ONLY}", hint=_HINT_QUERY)
    rules = dialect if dialect in _DENIED else "*"
    for node in root.walk():
        _check_node(node, rules)
    return root


@lru_cache(maxsize=32)
def _dialect(name: str) -> Dialect:
    try:
        return Dialect.get_or_raise(name)
    except ValueError as error:
        raise ConfigError(f"Unknown SQL dialect `{name}`.", hint="Use sqlite, duckdb, postgres or mysql.") from error


def _parse(sql: str, engine: Dialect) -> tuple[list[Token], list[exp.Expr | None]]:
    token = _parsing.set(True)
    try:
        tokens = engine.tokenize(sql)
        return tokens, engine.parser().parse(tokens, sql)
    except ParseError as error:
        raise _syntax_error(error) from None
    except TokenError as error:
        raise _token_error(sql, error) from None
    except SqlglotError as error:
        raise SQLSyntaxError(f"The SQL could not be parsed: {error}", hint=_HINT_QUERY) from None
    except RecursionError:
        raise RejectedSQL("The query is nested too deeply to be checked.", hint=_HINT_QUERY) from None
    finally:
        _parsing.reset(token)


_INTERNAL_CLASS = re.compile(r"(?:Required keyword: '\w+' missing)? for <class '(?:[\w.]+\.)?(\w+)'>")


def _syntax_error(error: ParseError) -> SQLSyntaxError:
    first = error.errors[0] if error.errors else {}
    line, end_col = first.get("line"), first.get("col")
    near = str(first.get("highlight") or "")
    description = _TOKEN_REPR.sub(lambda m: f"`{m.group(1)}`", str(first.get("description") or error))
    # sqlglot names its own classes ("... missing for <class 'sqlglot...Where'>"): say the clause instead.
    description = _INTERNAL_CLASS.sub(lambda m: f"the {m.group(1).upper()} clause is incomplete", description)
    # sqlglot points at the last character of the offending token; readers expect its first.
    column = end_col - len(near) + 1 if isinstance(end_col, int) and near and "\n" not in near else end_col
    where = f" at line {line}, column {column}" if line is not None else ""
    shown = f" near `{_shown(near)}`" if near else ""
    return SQLSyntaxError(
        f"Syntax error{where}{shown}: {description}.",
        hint="Fix the SQL at that position; send one read-only query written for this database's dialect.",
        line=line,
        column=column,
    )


def _token_error(sql: str, error: TokenError) -> SQLSyntaxError:
    # The inner error names the offset where an unterminated string or comment starts.
    match = _TOKEN_ERROR_AT.search(str(error.__cause__ or ""))
    line = column = None
    if match and int(match.group(1)) <= len(sql):
        before = sql[: int(match.group(1))]
        line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
    where = f" at line {line}, column {column}" if line is not None else ""
    return SQLSyntaxError(
        f"The SQL could not be tokenized{where}: a string, quoted name or comment is not closed.",
        hint="Close every quote and comment.",
        line=line,
        column=column,
    )


def _check_comments(tokens: list[Token]) -> None:
    # MySQL and MariaDB execute `/*! ... */` and `/*M! ... */`; sqlglot keeps them as comments.
    for token in tokens:
        for comment in token.comments:
            if comment.startswith(("!", "M!", "m!")):
                raise RejectedSQL(
                    "Executable comments (`/*! ... */`) are not allowed: MySQL runs their content as SQL.",
                    hint="Remove the comment, or write its SQL as ordinary SQL.",
                )


def _check_node(node: exp.Expr, dialect: str) -> None:
    if isinstance(node, exp.Lock):
        raise RejectedSQL(
            f"The locking clause `FOR {'UPDATE' if node.args.get('update') else 'SHARE'}` is not allowed: {_READ_ONLY}",
            hint="Remove the FOR UPDATE / FOR SHARE clause.",
        )
    if not isinstance(node, _ALLOWED):
        raise RejectedSQL(f"`{_label(node)}` is not allowed: {_READ_ONLY}", hint=_HINT_QUERY)
    if isinstance(node, exp.Func):
        _check_function(node, dialect)
    elif isinstance(node, exp.Table):
        _check_table(node, dialect)
    elif isinstance(node, exp.Lateral) and isinstance(node.this, exp.Func):
        _check_table_function(node.this, dialect)
    if isinstance(node, exp.PropertyEQ) and isinstance(node.this, (exp.Parameter, exp.SessionParameter)):
        raise RejectedSQL(
            f"Assigning a variable (`{_shown(node.sql())}`) is not allowed: queries here only read.",
            hint="Use a CTE or a subquery instead of a session variable.",
        )


def _check_function(node: exp.Func, dialect: str) -> None:
    for name in _function_names(node):
        reason = _denial(dialect, name)
        if reason:
            raise RejectedSQL(f"`{name}()` is not allowed: {reason}.", hint=_HINT_FUNCTION)
    reason = next((why for kind, why in _DENIED_TYPES.items() if isinstance(node, kind)), None)
    if reason:
        raise RejectedSQL(f"`{_function_names(node)[0]}()` is not allowed: {reason}.", hint=_HINT_FUNCTION)


def _function_names(node: exp.Func) -> list[str]:
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return [node.name.lower()]
    return [name.lower() for name in node.sql_names()]


@lru_cache(maxsize=4096)
def _denial(dialect: str, name: str) -> str | None:
    rules = _DENIED.get(dialect, _DENIED_ANY)
    return next((why for pattern, why in rules.items() if _glob(pattern).match(name)), None)


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern))


def _check_table(table: exp.Table, dialect: str) -> None:
    if isinstance(table.this, exp.Func):
        _check_table_function(table.this, dialect)
    elif isinstance(table.this, exp.Identifier):
        parts = [part.name for part in table.parts]
        dotted = ".".join(parts)
        if any(_PATH_CHARS.search(part) for part in parts) or (
            dialect in ("duckdb", "*") and _FILE_SUFFIX.search(dotted)
        ):
            raise RejectedSQL(
                f"`{_shown(dotted)}` is not allowed as a table: it names a file or URL, and reading files is blocked.",
                hint=_HINT_TABLE,
            )
    elif table.this is not None:
        raise RejectedSQL(f"`{_shown(table.sql())}` is not allowed as a table.", hint=_HINT_TABLE)


def _check_table_function(function: exp.Func, dialect: str) -> None:
    _check_function(function, dialect)
    names = _function_names(function)
    if not isinstance(function, _TABLE_FUNCTION_TYPES) and not _TABLE_FUNCTIONS.intersection(names):
        allowed = ", ".join(sorted(_TABLE_FUNCTIONS))
        raise RejectedSQL(
            f"The table function `{names[0]}()` is not allowed in FROM: only {allowed} are.",
            hint=_HINT_TABLE,
        )


def _label(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return next((label for kind, label in _LABELS.items() if isinstance(node, kind)), type(node).__name__)


def _shown(text: str, limit: int = 60) -> str:
    # Invisible characters (zero-width spaces, controls) are shown escaped, so the reader sees the trick.
    visible = "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") and c != "\n" else c for c in text
    )
    return visible if len(visible) <= limit else visible[: limit - 3] + "..."
