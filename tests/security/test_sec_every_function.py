"""Every function of every engine's allow-list, called with extreme numbers (widths, lengths, counts and
precisions, as arguments and inside format strings): each call is refused by the guard, or its engine work
ends within `timeout_s` + 2 s and leaves no statement running and no thread behind.

The sweep over every function is slow: `pytest -m slow tests/security/test_sec_every_function.py -n 0`
(Spark's under `-m spark`, started by scripts/spark_ci.sh). The guard's verdicts on the calls that took
26-39 s before, and a SQLite file, run by default."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlglot import exp

from fixtures.engines import MARIADB, PG_DSN, built, engine_params
from sophrosyne.environment import Environment
from sophrosyne.errors import RejectedSQL, SophrosyneError
from sophrosyne.settings import Settings
from sophrosyne.sql import functions as sql_functions
from sophrosyne.sql.guard import check_sql

TIMEOUT_S = 2.0
GRACE_S = 2.0
DIALECTS = {"sqlite": "sqlite", "duckdb": "duckdb", "postgres": "postgres", "mariadb": "mysql", "spark": "spark"}
EXTREMES = ("2147483647", "-1", "1000000000", "-2147483648")
# Format strings whose widths and precisions ask for a gigabyte, in each engine's style ({n}: an extreme).
FORMATS = (
    "'%1000000000s', 'x'",
    "'%.*c', {n}, 'x'",
    "'%!.1000000000c', 'x'",
    "'%1000000000d', 1",
    "'%-1000000000s|', 'x'",
    "'%.1000000000f', 1.5",
    "'%*s', {n}, 'x'",
    "'%1$*2$s', 'x', {n}",
    "'{{:>1000000000}}', 'x'",
    "'%0999999999d', 7",
)
ARRAYS = {"duckdb": "[1, 2]", "postgres": "ARRAY[1, 2]", "spark": "array(1, 2)"}
CALLED = re.compile(r"([A-Za-z_][\w$]*)\s*\(")
# The sweep's statements, as a server lists them: none of them may still run after the sweep.
SWEPT = r"2147483647|1000000000|999999999"


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def function_names(dialect: str) -> list[str]:
    """Each name a query may call on `dialect`: the names sqlglot's typed classes compile to there (all but
    the refused ones) and the engine's list of names sqlglot does not model."""
    found: set[str] = set()
    logging.disable(logging.WARNING)  # sqlglot's "not supported in <dialect>", hundreds of times
    try:
        for cls in set(_subclasses(exp.Func)):
            if cls in (exp.Anonymous, exp.AnonymousAggFunc) or issubclass(cls, tuple(sql_functions.NEVER_TYPES)):
                continue
            required = {
                k: [exp.column("a")] if k == "expressions" else exp.column("a") for k, r in cls.arg_types.items() if r
            }
            try:
                sql = cls(**required).sql(dialect=dialect)
            except Exception:  # a class that cannot compile for this engine never reaches it
                continue
            found.update(m.group(1).lower() for m in CALLED.finditer(sql))
    finally:
        logging.disable(logging.NOTSET)
    return sorted(found | set(sql_functions.ANONYMOUS_ALLOWED.get(dialect, {})))


def calls(name: str, dialect: str, extremes: tuple[str, ...] = EXTREMES) -> list[str]:
    """`name` called with one to three extreme numbers, after a string, after an array, and with format
    strings whose widths are extreme."""
    out = []
    for n in extremes:
        out += [", ".join([n] * arity) for arity in (1, 2, 3)]
        out += [f"'x', {n}", f"'x', {n}, 'y'", f"'x', 1, {n}", f"'x', {n}, {n}", f"{n}, 'x'"]
        if dialect in ARRAYS:
            out += [f"{ARRAYS[dialect]}, {n}", f"{ARRAYS[dialect]}, {n}, {n}"]
    out += [f.format(n=extremes[0]) for f in FORMATS]
    return [f"SELECT {name}({args})" for args in dict.fromkeys(out)]


def sweep(env: Environment, names: list[str], extremes: tuple[str, ...] = EXTREMES) -> tuple[int, list[str]]:
    """Run every call of every name: how many reached the engine, and those past the bound."""
    ran, late = 0, []
    logging.disable(logging.WARNING)
    try:
        for name in names:
            for sql in calls(name, env.dialect, extremes):
                started = time.monotonic()
                try:
                    env.execute_sql(sql)
                    outcome = "answered"
                except RejectedSQL:
                    continue
                except SophrosyneError as exc:
                    outcome = type(exc).__name__
                except Exception as exc:  # sqlglot failing inside the guard (`date_add(1, 2)` on MySQL)
                    outcome = f"{type(exc).__name__} in this process"
                ran += 1
                took = time.monotonic() - started
                if took > TIMEOUT_S + GRACE_S:
                    late.append(f"{took:.1f} s: {sql} ({outcome})")
    finally:
        logging.disable(logging.NOTSET)
    return ran, late


