"""Which SQL functions a query may call: one rule set in three tiers, used by the guard and by the policy.

1. Never, for any role (the guard): functions that touch files, the network or server state, run SQL given
   as text, or stall the server. Listed per engine, as case-insensitive globs on the bare function name.
2. Never for a restricted role (the policy): functions that read the catalog or a table named by a string,
   which would show a role what its rules hide; and any function sqlglot does not know (it may be a
   user-defined function running with the service account's rights) unless listed as allowed below.
3. Allowed: every other function. In FROM, only the table functions listed here, which turn values into
   rows: engines hide file readers, catalog dumps and remote scans behind table functions.

Apart from the tiers, `leakproof` says which expressions may run on a row a role's filter drops (see
policy/fence.py): those that cannot raise an error or have a side effect, whatever the row holds.
"""

from __future__ import annotations

import re
from fnmatch import translate
from functools import lru_cache

from sqlglot import exp

_FILES = "it reads or writes files on the database server"
_REMOTE = "it reaches other databases or the network"
_CODE = "it loads code into the database engine"
_STALL = "it sleeps or takes locks, which stalls the server"
_ADMIN = "it reads or changes server settings, sessions or replication"
_STATE = "it changes state (sequences, variables)"
_DYNAMIC = "it runs SQL given as a string, which bypasses this check"
_CATALOG = "it reads the database's catalog"
_BY_NAME = "it reads a table named by a string"

