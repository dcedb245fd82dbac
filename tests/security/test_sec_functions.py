"""Functions run from an allow-list per engine: SQL text, sleeps, locks, files and settings reached through
`ts_rewrite`, qualified or quoted names, `(expr).name` and OPERATOR() are refused on the real engines, while
ordinary functions still run. Restricted roles are refused `version()` on every engine."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent
from sqlglot import exp

from fixtures.engines import PG_DSN, built, engine_params, postgres_schema
from sophrosyne.environment import Environment
from sophrosyne.errors import QueryFailed, RejectedSQL, SQLSyntaxError
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sql import functions as sql_functions
from sophrosyne.sql.policy import Role, TableRule

LOCK_KEY = 424242
RESTRICTED = Role("ops", tables={"employees": TableRule(row_filter="department = 'D042'", hidden=["hire_date"])})


@pytest.fixture(scope="module")
def pg_env() -> Iterator[Environment]:
    with postgres_schema("soph_secfn") as url:
        env = Environment.open(url, settings=Settings(timeout_s=5))
        yield env
        env.close()  # the database, and the role views' background work joined


def _ts_rewrite(inner: str) -> str:
    # ts_rewrite(query, 'SELECT target, substitute ...') runs the SELECT given as text.
    text = f"SELECT 'a'::tsquery, 'b'::tsquery FROM (SELECT {inner}) AS x".replace("'", "''")
    return f"SELECT ts_rewrite('a'::tsquery, '{text}')"


TS_REWRITE = {
    "pg_sleep": _ts_rewrite("pg_sleep(0.01)"),
    "pg_read_file": _ts_rewrite("pg_read_file('postgresql.conf', 0, 10)"),
    "pg_ls_dir": _ts_rewrite("pg_ls_dir('.')"),
    "lo_import": _ts_rewrite("lo_import('/etc/hostname')"),
    "current_setting": _ts_rewrite("current_setting('data_directory')"),
    "pg_advisory_lock": _ts_rewrite(f"pg_advisory_lock({LOCK_KEY})"),
}


def _advisory_locks() -> int:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s", (LOCK_KEY,)
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.engine
@pytest.mark.parametrize("payload", list(TS_REWRITE), ids=list(TS_REWRITE))
def test_ts_rewrite_cannot_run_sql_text_on_postgres(pg_env: Environment, payload: str) -> None:
    with pytest.raises(RejectedSQL, match="ts_rewrite"):
        pg_env.execute_sql(TS_REWRITE[payload])
    # The lock would outlive the call on the pooled connection: another session sees none.
    assert _advisory_locks() == 0


PG_FORMS = {
    "schema_qualified": "SELECT pg_catalog.pg_sleep(0.01)",
    "quoted_name": 'SELECT "pg_sleep"(0.01)',
    "attribute_notation": "SELECT ('data_directory'::text).current_setting",
    "attribute_notation_sleep": "SELECT (0.01::float8).pg_sleep",
    "operator_by_schema": "SELECT 1 OPERATOR(pg_catalog.+) 1",
    "aggregate_filter": "SELECT count(*) FILTER (WHERE pg_sleep(0.01) IS NULL) FROM employees",
    "rows_from": "SELECT * FROM ROWS FROM (pg_sleep(0.01))",
    "user_function_qualified": "SELECT public.lower('A')",
    "unknown_function": "SELECT txid_current_if_assigned()",
}


@pytest.mark.engine
@pytest.mark.parametrize("form", list(PG_FORMS), ids=list(PG_FORMS))
def test_every_way_of_calling_a_function_goes_through_the_allow_list_on_postgres(
    pg_env: Environment, form: str
) -> None:
    for view in (pg_env, pg_env.for_role(RESTRICTED)):
        with pytest.raises(RejectedSQL) as caught:
            view.execute_sql(PG_FORMS[form])
        assert caught.value.hint


@pytest.mark.engine
def test_an_unknown_function_is_named_as_not_on_the_list(pg_env: Environment) -> None:
    with pytest.raises(RejectedSQL, match="not on this engine's list of allowed functions") as caught:
        pg_env.execute_sql("SELECT inet_server_port()")
    assert "sql/functions.py" in (caught.value.hint or "")


@pytest.mark.engine
def test_ordinary_functions_still_run_on_postgres(pg_env: Environment) -> None:
    sql = (
        "SELECT lower(full_name), length(full_name), age(DATE '2020-01-01', DATE '2019-01-01') AS a, "
        "to_json(employee_id) AS j, jsonb_build_object('id', employee_id) AS o, round(employee_id / 3.0, 2) AS r, "
        "EXTRACT(YEAR FROM hire_date) AS y, coalesce(manager_id, 0) AS m "
        "FROM employees ORDER BY employee_id LIMIT 2"
    )
    result = pg_env.execute_sql(sql)
    assert result.row_count == 2
    assert pg_env.for_role(RESTRICTED).execute_sql("SELECT lower(full_name), age(now()) FROM employees").row_count


@pytest.fixture(scope="module", params=engine_params())
def any_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    engine = str(request.param)
    with built(engine, tmp_path_factory.mktemp(f"secfn_{engine}"), "soph_secfn") as target:
        env = Environment.open(target, settings=Settings(timeout_s=5))
        yield env
        env.close()  # the database, and the role views' background work joined


STALLS = {
    "duckdb": ["SELECT sleep_ms(1)", "SELECT pg_sleep(0.001)"],
    "mariadb": ["SELECT MASTER_GTID_WAIT('0-1-1', 0.01)"],
}


def test_sleeps_and_waits_are_refused_on_duckdb_and_mariadb(any_env: Environment) -> None:
    engine = "mariadb" if any_env.dialect == "mysql" else any_env.dialect
    for sql in STALLS.get(engine, []):
        with pytest.raises(RejectedSQL, match="stalls the server"):
            any_env.execute_sql(sql)
    assert any_env.execute_sql("SELECT abs(-1)").row_count == 1  # control


# Calls sqlglot cannot build or write with these arguments: each engine answers, or the guard refuses it as a
# syntax error; sqlglot's own TypeError (`date_add(1)` on MariaDB) reached the client as an internal error.
ODD_CALLS = ["SELECT date_add(1)", "SELECT date_add(1, 2)", "SELECT date_sub()", "SELECT initcap()", "SELECT AND(*)"]
# One call per engine that sqlglot cannot build or write: (the SQL, the function the error names).
UNBUILT = {
    "mysql": ("SELECT date_add(1)", "date_add"),
    "duckdb": ("SELECT upper(initcap())", "initcap"),
    "postgres": ("SELECT array_insert(1, 2, 3, 4)", "array_insert"),
    "sqlite": ("SELECT array_insert(1, 2, 3, 4)", "array_insert"),
}


def test_calls_with_odd_arguments_run_or_are_syntax_errors_for_every_role(any_env: Environment) -> None:
    for env in (any_env, any_env.for_role(RESTRICTED)):
        for sql in ODD_CALLS:
            with contextlib.suppress(SQLSyntaxError, RejectedSQL, QueryFailed):  # ours, or the engine's words
                env.execute_sql(sql)
        sql, name = UNBUILT[any_env.dialect]
        with pytest.raises(SQLSyntaxError, match=f"the function `{name}` is called with arguments it does not take"):
            env.execute_sql(sql)


def test_version_is_refused_to_a_restricted_role_on_every_engine(any_env: Environment) -> None:
    restricted = any_env.for_role(RESTRICTED)
    # SQLite has no users, and its version function is sqlite_version() (version() is no built-in there).
    queries = (
        ["SELECT sqlite_version()"] if any_env.dialect == "sqlite" else ["SELECT version()", "SELECT current_user"]
    )
    for sql in queries:
        with pytest.raises(RejectedSQL, match="is not allowed for role `ops`") as caught:
            restricted.execute_sql(sql)
        # The refusal names what was written, not sqlglot's node (`version()` is its `current_version`).
        written = sql.removeprefix("SELECT ").removesuffix("()")
        assert caught.value.message.startswith(f"function `{written}` is not allowed"), caught.value.message
    if any_env.dialect != "sqlite":
        assert any_env.execute_sql("SELECT version()").row_count == 1  # unrestricted: it answers


# Server facts (version, host, paths, settings, the session's user) by every road each engine offers: functions,
# variables, bare words, settings tables and table functions (issue 33, finding 5: MariaDB's `@@hostname`
# answered a role refused `VERSION()`). The first of each list answers an unrestricted role.
FACTS = {
    "sqlite": [
        "SELECT sqlite_version()",
        "SELECT @@version",
        "SELECT file FROM pragma_database_list",
        "SELECT * FROM pragma_compile_options",
    ],
    "duckdb": [
        "SELECT version()",
        "SELECT user",
        "SELECT current_role",
        "SELECT current_catalog",
        "SELECT current_setting('memory_limit')",
        "SELECT * FROM duckdb_settings()",
        "SELECT value FROM duckdb_settings() WHERE name = 'temp_directory'",
        "SELECT getenv('HOME')",
        "SELECT * FROM pragma_version()",
        "SELECT path FROM duckdb_databases()",
        "SHOW ALL",  # sqlglot's parser once ran off its end (an internal error)
    ],
    "postgres": [
        "SELECT version()",
        "SELECT user",
        "SELECT current_role",
        "SELECT current_setting('data_directory')",
        "SELECT setting FROM pg_settings WHERE name = 'data_directory'",
        "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'port'",
        "SELECT inet_server_addr()",
        "SHOW data_directory",
        "TABLE pg_file_settings",
        "SELECT * FROM pg_config",
    ],
    "mysql": [
        "SELECT @@hostname",
        "SELECT @@version",
        "SELECT @@datadir",
        "SELECT @@general_log_file",
        "SELECT @@global.version",
        "SELECT @@GLOBAL.datadir",
        "SELECT @@session.sql_mode",
        "SELECT @@`hostname`",
        "SELECT @ @hostname",
        "SELECT 1 FROM employees WHERE @@version LIKE '1%'",
        "SELECT VERSION()",
        "SELECT current_role",
        "SELECT uuid()",
        "SELECT variable_value FROM information_schema.global_variables WHERE variable_name = 'datadir'",
        "SHOW VARIABLES LIKE 'datadir'",
        "WITH x AS (SELECT @@port AS p) SELECT p FROM x",
    ],
}


def test_server_facts_are_refused_to_a_restricted_role_on_every_engine_over_mcp(any_env: Environment) -> None:
    """Through a real MCP client session, as the attack ran: each road is refused to the restricted role the
    way version() is (or reads as a missing table, for a settings table), and no fact is in any answer."""
    queries = FACTS[any_env.dialect]
    assert any_env.execute_sql(queries[0]).row_count == 1  # the first road is open to an unrestricted role
    facts = [fact for fact in _facts(any_env) if len(fact) > 3]
    # The role's view of the same database, without directives: their indexes would build after the handshake.
    view = Environment(any_env.db, settings=any_env.settings.replaced(directives="none"), role=RESTRICTED)

    async def ask() -> list[CallToolResult]:
        async with Client(build_server(view)) as client:
            return [await client.call_tool("execute_sql", {"sql": sql}) for sql in queries]

    results = anyio.run(ask)
    # The view's background work (its catalog) ends before the module's database closes: a pooled connection
    # left checked out would be collected, open, in some later test.
    for thread in view._threads:
        thread.join(10)
    for sql, result in zip(queries, results, strict=True):
        text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
        assert result.is_error, f"{sql} answered the restricted role: {text}"
        assert "is not allowed" in text or "no table" in text, (sql, text)
        assert not [fact for fact in facts if fact in text], (sql, text)


def _facts(env: Environment) -> list[str]:
    """What the server would tell: its version, host, user and files, read as an unrestricted role."""
    queries = {
        "sqlite": ["SELECT sqlite_version()", "SELECT file FROM pragma_database_list"],
        "duckdb": ["SELECT version()", "SELECT path FROM duckdb_databases() WHERE path IS NOT NULL"],
        "postgres": [
            "SELECT version()",
            "SELECT setting FROM pg_settings WHERE name IN ('data_directory', 'config_file')",
        ],
        "mysql": ["SELECT @@version, @@hostname, @@datadir, @@general_log_file, current_user()", "SELECT uuid()"],
    }[env.dialect]
    found = []
    for sql in queries:
        try:
            rows = env.execute_sql(sql).rows
        except RejectedSQL:
            continue  # refused to every role: nothing to find
        found += [str(value) for row in rows for value in row if value is not None]
    if env.dialect == "mysql":
        found.append(found[-1].rsplit("-", 1)[1])  # a UUID's last part: the server's MAC address
    return found


@pytest.mark.parametrize("any_env", ["duckdb"], indirect=True)
def test_duckdb_using_sample_samples_only_the_rows_the_role_reads(any_env: Environment) -> None:
    """DuckDB's `USING SAMPLE` samples the rows of the whole FROM clause, which for a restricted role are its
    filtered view: a 100% sample is exactly the role's rows. TABLESAMPLE on a table stays refused."""
    restricted = any_env.for_role(RESTRICTED)
    everyone = sorted(map(tuple, any_env.execute_sql("SELECT employee_id, department FROM employees").rows))
    allowed = sorted(map(tuple, restricted.execute_sql("SELECT employee_id, department FROM employees").rows))
    assert 0 < len(allowed) < len(everyone)
    sampled = restricted.execute_sql(
        "SELECT employee_id, department FROM employees USING SAMPLE 100 PERCENT (bernoulli)"
    )
    assert sorted(map(tuple, sampled.rows)) == allowed
    some = restricted.execute_sql("SELECT e.employee_id, e.department FROM employees AS e USING SAMPLE 3 ROWS")
    assert len(some.rows) == 3 and set(map(tuple, some.rows)) <= set(allowed)
    with pytest.raises(RejectedSQL, match="TABLESAMPLE cannot apply to `employees`"):
        restricted.execute_sql("SELECT employee_id FROM employees TABLESAMPLE 50%")


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