def running_statements(engine: str) -> list[str]:
    """The sweep's statements that a server still runs."""
    if engine == "postgres":
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT query FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query ~ %s",
                (SWEPT,),
            ).fetchall()
        return [str(r[0]) for r in rows]
    if engine == "mariadb":
        import pymysql

        conn = pymysql.connect(**MARIADB)
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT info FROM information_schema.processlist WHERE command = 'Query' "
                    "AND id <> CONNECTION_ID() AND info REGEXP %s",
                    (SWEPT,),
                )
                return [str(r[0]) for r in cur.fetchall()]
        finally:
            conn.close()
    return []


@pytest.fixture(scope="module", params=engine_params())
def bounded_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    engine = str(request.param)
    with built(engine, tmp_path_factory.mktemp(f"{engine}_every"), "soph_every") as target:
        env = Environment.open(target, settings=Settings(timeout_s=TIMEOUT_S))
        env.warm(wait=True)
        yield env
        env.db.close()


def _engine(env: Environment) -> str:
    return "mariadb" if env.dialect == "mysql" else env.dialect


@pytest.mark.slow
def test_every_allowed_function_with_extreme_numbers_is_refused_or_ends_in_time(bounded_env: Environment) -> None:
    engine = _engine(bounded_env)
    threads = threading.active_count()
    names = function_names(DIALECTS[engine])
    ran, late = sweep(bounded_env, names)
    assert len(names) > 300 and ran > 10_000  # the sweep reached the engine, not only the guard
    assert late == []
    assert running_statements(engine) == []
    # No call left a thread behind (the catalog's reader may have started one meanwhile).
    assert threading.active_count() <= threads + 1


@pytest.mark.spark
def test_every_allowed_function_with_extreme_numbers_ends_in_time_on_spark(tmp_path: Path) -> None:
    """One extreme per call (a Spark statement costs a round trip to a JVM); a trivial query answers promptly
    afterwards, so no operation is left busy."""
    from fixtures.spark import hr_database

    with hr_database(tmp_path, "soph_every") as url:
        env = Environment.open(url, settings=Settings(timeout_s=TIMEOUT_S))
        try:
            threads = threading.active_count()
            ran, late = sweep(env, function_names("spark"), EXTREMES[:1])
            assert ran > 1000
            assert late == []
            started = time.monotonic()
            assert env.execute_sql("SELECT 1 + 1").rows == [[2]]
            assert time.monotonic() - started < GRACE_S
            assert threading.active_count() <= threads + 1
        finally:
            env.db.close()


# The calls that held an engine past its deadline before their sizes were bounded, on each engine, and a
# form of each that still runs.
REFUSED = [
    ("sqlite", "SELECT length(printf('%.*c', 2147483647, 'x'))"),
    ("sqlite", "SELECT length(printf('%!.1000000000c', 'x'))"),
    ("sqlite", "SELECT length(format('%.*c', -2147483648, 'x'))"),
    ("sqlite", "SELECT printf('%.*c', employee_id, 'x') FROM employees"),
    ("sqlite", "SELECT printf(full_name, 1) FROM employees"),
    ("postgres", "SELECT length(format('%1000000000s', 'x'))"),
    ("postgres", "SELECT format('%-1000000000s|', 'x')"),
    ("postgres", "SELECT format('%1$*2$s', 'x', 2000000000)"),
    ("postgres", "SELECT format('%*s', LEAST(n, 10), 'x') FROM t"),  # a negative width asks for as much
    ("postgres", "SELECT repeat('x', 1000 * 1000 * 1000)"),
    ("postgres", "SELECT lpad(name, n) FROM t"),
    ("postgres", "SELECT rpad('x', '1000000000')"),
    ("duckdb", "SELECT format('{:>1000000000}', 'x')"),
    ("duckdb", "SELECT format('{:>{}}', 'x', 5)"),
    ("duckdb", "SELECT printf('%.1000000000f', 1.5)"),
    ("duckdb", "SELECT repeat([1], 2000000)"),
    ("duckdb", "SELECT approx_quantiles(x, 2147483647) FROM t"),  # sqlglot writes out that many quantiles
    ("mysql", "SELECT space(1000000000)"),
    ("mysql", "SELECT lpad('x', 2147483647, 'y')"),
    ("spark", "SELECT repeat('x', 2147483647)"),
    ("spark", "SELECT format_string('%1000000000s', 'x')"),
    ("spark", "SELECT randstr(1000000000)"),
    ("spark", "SELECT stack(2147483647, 'x')"),  # 2**31 rows in one call: answered at 5 s with timeout 2 s
]
ACCEPTED = [
    ("sqlite", "SELECT printf('%.*c', 5, 'x')"),
    ("sqlite", "SELECT printf('%5.2f %s %%', 1.5, 'x')"),
    ("sqlite", "SELECT printf('%.*c', MIN(MAX(n, -100), 100), 'x') FROM t"),
    ("postgres", "SELECT format('%1$*2$s', 'x', 20)"),
    ("postgres", "SELECT format('%s has %s', name, n) FROM t"),
    ("postgres", "SELECT lpad(name, 10, '0') FROM t"),
    ("postgres", "SELECT lpad(name, LEAST(n, 100)) FROM t"),
    ("postgres", "SELECT repeat('ab', 1000000)"),
    ("duckdb", "SELECT format('{} {:.2f}', 'x', 5)"),
    ("duckdb", "SELECT approx_quantiles(x, 4) FROM t"),
    ("mysql", "SELECT space(10)"),
    ("spark", "SELECT format_string('%05d', 7)"),
    ("spark", "SELECT stack(2, 'a', 'b')"),
]


