"""`sophrosyne serve hive://127.0.0.1:10000/default` against a real Spark Thrift server (marker `spark`), through
the SDK's MCP client: every tool answers, writes, file tables and Java calls are refused, a statement past its
timeout is cancelled; a role's row filters and hidden columns hold on Spark."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.adversarial import CASES, run_corpus
from fixtures.engines import ROWS
from fixtures.policies import POLICY, ROLE, comparable, in_scope
from fixtures.serving import Session, connected, stdio_params, text_of
from fixtures.spark import hr_database, load_demo
from sophrosyne.environment import Environment
from sophrosyne.sql.policy import Role, TableRule

pytestmark = pytest.mark.spark

QUIET = {"SOPHROSYNE_DIRECTIVES": "none", "SOPHROSYNE_TIMEOUT_S": "4"}
ENDLESS = "SELECT count(*) FROM range(1000000000000)"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    url = load_demo(tmp_path_factory.mktemp("spark_demo"))
    assert url == "hive://127.0.0.1:10000/default"
    with connected(stdio_params(url, env=QUIET)) as client:
        wait_for_the_catalog(client)
        yield client


def wait_for_the_catalog(client: Session) -> None:
    """A server just started reads its catalog in the background, slower than one 4 s call on a cold Spark:
    a call meanwhile says so and asks to try again, as a client then does."""
    deadline = time.monotonic() + 120
    while "still being read" in text_of(client.call("list_tables", {})) and time.monotonic() < deadline:
        time.sleep(1)


def answer(session: Session, tool: str, arguments: dict[str, Any]) -> str:
    result = session.call(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


def test_every_tool_answers(session: Session) -> None:
    assert "employees" in answer(session, "list_tables", {}) and "training_courses" in answer(
        session, "list_tables", {}
    )
    described = answer(session, "describe_table", {"table": "employees"})
    assert "hire_date" in described and "600" in described
    values = answer(session, "get_distinct_values", {"table": "employees", "column": "status", "search": "activ"})
    assert "active" in values
    rows = answer(
        session, "execute_sql", {"sql": "SELECT status, COUNT(*) AS n FROM employees GROUP BY status ORDER BY n DESC"}
    )
    assert "active" in rows
    plan = answer(
        session,
        "explain_sql",
        {"sql": "SELECT e.last_name FROM employees e JOIN departments d ON e.department = d.dept_code"},
    )
    assert "Physical Plan" in plan and "employees" in plan


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("INSERT INTO locations VALUES (99, 'x', 'y', 'z')", "not allowed"),
        ("DROP TABLE employees", "not allowed"),
        ("SELECT * FROM text.`/etc/passwd`", "not allowed"),
        ("SELECT * FROM csv.`/etc/passwd`", "not allowed"),
        ("SELECT reflect('java.lang.System', 'getProperty', 'user.home')", "not allowed"),
        ("SELECT java_method('java.lang.System', 'getenv', 'HOME')", "not allowed"),
        ("SET spark.sql.runSQLOnFiles=true", "not allowed"),
    ],
)
def test_writes_file_tables_and_java_are_refused(session: Session, sql: str, words: str) -> None:
    result = session.call("execute_sql", {"sql": sql})
    assert result.is_error and words in text_of(result)
    assert "root:" not in text_of(result)


def test_a_statement_past_its_timeout_is_cancelled_and_the_next_call_answers(session: Session) -> None:
    result = session.call("execute_sql", {"sql": ENDLESS}, timeout=60)
    # The call's limit and the statement's are the same 4 s here; either stops it.
    assert result.is_error and "longer than the 4 s" in text_of(result)
    assert "\n42\n" in answer(session, "execute_sql", {"sql": "SELECT 42 AS n"})


# A role on Spark ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with hr_database(tmp_path_factory.mktemp("spark_policy"), "soph_policy") as url:
        yield url


@pytest.fixture(scope="module")
def full(hr: str) -> Iterator[Environment]:
    env = Environment.open(hr)
    yield env
    env.db.close()


def forbidden_values() -> set[str]:
    """Values the ops role may not see: those of rows out of its scope and of its hidden columns (the
    canaries), less any value it does see elsewhere."""
    hidden = {("departments", 2), ("employees", 3), ("absence_records", 3)}
    denied, seen = set(), set()
    for table in ("departments", "employees", "absence_records", "notes", "Order Details"):
        for row in ROWS[table]:
            named = dict(zip(_names(table), row, strict=True))
            visible = table not in {"notes", "Order Details"} and in_scope(table, named)
            for i, value in enumerate(row):
                text = comparable(value)
                if text is None or len(text) < 4:
                    continue
                (seen if visible and (table, i) not in hidden else denied).add(text)
    return denied - seen


def _names(table: str) -> list[str]:
    from fixtures.policies import COLUMNS

    return COLUMNS[table]


PROBES = [
    "SELECT * FROM employees",
    "SELECT * FROM departments",
    "SELECT * FROM absence_records",
    "SELECT e.full_name, d.dept_name, COUNT(a.record_id) AS n FROM employees e JOIN departments d "
    "ON e.department = d.dept_code LEFT JOIN absence_records a ON a.employee_id = e.employee_id "
    "GROUP BY e.full_name, d.dept_name",
    "SELECT * FROM department_headcount",
    "SELECT full_name FROM employees WHERE department <> 'D042' OR 1 = 1",
    "SELECT dept_name FROM departments WHERE budget > 0",
]


def test_row_filters_and_hidden_columns_hold_on_spark(full: Environment, tmp_path: Path) -> None:
    canaries = forbidden_values()
    assert len(canaries) > 20  # names, departments, reasons and budgets the role may not see
    ops = full.for_role(ROLE)
    shown: list[str] = []
    for sql in PROBES:
        try:
            shown.append(json.dumps(ops.execute_sql(sql).model_dump(), default=str).casefold())
        except Exception as exc:  # a refusal is safe; its words must not leak either
            shown.append(str(exc).casefold())
    leaked = sorted(c for c in canaries if any(re.search(re.escape(c), text) for text in shown))
    assert leaked == []
    rows = ops.execute_sql("SELECT employee_id, department FROM employees").rows
    assert rows and {r[1] for r in rows} == {"D042"}
    assert "hire_date" not in ops.execute_sql("SELECT * FROM employees").columns
    # The same role over MCP, from a policy file.
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY.replace('"Order Details"', '"order_details"'), encoding="utf-8")
    with connected(
        stdio_params(
            full.db.display_url.replace("spark+impyla", "hive"), "--policy", str(policy), "--role", "ops", env=QUIET
        )
    ) as client:
        wait_for_the_catalog(client)
        text = text_of(client.call("execute_sql", {"sql": "SELECT * FROM employees"})).casefold()
    assert "d042" in text and not [c for c in canaries if c in text]


def test_a_transparent_role_gives_the_same_rows_as_no_role(full: Environment) -> None:
    # Rules that keep every row and column: the rewrite runs (fenced CTEs), the rows must not change.
    transparent = Role(
        "all",
        tables={t: TableRule(row_filter="1 = 1") for t in ("departments", "employees", "absence_records", "notes")},
    )
    role = full.for_role(transparent)
    for sql in [
        *PROBES[:4],
        *PROBES[5:],
        "SELECT reason, SUM(hours) AS h FROM absence_records GROUP BY reason",
        "WITH x AS (SELECT * FROM employees WHERE manager_id IS NOT NULL) SELECT COUNT(*) AS n FROM x",
    ]:
        plain = sorted(map(repr, full.execute_sql(sql, limit=1000).rows))
        secured = role.execute_sql(sql, limit=1000)
        assert sorted(map(repr, secured.rows)) == plain, sql


def test_the_adversarial_corpus_reaches_no_data_on_spark(full: Environment) -> None:
    # The corpus the other engines run (tests/security/test_sec_adversarial.py), with Spark's backquotes and
    # its database as the schema: refused with a reason, or rows that hold no value the role may not see.
    schema = full.db.display_url.rsplit("/", 1)[1].split("?")[0]
    tables = ("departments", "employees", "absence_records", "notes", "order_details")
    counts = {t: full.execute_sql(f"SELECT COUNT(*) AS n FROM {t}").rows for t in tables}
    ops = full.for_role(ROLE)
    outcome = run_corpus(ops, lambda template: template.replace("{q}", "`").replace("{schema}", schema))
    print(f"spark: {outcome.answered} of {len(CASES)} adversarial statements answered, the rest refused")
    assert outcome.leaks == []
    assert outcome.silent == []
    assert outcome.answered >= 30  # the corpus reached Spark: it is not all refused before it runs
    assert {t: full.execute_sql(f"SELECT COUNT(*) AS n FROM {t}").rows for t in tables} == counts
