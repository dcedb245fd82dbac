"""Which SQL functions a query may call: an allow-list per engine, used by the guard and by the policy.

1. Allowed, for every role (the guard): a function sqlglot models as a typed class (exp.Lower, exp.DateAdd,
   ...) is judged by its class, which compiles to a known built-in on each engine; every class that could
   touch files or server state is refused (NEVER_TYPES). A function sqlglot does not model (exp.Anonymous)
   runs only if it is on its engine's list below: a deny-list always misses one (`ts_rewrite` runs SQL
   text on PostgreSQL). The deny-lists (NEVER) remain, to say why a known dangerous function is refused.
2. Never for a restricted role (the policy): functions that read the catalog, the server's identity or a
   table named by a string, which would show a role what its rules hide.
3. In FROM, only the table functions listed here, which turn values into rows: engines hide file readers,
   catalog dumps and remote scans behind table functions.

Apart from the tiers, `leakproof` says which expressions may run on a row a role's filter drops (see
policy/fence.py): those that cannot raise an error or have a side effect, whatever the row holds.
"""

from __future__ import annotations

import re
from fnmatch import translate
from functools import lru_cache

from sqlglot import exp
from sqlglot.dialects.dialect import DialectType
from sqlglot.errors import SqlglotError
from sqlglot.expressions.datatypes import DType

_FILES = "it reads or writes files on the database server"
_REMOTE = "it reaches other databases or the network"
_CODE = "it loads code into the database engine"
_STALL = "it sleeps or takes locks, which stalls the server"
_ADMIN = "it reads or changes server settings, sessions or replication"
_STATE = "it changes state (sequences, variables)"
_DYNAMIC = "it runs SQL given as a string, which bypasses this check"
_CATALOG = "it reads the database's catalog"
_BY_NAME = "it reads a table named by a string"
_BY_NAME_FUNCTION = "it calls a function named by a string, which bypasses this check"
_JAVA = "it calls a Java method of the server's JVM by name, which runs any code there"
_STORAGE = "it tells where the server stores a table's files"
_IDENTITY = "it tells the server's version, user, database or schema"

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
        "*_to_xml*": _DYNAMIC, "ts_stat": _DYNAMIC, "ts_rewrite": _DYNAMIC,
    },
    "mysql": {
        "load_file": _FILES,
        "sleep": _STALL, "benchmark": _STALL, "get_lock": _STALL, "release_lock": _STALL,
        "release_all_locks": _STALL, "is_free_lock": _STALL, "is_used_lock": _STALL,
        "service_*_lock*": _STALL, "master_*wait": _STALL, "source_pos_wait": _STALL, "wait_*": _STALL,
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
        "pg_sleep*": _STALL, "sleep*": _STALL,
        "list_aggr*": _BY_NAME_FUNCTION, "array_aggr*": _BY_NAME_FUNCTION, "aggregate": _BY_NAME_FUNCTION,
    },
}  # fmt: skip
# Spark, Databricks and Hive share one list (the names are theirs, any case, any qualification).
NEVER["spark"] = NEVER["spark2"] = NEVER["databricks"] = NEVER["hive"] = {
    "reflect": _JAVA, "reflect2": _JAVA, "java_method": _JAVA, "try_reflect": _JAVA,
    "read_*": _FILES, "in_file": _FILES, "cloud_files_state": _FILES, "list_secrets": _ADMIN,
    "try_secret": _ADMIN, "secret": _ADMIN, "event_log": _ADMIN,
    "http_request": _REMOTE, "ai_*": _REMOTE, "vector_search": _REMOTE, "remote_query": _REMOTE,
    "identifier": _BY_NAME,
}  # fmt: skip
# Another sqlglot dialect gets every list: refusing too much is better than too little.
_NEVER_ANY = {pattern: why for rules in NEVER.values() for pattern, why in rules.items()}
# Typed classes refused to every role (each other class compiles to a built-in that computes a value: see
# tests/security/test_sec_functions.py, which compiles every class for every engine and checks the names).
NEVER_TYPES: dict[type[exp.Func], str] = {
    exp.ReadCSV: _FILES, exp.ReadParquet: _FILES, exp.ToFile: _FILES, exp.NextValueFor: _STATE,
    exp.Secret: _ADMIN,
}  # fmt: skip
# Typed classes refused to a restricted role: they answer what the catalog or the session holds.
RESTRICTED_TYPES: tuple[type[exp.Func], ...] = (
    exp.CurrentVersion, exp.CurrentSchema, exp.CurrentSchemas, exp.CurrentDatabase, exp.CurrentCatalog,
    exp.CurrentUser, exp.SessionUser, exp.CurrentRole, exp.CurrentUserId, exp.CurrentAccount,
    exp.CurrentAccountName, exp.CurrentAvailableRoles, exp.CurrentSecondaryRoles, exp.CurrentRoleType,
    exp.CurrentClient, exp.CurrentIpAddress, exp.CurrentOrganizationName, exp.CurrentOrganizationUser,
    exp.CurrentRegion, exp.CurrentSession, exp.CurrentStatement, exp.CurrentTransaction, exp.CurrentWarehouse,
)  # fmt: skip

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
    "getvariable": _STATE, "input_file_*": _STORAGE,
}  # fmt: skip