@pytest.mark.parametrize(("dialect", "sql"), REFUSED, ids=[f"{d}:{s}" for d, s in REFUSED])
def test_a_size_past_the_bound_or_unread_is_refused(dialect: str, sql: str) -> None:
    with pytest.raises(
        RejectedSQL, match=r"size must be a number of at most|format that is not a string|taken from an"
    ):
        check_sql(sql, dialect)


@pytest.mark.parametrize(("dialect", "sql"), ACCEPTED, ids=[f"{d}:{s}" for d, s in ACCEPTED])
def test_a_size_within_the_bound_is_accepted(dialect: str, sql: str) -> None:
    check_sql(sql, dialect)


def test_the_bound_is_the_setting_exactly() -> None:
    check_sql("SELECT repeat('x', 1000)", "postgres", size_limit=1000)
    with pytest.raises(RejectedSQL, match="at most 1,000 "):
        check_sql("SELECT repeat('x', 1001)", "postgres", size_limit=1000)
    with pytest.raises(RejectedSQL, match="at most 1,000 "):
        check_sql("SELECT format('%1001s', 'x')", "postgres", size_limit=1000)


def test_sizes_add_up_over_a_statement() -> None:
    """A row's calls run in one step too: a thousand widths within the bound are refused together."""
    call = "format('%1000s', 'x')"
    check_sql("SELECT " + ", ".join([call] * 1000), "postgres")
    with pytest.raises(RejectedSQL, match="add up to more than 1,000,000"):
        check_sql("SELECT " + ", ".join([call] * 1001), "postgres")
    with pytest.raises(RejectedSQL, match="add up to more than 1,000,000"):
        check_sql("SELECT format('" + "%1$1000s" * 1001 + "', 'x')", "postgres")
    with pytest.raises(RejectedSQL, match="add up to more than 1,000,000"):
        check_sql("SELECT repeat('x', 600000), lpad('y', 600000)", "duckdb")


def test_the_setting_bounds_sqlite_calls_through_the_secured_path(tmp_path: Path) -> None:
    with built("sqlite", tmp_path, "soph_every") as target:
        env = Environment.open(target, settings=Settings(timeout_s=TIMEOUT_S, sql_max_size_argument=2000))
        try:
            started = time.monotonic()
            with pytest.raises(RejectedSQL, match="at most 2,000"):
                env.execute_sql("SELECT length(printf('%.*c', 2147483647, 'x'))")
            assert time.monotonic() - started < 1.0  # refused before it ran: it took 26-39 s
            assert env.execute_sql("SELECT length(printf('%.*c', 2000, 'x'))").rows == [[2000]]
            with pytest.raises(RejectedSQL, match="at most 2,000"):
                env.execute_sql("SELECT length(printf('%.*c', 2001, 'x'))")
        finally:
            env.db.close()


@pytest.mark.slow
def test_a_duckdb_statement_its_interrupt_cannot_stop_ends_with_its_process(tmp_path: Path) -> None:
    """DuckDB checks its interrupt between vectors: one list of 60 million numbers is built whole, in 3-60 s
    on a busy machine. Its process is killed a second past the deadline, and the next call gets a new one."""
    import os

    with built("duckdb", tmp_path, "soph_every") as target:
        env = Environment.open(target, settings=Settings(timeout_s=1.0))
        try:
            env.execute_sql("SELECT 1")
            before = env.db.pool.acquire()
            pid = before.pid
            env.db.pool.release(before)
            started = time.monotonic()
            with pytest.raises(SophrosyneError, match="ran longer than the 1 s"):
                env.execute_sql("SELECT len(range(60000000))")
            answered = time.monotonic()
            assert answered - started < 1.0 + GRACE_S
            # Killed: it is gone as soon as the kernel has freed what it held (slower on a busy machine).
            while os.path.exists(f"/proc/{pid}") and time.monotonic() - answered < GRACE_S:
                time.sleep(0.05)
            assert not os.path.exists(f"/proc/{pid}"), f"still there {time.monotonic() - answered:.1f} s later"
            assert env.execute_sql("SELECT 1 + 1").rows == [[2]]
        finally:
            env.db.close()
