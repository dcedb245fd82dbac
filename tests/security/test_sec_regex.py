"""Patterns from an agent run in linear time: SQLite's REGEXP on RE2, list_tables globs, MariaDB's REGEXP.

Python's `re` backtracks and holds the GIL while it does: `(a+)+$` on 'aaaa…b' doubles its time with each
character, past the statement's timeout (SQLite's progress handler does not run inside a function), and
every other call of the server waits meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.engines import build_duckdb, build_sqlite, mariadb_database
from sophrosyne.environment import Environment
from sophrosyne.errors import InvalidArgument, QueryFailed
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import Role, TableRule

# 25 characters: about 9 s for Python's re here, 2^25 steps; RE2 answers at once.
EVIL_VALUE = "a" * 25 + "b"
EVIL = f"SELECT COUNT(*) FROM employees WHERE (full_name || '{EVIL_VALUE}') REGEXP '(a+)+$'"
ROLE = Role("ops", tables={"employees": TableRule(row_filter="department = 'D042'", hidden=["hire_date"])})


@pytest.fixture(scope="module")
def sqlite_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    path = build_sqlite(tmp_path_factory.mktemp("regex") / "hr.sqlite")
    env = Environment.open(path, settings=Settings(timeout_s=1.0))
    yield env
    env.db.close()


def test_catastrophic_regexp_answers_and_blocks_no_other_call(sqlite_env: Environment) -> None:
    restricted = sqlite_env.for_role(ROLE)
    restricted.execute_sql("SELECT 1")  # the role is set up before the clock starts
    done: dict[str, float] = {}

    def attack() -> None:
        started = time.monotonic()
        try:
            restricted.execute_sql(EVIL)
        finally:
            done["attack"] = time.monotonic() - started

    thread = threading.Thread(target=attack, daemon=True)
    thread.start()
    time.sleep(0.05)  # the attack is in its statement
    started = time.monotonic()
    assert sqlite_env.execute_sql("SELECT 1").rows == [[1]]
    other = time.monotonic() - started
    thread.join(30)
    # The timeout is 1 s: the attack answers within it (with a wide margin for a busy machine); another
    # call meanwhile answers as if nothing ran.
    assert not thread.is_alive() and done["attack"] < 3.0, done
    assert other < 1.0, f"another call waited {other:.2f} s behind the pattern"


def test_regexp_still_matches_on_sqlite(sqlite_env: Environment) -> None:
    names = sqlite_env.execute_sql("SELECT full_name FROM employees WHERE full_name REGEXP '^(Ada|Bruno) '").rows
    assert names and all(n[0].startswith(("Ada ", "Bruno ")) for n in names)
    # The same catastrophic shape on a value it matches, and NULL as SQLite's REGEXP gives it.
    assert sqlite_env.execute_sql("SELECT 'aaaa' REGEXP '(a+)+$', NULL REGEXP 'a'").rows == [[1, None]]
    restricted = sqlite_env.for_role(ROLE)
    scoped = restricted.execute_sql("SELECT department FROM employees WHERE full_name REGEXP 'a'").rows
    assert {r[0] for r in scoped} == {"D042"}


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)a", "(?<!b)a"])
def test_patterns_re2_cannot_bound_are_refused_with_the_reason(sqlite_env: Environment, pattern: str) -> None:
    with pytest.raises(QueryFailed) as refused:
        sqlite_env.execute_sql(f"SELECT COUNT(*) FROM employees WHERE full_name REGEXP '{pattern}'")
    message = str(refused.value)
    assert "REGEXP" in message and "RE2" in message and "backreferences or lookaround" in message


def test_catastrophic_regexp_on_duckdb_is_linear_already(tmp_path: Path) -> None:
    """DuckDB's regexp functions are RE2 in the engine: the same attack answers at once (a control)."""
    env = Environment.open(build_duckdb(tmp_path / "hr.duckdb"), settings=Settings(timeout_s=1.0))
    try:
        started = time.monotonic()
        rows = env.execute_sql(f"SELECT regexp_matches('{'a' * 5000}b', '(a+)+$')").rows
        assert rows == [[False]] and time.monotonic() - started < 1.0
    finally:
        env.db.close()


def test_a_long_bracket_pattern_costs_no_cpu(sqlite_env: Environment) -> None:
    """fnmatch.translate is quadratic in the `[` of a glob: 20,000 of them burnt 48 s of CPU."""
    started = time.process_time()
    with pytest.raises(InvalidArgument, match="characters long"):
        sqlite_env.list_tables(pattern="[" * 20_000)
    # Under the length bound, the glob is translated in one pass and matched by RE2.
    for pattern in ("[" * 1000, "[a" * 500, "[!" * 500, "*[" * 500):
        assert sqlite_env.list_tables(pattern=pattern).tables == []
    assert time.process_time() - started < 0.5


def test_globs_and_parts_of_names_still_match(sqlite_env: Environment) -> None:
    def names(pattern: str) -> set[str]:
        return {t.name for t in sqlite_env.list_tables(pattern=pattern).tables}

    assert names("emp*") == {"employees"}
    assert names("EMP*") == {"employees"}
    assert names("?otes") == {"notes"}
    assert names("[de]*") == {"departments", "department_headcount", "employees"}
    assert names("[!de]*") == {"absence_records", "notes", "Order Details"}
    assert names("*[_ ]*") == {"absence_records", "department_headcount", "Order Details"}
    assert names("sence") == {"absence_records"}
    with pytest.raises(InvalidArgument, match="not a glob"):
        sqlite_env.list_tables(pattern="[z-a]*")


@pytest.mark.engine
def test_regexp_runs_on_mariadb() -> None:
    """sqlglot wrote REGEXP as REGEXP_LIKE, which MariaDB does not have: every REGEXP failed."""
    with mariadb_database("soph_secrun_regex") as url:
        env = Environment.open(url)
        try:
            rows = env.execute_sql(
                "SELECT full_name FROM employees WHERE full_name REGEXP '^Ad' AND full_name NOT REGEXP 'x'"
            ).rows
            assert rows and all(r[0].startswith("Ad") for r in rows)
            assert env.execute_sql("SELECT COUNT(*) FROM employees WHERE full_name RLIKE 'Ada'").rows == [[len(rows)]]
            restricted = env.for_role(ROLE)
            scoped = restricted.execute_sql("SELECT department FROM employees WHERE full_name REGEXP '[aeiou]'").rows
            assert scoped and {r[0] for r in scoped} == {"D042"}
        finally:
            env.db.close()
