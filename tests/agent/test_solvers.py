"""Solver rules beyond the issue's scenarios: grounding before SQL, budgets, retries, the reviewer's revise loop,
FlexSQL without Python and a translation that disagrees; and the tolerant table comparison."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from fixtures.model_script import Call, Say, Script, plans
from fixtures.openai_server import scripted_server
from sophrosyne.agent import solve
from sophrosyne.agent.explorer import compared_literals
from sophrosyne.agent.outcome import Outcome
from sophrosyne.agent.toolbox import EnvironmentTools, Toolbox
from sophrosyne.agent.voting import question_orders, tables_match
from sophrosyne.cli.app import demo_path
from sophrosyne.environment import Environment
from sophrosyne.llm import ModelClient
from sophrosyne.settings import Settings

COUNT = "SELECT COUNT(*) AS n FROM departments WHERE dept_name = 'Field Operations'"
GROUND = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "Field Operations"})


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module")
def toolbox(portal: BlockingPortal) -> Iterator[Toolbox]:
    env = Environment.open(demo_path())
    with portal.wrap_async_context_manager(EnvironmentTools(env)) as opened:
        yield opened
    env.db.close()


def ask(portal: BlockingPortal, toolbox: Toolbox, script: Script, **options: Any) -> Outcome:
    solver = options.pop("solver", "explorer")
    review = options.pop("review", False)
    python = options.pop("python", True)
    with scripted_server(script) as (url, _):
        settings = Settings(model="scripted", base_url=url, llm_backoff_s=0.0, **options)

        async def run() -> Outcome:
            model = ModelClient.from_settings(settings)
            try:
                return await solve(
                    "How many departments are called Field Operations?",
                    tools=toolbox,
                    model=model,
                    solver=solver,
                    review=review,
                    python=python,
                )
            finally:
                await model.aclose()

        return portal.call(run)


def test_a_filter_value_must_be_grounded_before_the_query_runs(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script({"explore": [Call("execute_sql", {"sql": COUNT}), GROUND, Call("final_answer", {"sql": COUNT})]})
    outcome = ask(portal, toolbox, script)
    assert outcome.kind == "answer" and outcome.rows == [[1]]
    refused = script.requests["explore"][1]["messages"][-1]["content"]
    assert refused.startswith("Not run: 'Field Operations' was not grounded")
    assert [s.name for s in outcome.trace.steps if s.kind == "tool"] == [
        "list_tables",
        "get_distinct_values",
        "execute_sql",
    ]


def test_retries_are_bounded(portal: BlockingPortal, toolbox: Toolbox) -> None:
    bad = Call("execute_sql", {"sql": "SELECT nope FROM departments"})
    script = Script({"explore": [bad, bad, bad]})
    outcome = ask(portal, toolbox, script, agent_retries=2)
    assert outcome.kind == "gave_up"
    assert outcome.reason is not None and outcome.reason.startswith("the query kept failing: no column `nope`")


def test_the_tool_budget_is_bounded(portal: BlockingPortal, toolbox: Toolbox) -> None:
    describe = Call("describe_table", {"table": "departments"})
    outcome = ask(portal, toolbox, Script({"explore": [describe] * 5}), agent_tool_calls=3)
    assert outcome.kind == "gave_up" and outcome.reason == "the tool-call budget (3) is spent."
    assert outcome.tool_calls == 3


def test_a_revision_goes_back_once_then_the_answer_stands(portal: BlockingPortal, toolbox: Toolbox) -> None:
    revise = Say('{"verdict": "revise", "reason": "use COUNT(DISTINCT dept_code)"}')
    approve = Say('Here you go: {"verdict": "approve", "reason": "fine"}')
    better = "SELECT COUNT(DISTINCT dept_code) AS n FROM departments WHERE dept_name = 'Field Operations'"
    script = Script(
        {
            "explore": [GROUND, Call("final_answer", {"sql": COUNT}), Call("final_answer", {"sql": better})],
            "review": [revise, approve],
        }
    )
    outcome = ask(portal, toolbox, script, review=True)
    assert outcome.kind == "answer" and outcome.sql == better
    assert outcome.review is not None and outcome.review.verdict == "approve"
    assert "A reviewer asks for a revision: use COUNT(DISTINCT dept_code)" in script.context("explore")
    assert [s.name for s in outcome.trace.steps if s.kind == "review"] == ["revise", "approve"]


def test_a_reviewer_that_breaks_the_json_rule_does_not_block(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script(
        {"explore": [GROUND, Call("final_answer", {"sql": COUNT})], "review": [Say("Looks good!"), Say("Yes.")]}
    )
    outcome = ask(portal, toolbox, script, review=True)
    assert outcome.kind == "answer"
    assert outcome.review is not None and not outcome.review.valid


def test_flex_without_python_writes_sql_only(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script(
        {
            "plan": [plans(("by name", 1.0, "python"))],
            "plan:by name": [
                Call("submit_program", {"language": "python", "code": "result = 1"}),
                Call("submit_program", {"language": "sql", "code": COUNT}),
            ],
        }
    )
    outcome = ask(portal, toolbox, script, solver="flex", python=False, flex_plans=1)
    assert outcome.kind == "answer" and outcome.sql == COUNT
    assert "Python is not available here" in script.context("plan:by name")
    assert "Python is not available here" in script.context("plan", 0)
    assert '"python"' not in str(script.requests["plan:by name"][0]["tools"][-1])


def test_a_translation_that_disagrees_is_not_kept(portal: BlockingPortal, toolbox: Toolbox) -> None:
    program = "df = sql('SELECT dept_name FROM departments')\nresult = int((df.dept_name == 'Field Operations').sum())"
    wrong = "```sql\nSELECT COUNT(*) FROM departments\n```"
    script = Script(
        {
            "plan": [plans(("by name", 1.0, "python"))],
            "plan:by name": [Call("submit_program", {"language": "python", "code": program})],
            "translate": [Say(wrong), Say(wrong)],
        }
    )
    outcome = ask(portal, toolbox, script, solver="flex", flex_plans=1)
    assert outcome.kind == "answer" and outcome.rows == [[1]]
    assert outcome.sql is None and outcome.program == program
    assert "no SQL translation gave the Python result" in outcome.notes[-1]
    assert "Its result differs from the program's" in script.context("translate")


def test_tables_match_by_values_within_tolerance() -> None:
    a = [["D042", 3, 1.5], ["D001", 2, 0.25]]
    assert tables_match(a, [[0.254, 2, "D001"], [1.509, 3, "D042"]])  # columns and rows reordered
    assert not tables_match(a, [[0.27, 2, "D001"], [1.5, 3, "D042"]])  # 0.02 is past the tolerance
    assert not tables_match(a, a[:1])
    assert tables_match([["7", None]], [[7.0, None]])
    assert tables_match([[1, "a"], [2, "b"]], [[2, "b"], [1, "a"]])
    assert not tables_match([[1, "a"], [2, "b"]], [[2, "b"], [1, "a"]], ordered=True)
    # Columns that match one by one but pair the values differently are different tables.
    assert not tables_match([[1, "a"], [2, "b"]], [[1, "b"], [2, "a"]])
    assert tables_match([["2025-11-01 00:00:00"]], [["2025-11-01"]])


def test_which_questions_ask_for_an_order() -> None:
    assert question_orders("List the top 5 customers by revenue")
    assert question_orders("Employees sorted by hire date")
    assert not question_orders("How many departments does each site have?")


def test_compared_literals_are_labels_not_numbers_or_dates() -> None:
    sql = (
        "SELECT * FROM e WHERE dept = 'Field Operations' AND d >= '2025-11-01' AND s IN ('active', 'on leave') "
        "AND code = '42' AND name LIKE '%Ops%'"
    )
    assert compared_literals(sql) == ["Field Operations", "active", "on leave"]