# Tier 1, the allow-list: functions sqlglot does not model (parsed as Anonymous) that may run, per engine,
# by what they do. Each name is a built-in of that engine (checked on the real engines) that computes a value
# from its arguments: no files, no server state, no SQL text, no function or table named by a string.
_DATES = "it computes dates and times"
_MATH = "it computes numbers"
_TEXT = "it computes text"
_JSON = "it builds or reads JSON values"
_LISTS = "it builds or reads arrays and lists"
_AGGREGATES = "it aggregates values"
_HINTS = "it returns its argument (a planner hint)"
_ROWS = "it turns values into rows (a table function)"
_GEOGRAPHY = "it computes geography values (points, shapes, distances)"


def _listed(groups: dict[str, str]) -> dict[str, str]:
    return {name: why for why, names in groups.items() for name in names.split()}


ANONYMOUS_ALLOWED: dict[str, dict[str, str]] = {
    "sqlite": _listed({
        _DATES: "date datetime julianday strftime time unixepoch",
        _TEXT: "printf quote randomblob zeroblob",
        _JSON: "json json_array json_array_length json_insert json_patch json_quote json_replace json_valid",
        _AGGREGATES: "total",
        _HINTS: "likely unlikely",
    }),
    "duckdb": _listed({
        _DATES: "age date_part datepart date_sub now transaction_timestamp weekday yearweek",
        _MATH: "bin bit_count even gcd lcm nextafter isfinite",
        _TEXT: "damerau_levenshtein hamming jaccard printf ilike_escape like_escape octet_length hash "
        "regexp_split_to_array",
        _JSON: "array_to_json json_array_length json_contains json_group_array json_group_object json_insert "
        "json_merge_patch json_pretty json_quote json_replace json_structure json_transform json_valid "
        "json_value row_to_json to_json",
        _LISTS: "array_sort cardinality list_avg list_count list_extract list_reduce list_slice list_sort list_sum "
        "list_unique",
        _AGGREGATES: "entropy histogram product",
        _ROWS: "generate_subscripts json_each json_tree regexp_split_to_table",
    }),
    "postgres": _listed({
        _DATES: "age clock_timestamp isfinite make_date statement_timestamp timeofday transaction_timestamp",
        _MATH: "bit_count gcd lcm",
        _TEXT: "like_escape octet_length quote_ident quote_literal quote_nullable regexp_split_to_array",
        _LISTS: "array_dims array_lower array_ndims array_replace array_upper cardinality",
        _JSON: "array_to_json json_array_length json_build_array json_build_object json_typeof jsonb_agg "
        "jsonb_build_array jsonb_build_object jsonb_extract_path jsonb_extract_path_text jsonb_insert "
        "jsonb_path_exists jsonb_pretty jsonb_set jsonb_strip_nulls jsonb_typeof row_to_json to_json to_jsonb",
        _AGGREGATES: "every",
        _ROWS: "generate_subscripts json_array_elements json_array_elements_text json_each json_each_text "
        "json_object_keys json_to_recordset jsonb_array_elements jsonb_array_elements_text jsonb_each "
        "jsonb_each_text jsonb_object_keys jsonb_path_query jsonb_to_recordset regexp_matches "
        "regexp_split_to_table string_to_table",
    }),
    "mysql": _listed({
        _DATES: "adddate addtime from_days makedate now period_add period_diff sec_to_time subdate subtime "
        "sysdate time_to_sec unix_timestamp weekday yearweek",
        _TEXT: "bin conv export_set field find_in_set make_set mid oct octet_length quote strcmp",
        _JSON: "json_array json_contains json_depth json_insert json_length json_merge_patch json_pretty "
        "json_query json_quote json_replace json_search json_unquote json_valid",
    }),
    # The warehouses cannot be reached from here: their names are from the vendors' function references.
    "bigquery": _listed({
        _GEOGRAPHY: "st_area st_astext st_asgeojson st_boundary st_buffer st_centroid st_closestpoint st_contains "
        "st_convexhull st_covers st_difference st_distance st_dwithin st_geogfromgeojson st_geogfromtext "
        "st_geogfromwkb st_geogpoint st_intersection st_intersects st_length st_makeline st_makepolygon "
        "st_numpoints st_perimeter st_simplify st_union st_union_agg st_within st_x st_y",
    }),
    "snowflake": _listed({
        _DATES: "to_timestamp to_timestamp_ltz to_timestamp_ntz to_timestamp_tz try_to_timestamp",
        _GEOGRAPHY: "st_area st_astext st_aswkt st_centroid st_contains st_distance st_dwithin st_envelope "
        "st_geogfromwkb st_geographyfromwkb st_geographyfromwkt st_geogfromtext st_intersects st_length "
        "st_makepoint st_point st_union_agg st_within st_x st_y to_geography try_to_geography",
    }),
}  # fmt: skip
# A row filter checked before its engine is known may use any engine's (it is checked again when it runs).
_ANONYMOUS_ANY = {name: why for names in ANONYMOUS_ALLOWED.values() for name, why in names.items()}
UNLISTED = "it is not on this engine's list of allowed functions"