# Tier 1, per sqlglot dialect.
NEVER: dict[str, dict[str, str]] = {
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
# Another sqlglot dialect gets every list: refusing too much is better than too little.
_NEVER_ANY = {pattern: why for rules in NEVER.values() for pattern, why in rules.items()}
NEVER_TYPES: dict[type[exp.Func], str] = {
    exp.ReadCSV: _FILES, exp.ReadParquet: _FILES, exp.ToFile: _FILES, exp.NextValueFor: _STATE,
    exp.Secret: _ADMIN,
}  # fmt: skip

# Tier 2, on every engine.
RESTRICTED_NEVER: dict[str, str] = {
    "pg_*": _CATALOG, "duckdb_*": _CATALOG, "pragma_*": _CATALOG, "sqlite_*": _CATALOG,
    "has_*privilege": _CATALOG, "to_reg*": _CATALOG, "col_description": _CATALOG, "obj_description": _CATALOG,
    "shobj_description": _CATALOG, "format_type": _CATALOG, "current_schema": _CATALOG,
    "current_schemas": _CATALOG, "version": _CATALOG,
    "table_to_*": _BY_NAME, "schema_to_*": _BY_NAME, "database_to_*": _BY_NAME,
    "query*": _DYNAMIC, "cursor_to_*": _DYNAMIC, "sql_*": _DYNAMIC, "json_serialize_sql": _DYNAMIC,
    "read_*": _FILES, "write*": _FILES, "lo_*": _FILES, "readfile*": _FILES, "edit": _FILES, "glob": _FILES,
    "load_extension*": _CODE, "fts3_tokenizer": _CODE, "dblink*": _REMOTE,
    "current_setting": _ADMIN, "set_config": _ADMIN,
    "nextval": _STATE, "setval": _STATE, "currval": _STATE, "lastval": _STATE, "txid_*": _STATE,
    "getvariable": _STATE,
}  # fmt: skip

# Tier 3: functions sqlglot does not model (parsed as Anonymous) that a restricted role may still call.
ANONYMOUS_ALLOWED = frozenset(
    re.findall(
        r"\w+",
        """printf format julianday strftime unixepoch date_part datepart age make_date make_time make_timestamp
        total quote regexp_matches regexp_split_to_array json_array_length json_each json_tree jsonb_each
        jsonb_array_elements json_array_elements jsonb_each_text json_each_text range list_value epoch dateadd
        every string_split octet_length char_length character_length bit_length ifnull iif instr likely
        unlikely soundex unicode char hex unhex zeroblob randomblob typeof trunc truncate to_number to_char
        justify_days justify_hours date_bin isfinite width_bucket div gcd lcm factorial log10 log2 cbrt
        degrees radians pi sin cos tan asin acos atan atan2 cot sinh cosh tanh strpos btrim initcap
        split_part string_to_array array_to_string array_length cardinality list_aggregate list_sort
        list_distinct array_position regexp_extract regexp_full_match regexp_count str_to_date date_format
        from_unixtime unix_timestamp dayname monthname dayofmonth dayofweek dayofyear weekofyear yearweek
        last_day timestampdiff median quantile quantile_cont quantile_disc percentile_cont percentile_disc
        mode bool_and bool_or bit_and bit_or bit_xor arg_max arg_min max_by min_by first last any_value
        adddate addtime array_dims array_lower array_ndims array_replace array_to_json array_upper bin
        bit_count clock_timestamp conv curdate curtime damerau_levenshtein date_sub datetime difference
        editdist3 entropy epoch_ms even export_set field find_in_set format_string from_days from_hex
        hamming hash histogram ilike_escape jaccard jaro_winkler_similarity json_agg json_array
        json_array_elements_text json_arrayagg json_build_array json_build_object json_contains json_depth
        json_extract_path json_extract_string json_group_array json_group_object json_insert json_length
        json_merge_patch json_object_agg json_object_keys json_patch json_pretty json_query json_quote
        json_replace json_search json_serialize json_structure json_transform json_typeof json_unquote
        json_valid json_value jsonb_agg jsonb_array_elements_text jsonb_build_array jsonb_build_object
        jsonb_extract_path jsonb_extract_path_text jsonb_insert jsonb_object_agg jsonb_object_keys
        jsonb_path_exists jsonb_path_query jsonb_pretty jsonb_set jsonb_typeof like_escape list_avg
        list_concat list_contains list_count list_extract list_filter list_max list_min list_reduce
        list_slice list_sum list_transform list_unique listagg make_set makedate maketime metaphone mid
        nchar nextafter now oct period_add period_diff product quote_ident quote_literal quote_nullable
        regexp_split_to_table row_to_json sec_to_time sha256 similarity statement_timestamp strcmp strptime
        subdate subtime sysdate time time_bucket time_to_sec timeofday timestampadd to_date to_json to_jsonb
        to_timestamp today transaction_timestamp weekday word_similarity json jsonb json_remove json_set
        json_type json_error_position json_strip_nulls jsonb_strip_nulls""",
    )
)

# Table functions, allowed in FROM for every role.
TABLE_FUNCTIONS = frozenset(
    {
        "generate_series", "range", "unnest", "generate_subscripts",
        "regexp_split_to_table", "regexp_matches", "string_to_table",
        "json_each", "json_tree", "json_each_text", "jsonb_each", "jsonb_each_text",
        "json_array_elements", "json_array_elements_text", "jsonb_array_elements", "jsonb_array_elements_text",
        "json_object_keys", "jsonb_object_keys", "jsonb_path_query", "json_to_recordset", "jsonb_to_recordset",
    }
)  # fmt: skip
TABLE_FUNCTION_TYPES = (exp.GenerateSeries, exp.ExplodingGenerateSeries, exp.Unnest, exp.Explode, exp.JSONTable)
# Table functions an unrestricted role may call but a restricted one never: their first argument is a row
# type, and a table's row type (`NULL::employees`) would list that table's columns, hidden ones included.
TABLE_FUNCTIONS_UNRESTRICTED = frozenset({"json_populate_recordset", "jsonb_populate_recordset"})


# Leakproof: expressions that cannot raise an error or have a side effect whatever the values of a row, so
# that the engine may run them on rows the role's filter drops without telling anything about those rows.
# Comparisons, logic, NULL tests, IN lists, CASE and COALESCE, and text functions with literal arguments
# that cannot fail. Not leakproof: arithmetic (overflow, division by zero), casts (a value that does not
# convert), and every other function, even over constants: `id = 7 AND EXP(1000) > 0` or
# `CASE WHEN id = 7 THEN CAST('x' AS INT) END` fails only if a row with id 7 is evaluated, hidden or not.
LEAKPROOF_TYPES: tuple[type[exp.Expr], ...] = (
    exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Star, exp.Paren, exp.Alias, exp.Tuple,
    exp.Array, exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
    exp.NullSafeNEQ, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Escape, exp.Exists, exp.Any,
    exp.All, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Lower, exp.Upper, exp.Length, exp.Trim,
    exp.Substring, exp.Left, exp.Right, exp.Concat, exp.DPipe, exp.Count, exp.Max, exp.Min, exp.Distinct,
    exp.Ordered, exp.Neg,
)  # fmt: skip


def leakproof(node: exp.Expr) -> bool:
    """Whether `node` itself cannot leak the row it runs on (its arguments are checked on their own)."""
    if not isinstance(node, LEAKPROOF_TYPES):
        return False
    if isinstance(node, exp.Like | exp.ILike):
        # PostgreSQL fails on a pattern that ends with its escape character (a backslash by default).
        return _string(node.expression) and not node.expression.name.endswith("\\")
    if isinstance(node, exp.Escape):
        like, escape = node.this, node.expression
        if not (_string(escape) and len(escape.name) == 1 and isinstance(like, exp.Like | exp.ILike)):
            return False
        return _string(like.expression) and not like.expression.name.endswith(escape.name)
    if isinstance(node, exp.Substring):
        # Any start will do (from the end when negative); PostgreSQL fails on a negative length.
        start = node.args.get("start")
        start = start.this if isinstance(start, exp.Neg) else start
        return _number(start) and _number(node.args.get("length"), optional=True)
    if isinstance(node, exp.Left | exp.Right):
        return _number(node.expression)
    if isinstance(node, exp.Neg):
        return _number(node.this)
    return True


def _string(node: exp.Expr | None) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _number(node: exp.Expr | None, *, optional: bool = False) -> bool:
    """A numeric literal that is not negative (or, when `optional`, none at all)."""
    if node is None:
        return optional
    return isinstance(node, exp.Literal) and not node.is_string and node.name.replace(".", "", 1).isdigit()


def names(node: exp.Func) -> list[str]:
    """The lower-cased names a function is known by (one for a function sqlglot does not model)."""
    if isinstance(node, exp.Anonymous | exp.AnonymousAggFunc):
        return [node.name.lower()]
    return [name.lower() for name in node.sql_names()]


def never(node: exp.Func, dialect: str) -> tuple[str, str] | None:
    """The name that no role may call on `dialect` and why (tier 1), or None."""
    called = names(node)
    for name in called:
        reason = _never_reason(dialect, name)
        if reason:
            return name, reason
    return next(((called[0], why) for kind, why in NEVER_TYPES.items() if isinstance(node, kind)), None)


def refused_for_restricted(node: exp.Func) -> bool:
    """Whether a restricted role may not call this function (tier 2), whatever the dialect."""
    called = names(node)
    if any(_restricted_reason(name) for name in called):
        return True
    anonymous = isinstance(node, exp.Anonymous | exp.AnonymousAggFunc)
    return anonymous and called[0] not in ANONYMOUS_ALLOWED and called[0] not in TABLE_FUNCTIONS


def table_function_allowed(node: exp.Func, *, restricted: bool) -> bool:
    """Whether this function may stand in FROM (tier 3); a restricted role has the shorter list."""
    if isinstance(node, TABLE_FUNCTION_TYPES):
        return True
    allowed = TABLE_FUNCTIONS if restricted else TABLE_FUNCTIONS | TABLE_FUNCTIONS_UNRESTRICTED
    return not allowed.isdisjoint(names(node))


def table_function_names(*, restricted: bool) -> list[str]:
    allowed = TABLE_FUNCTIONS if restricted else TABLE_FUNCTIONS | TABLE_FUNCTIONS_UNRESTRICTED
    return sorted(allowed)


@lru_cache(maxsize=4096)
def _never_reason(dialect: str, name: str) -> str | None:
    return _reason(NEVER.get(dialect, _NEVER_ANY), name)


@lru_cache(maxsize=4096)
def _restricted_reason(name: str) -> str | None:
    return _reason(RESTRICTED_NEVER, name)


def _reason(rules: dict[str, str], name: str) -> str | None:
    return next((why for pattern, why in rules.items() if _glob(pattern).match(name)), None)


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern))