CALLED = re.compile(r"([A-Za-z_][\w$]*)\s*\(|^([A-Za-z_]+)")


def test_every_allowed_typed_class_compiles_to_no_listed_dangerous_function() -> None:
    """Each typed class sqlglot has, compiled for each engine: no name it emits matches a deny-list unless
    the class is refused (to every role, or to restricted ones)."""
    found = []
    for cls in sorted(set(_subclasses(exp.Func)), key=lambda c: c.__name__):
        if cls in (exp.Anonymous, exp.AnonymousAggFunc) or issubclass(cls, tuple(sql_functions.NEVER_TYPES)):
            continue
        required = {
            k: [exp.column("a")] if k == "expressions" else exp.column("a") for k, r in cls.arg_types.items() if r
        }
        for dialect in ("sqlite", "duckdb", "postgres", "mysql"):
            try:
                sql = cls(**required).sql(dialect=dialect)
            except Exception:  # a class that cannot compile for this engine never reaches it
                continue
            for match in CALLED.finditer(sql):
                name = (match.group(1) or match.group(2)).lower()
                denied = sql_functions.never(exp.Anonymous(this=name), dialect) is not None
                restricted = issubclass(cls, sql_functions.RESTRICTED_TYPES)
                if denied or (sql_functions._restricted_reason(name) and not restricted):
                    found.append((cls.__name__, dialect, name))
    assert not found


def test_each_listed_name_is_not_on_a_deny_list() -> None:
    for dialect, names in sql_functions.ANONYMOUS_ALLOWED.items():
        for name in names:
            node = exp.Anonymous(this=name)
            assert sql_functions.never(node, dialect) is None, (dialect, name)
            assert not sql_functions.refused_for_restricted(node), (dialect, name)


def test_a_shipped_file_reads_no_more_functions_than_listed(tmp_path: Path) -> None:
    """SQLite control on a real file: a listed function runs, an unlisted built-in is refused by name."""
    with built("sqlite", tmp_path, "soph_secfn") as target:
        env = Environment.open(target)
        try:
            assert env.execute_sql("SELECT julianday('2024-01-02') - julianday('2024-01-01')").rows == [[1.0]]
            with pytest.raises(RejectedSQL, match="not on this engine's list"):
                env.execute_sql("SELECT sqlite_compileoption_get(0)")
        finally:
            env.db.close()