# Types a restricted role may cast to, per engine: each compiles to a built-in scalar type there. Any other
# name could be a table's row type on PostgreSQL (`CAST('(,,)' AS salaries)` names its columns, hidden ones
# too), and some of sqlglot's own types compile to a name PostgreSQL does not have (`YEAR`, `UINT`), which a
# table could hold. Containers (arrays, lists, structs, maps) are allowed: their element types are checked too.
_T = DType
_SCALARS = frozenset({
    _T.TINYINT, _T.SMALLINT, _T.INT, _T.BIGINT, _T.DECIMAL, _T.DOUBLE, _T.FLOAT, _T.BOOLEAN, _T.BIT,
    _T.CHAR, _T.NCHAR, _T.VARCHAR, _T.NVARCHAR, _T.TEXT, _T.TINYTEXT, _T.MEDIUMTEXT, _T.LONGTEXT,
    _T.BINARY, _T.VARBINARY, _T.BLOB, _T.DATE, _T.TIME, _T.TIMETZ, _T.TIMESTAMP, _T.TIMESTAMPTZ, _T.DATETIME,
    _T.INTERVAL, _T.JSON, _T.JSONB, _T.UUID, _T.ARRAY,
})  # fmt: skip
CAST_TYPES: dict[str, frozenset[DType]] = {
    "sqlite": _SCALARS,
    "postgres": _SCALARS | {_T.MONEY, _T.INET},
    "mysql": _SCALARS | {
        _T.UTINYINT, _T.USMALLINT, _T.MEDIUMINT, _T.UMEDIUMINT, _T.UINT, _T.UBIGINT, _T.YEAR, _T.TINYBLOB,
        _T.MEDIUMBLOB, _T.LONGBLOB,
    },
    "duckdb": _SCALARS | {
        _T.UTINYINT, _T.USMALLINT, _T.UINT, _T.UBIGINT, _T.INT128, _T.UINT128, _T.LIST, _T.STRUCT, _T.MAP,
    },
    # Neither warehouse has user-defined or row types: these are their own scalar and semi-structured types.
    "bigquery": _SCALARS | {_T.BIGDECIMAL, _T.GEOGRAPHY, _T.STRUCT},
    "snowflake": _SCALARS | {
        _T.TIMESTAMPNTZ, _T.TIMESTAMPLTZ, _T.VARIANT, _T.OBJECT, _T.GEOGRAPHY, _T.GEOMETRY, _T.STRUCT,
    },
}  # fmt: skip


def cast_allowed(datatype: exp.DataType, dialect: str) -> bool:
    """Whether a restricted role may name this type (in a cast, a column definition, ...) on `dialect`."""
    return datatype.this in CAST_TYPES.get(dialect, _SCALARS)


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
# Snowflake's GENERATOR makes rows from nothing and SPLIT_TO_TABLE from a string; Spark's STACK and INLINE from
# values and arrays of structs.
TABLE_FUNCTION_TYPES = (
    exp.GenerateSeries, exp.ExplodingGenerateSeries, exp.Unnest, exp.Explode, exp.JSONTable, exp.Generator,
    exp.SplitToTable, exp.Stack, exp.Inline,
)  # fmt: skip
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


_CALLED = re.compile(r"([A-Za-z_][\w$]*)\s*\(")


def written_name(node: exp.Func, dialect: DialectType) -> str:
    """The name, lower-cased, a function is called by in `dialect`: what its reader wrote, not the name of
    sqlglot's node (`version()` is sqlglot's `current_version`). The node's first name when the dialect
    writes it without a call (`CURRENT_USER`, `d + INTERVAL ...`) or cannot write it."""
    if isinstance(node, exp.Anonymous | exp.AnonymousAggFunc):
        return node.name.lower()
    try:
        match = _CALLED.match(node.sql(dialect=dialect))
    except (TypeError, ValueError, AttributeError, KeyError, SqlglotError):  # arguments it cannot write
        match = None
    return match.group(1).lower() if match else names(node)[0]


def never(node: exp.Func, dialect: str) -> tuple[str, str] | None:
    """The name that no role may call on `dialect` and why (a deny-list or a refused class), or None."""
    called = names(node)
    for name in called:
        reason = _never_reason(dialect, name)
        if reason:
            return name, reason
    return next(((called[0], why) for kind, why in NEVER_TYPES.items() if isinstance(node, kind)), None)


def refusal(node: exp.Func, dialect: str | None) -> tuple[str, str] | None:
    """Why no role may call this function on `dialect` (None: any engine), as (name, reason), or None.

    A known dangerous function gets its own reason; any other function sqlglot does not model runs only if
    its engine lists it (a quoted name keeps its case: PostgreSQL reads `"Lower"` as another function)."""
    refused = never(node, dialect or "")
    if refused:
        return refused
    if not isinstance(node, exp.Anonymous | exp.AnonymousAggFunc):
        return None
    identifier = node.this
    name = node.name if isinstance(identifier, exp.Identifier) and identifier.quoted else node.name.lower()
    allowed = ANONYMOUS_ALLOWED.get(dialect, {}) if dialect else _ANONYMOUS_ANY
    if name in allowed or name in TABLE_FUNCTIONS:
        return None
    return node.name, UNLISTED


def refused_for_restricted(node: exp.Func) -> bool:
    """Whether a restricted role may not call this function (tier 2), whatever the dialect."""
    return isinstance(node, RESTRICTED_TYPES) or any(_restricted_reason(name) for name in names(node))


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
