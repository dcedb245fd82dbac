"""Both solvers end to end over real HTTP with the scripted model, in-process and against `sophrosyne serve`
over stdio: every scenario of issue 11 runs on both toolboxes."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from fixtures.model_script import Call, Fail, Say, Script, plans
from fixtures.openai_server import scripted_server
from sophrosyne.agent import solve
from sophrosyne.agent.explorer import Explorer
from sophrosyne.agent.outcome import Outcome
from sophrosyne.agent.toolbox import EnvironmentTools, MCPTools, Toolbox
from sophrosyne.cli.app import demo_path
from sophrosyne.environment import Environment
from sophrosyne.llm import ModelClient
from sophrosyne.settings import Settings

DEMO = str(demo_path())
QUESTION = "How many employees in Field Operations were absent in November 2025?"
FINAL = (
    "SELECT COUNT(DISTINCT a.employee_id) AS absent FROM absence_records a "
    "JOIN employees e ON a.employee_id = e.employee_id JOIN departments d ON e.department = d.dept_code "
    "WHERE d.dept_name = 'Field Operations' AND a.absence_date >= '2025-11-01' AND a.absence_date < '2025-12-01'"
)
GROUND = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "Field Operations"})


def demo(sql: str) -> list[list[Any]]:
    with sqlite3.connect(f"file:{DEMO}?mode=ro", uri=True) as db:
        return [list(r) for r in db.execute(sql).fetchall()]


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module", params=["in-process", "stdio"])
def toolbox(request: pytest.FixtureRequest, portal: BlockingPortal) -> Iterator[Toolbox]:
    """One toolbox per module and transport: the Environment in-process, or `sophrosyne serve` over stdio."""
    env = None
    if request.param == "in-process":
        env = Environment.open(DEMO)
        box: Toolbox = EnvironmentTools(env)
    else:
        box = MCPTools(f"{sys.executable} -m sophrosyne serve {DEMO}")
    with portal.wrap_async_context_manager(box) as opened:
        yield opened
    if env is not None:
        env.db.close()


def ask(
    portal: BlockingPortal,
    toolbox: Toolbox,
    script: Script,
    question: str = QUESTION,
    *,
    solver: str = "explorer",
    review: bool = False,
    answers: list[str] | None = None,
    **settings: Any,
) -> Outcome:
    """Solve one question against a scripted model server; `answers` reply to clarifications in turn."""
    with scripted_server(script) as (url, _):
        config = Settings(model="scripted", base_url=url, llm_backoff_s=0.0, **settings)

        async def run() -> Outcome:
            model = ModelClient.from_settings(config)
            try:
                outcome = await solve(
                    question,
                    tools=toolbox,
                    settings=config,
                    model=model,
                    solver=solver,
                    review=review,  # type: ignore[arg-type]
                )
                explorer = Explorer(model, toolbox, config)
                for answer in answers or []:
                    outcome = await explorer.resume(outcome, answer)
                return outcome
            finally:
                await model.aclose()

        return portal.call(run)


def test_happy_path(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script(
        {
            "explore": [
                Call("describe_table", {"table": "absence_records"}),
                GROUND,
                Call("final_answer", {"sql": FINAL, "explanation": "distinct absent employees"}),
            ]
        }
    )
    outcome = ask(portal, toolbox, script)
    assert outcome.kind == "answer", outcome.reason
    assert outcome.sql == FINAL
    assert outcome.rows == demo(FINAL)
    assert [s.name for s in outcome.trace.steps if s.kind == "tool"] == [
        "list_tables",
        "describe_table",
        "get_distinct_values",
        "execute_sql",
    ]
    assert outcome.tables_touched == ["absence_records", "departments", "employees"]
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (300, 30)  # three model turns of 100+10
    assert "absence_date" in script.context("explore", 1)  # the description reached the model


def test_directives_in_list_tables_reach_the_model(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script(
        {
            "explore": [GROUND, Call("final_answer", {"sql": FINAL})],
            "plan": [plans(("distinct absent employees", 1.0, "sql"))],
            "plan:distinct absent employees": [Call("submit_program", {"language": "sql", "code": FINAL})],
        }
    )
    ask(portal, toolbox, script)
    ask(portal, toolbox, script, solver="flex", flex_plans=1)
    for key in ("explore", "plan", "plan:distinct absent employees"):
        first = script.context(key, 0)
        assert "Directives: these tables are likely irrelevant" in first, key
        assert "performance_reviews" in first.split("Directives:")[1]


def test_sql_error_then_repair(portal: BlockingPortal, toolbox: Toolbox) -> None:
    wrong = "SELECT COUNT(*) FROM employees WHERE absence_date >= '2025-11-01'"
    right = "SELECT COUNT(*) FROM absence_records WHERE absence_date >= '2025-11-01'"
    script = Script({"explore": [Call("execute_sql", {"sql": wrong}), Call("final_answer", {"sql": right})]})
    outcome = ask(portal, toolbox, script)
    assert outcome.kind == "answer" and outcome.rows == demo(right)
    fed_back = script.requests["explore"][1]["messages"][-1]["content"]
    assert fed_back.startswith("ERROR:") and "absence_date" in fed_back
    assert [s.error is not None for s in outcome.trace.steps if s.name == "execute_sql"] == [True, False]


def test_ambiguous_value_then_clarify(portal: BlockingPortal, toolbox: Toolbox) -> None:
    clarify = Call(
        "ask_clarification",
        {
            "term": "operations team",
            "candidates": ["Field Operations", "IT Operations", "Operations and Logistics", "Ops Central"],
        },
    )
    search = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "operations"})
    script = Script({"explore": [search, clarify, Call("final_answer", {"sql": FINAL})]})
    question = "How many employees in the operations team were absent in November 2025?"
    outcome = ask(portal, toolbox, script, question)
    assert outcome.kind == "clarify" and outcome.clarification is not None
    assert outcome.clarification.term == "operations team"
    # Only values the data holds are offered: the made-up one is dropped.
    assert outcome.clarification.candidates == ["Field Operations", "IT Operations", "Operations and Logistics"]
    script.queues["explore"] = [search, clarify, Call("final_answer", {"sql": FINAL})]
    answered = ask(portal, toolbox, script, question, answers=["Field Operations"])
    assert answered.kind == "answer" and answered.rows == demo(FINAL)
    assert "The user answered: Field Operations" in script.context("explore")


def test_reviewer_block(portal: BlockingPortal, toolbox: Toolbox) -> None:
    verdict = '{"verdict": "block", "reason": "it counts approved absences as well"}'
    script = Script({"explore": [GROUND, Call("final_answer", {"sql": FINAL})], "review": [Say(verdict)]})
    outcome = ask(portal, toolbox, script, review=True)
    assert outcome.kind == "gave_up"
    assert outcome.reason == "blocked by the reviewer: it counts approved absences as well"
    assert outcome.review is not None and outcome.review.verdict == "block"
    assert FINAL in script.context("review")


def test_three_programs_disagree_then_vote(portal: BlockingPortal, toolbox: Toolbox) -> None:
    counts = "SELECT location_id, COUNT(*) AS n FROM departments GROUP BY location_id"
    # The same answer with other names, column order, row order and a difference under the 1e-2 tolerance.
    same = (
        "SELECT COUNT(*) + 0.004 AS departments, location_id AS site FROM departments "
        "GROUP BY location_id ORDER BY site DESC"
    )
    other = "SELECT location_id, COUNT(*) FROM employees GROUP BY location_id"
    script = Script(
        {
            "plan": [
                plans(
                    ("departments per site", 0.5, "sql"),
                    ("same, by site", 0.3, "sql"),
                    ("employees per site", 0.2, "sql"),
                )
            ],
            "plan:departments per site": [Call("submit_program", {"language": "sql", "code": counts})],
            "plan:same, by site": [
                Call("describe_table", {"table": "departments"}),
                Call("submit_program", {"language": "sql", "code": same}),
            ],
            "plan:employees per site": [
                Call("submit_program", {"language": "sql", "code": "SELECT location FROM employees"}),
                Call("submit_program", {"language": "sql", "code": other}),
            ],
        }
    )
    outcome = ask(portal, toolbox, script, "How many departments does each site have?", solver="flex")
    assert outcome.kind == "answer"
    assert outcome.sql == counts and outcome.rows == demo(counts)
    assert {c.reading: c.group for c in outcome.candidates} == {
        "departments per site": 1,
        "same, by site": 1,
        "employees per site": 2,
    }
    repaired = script.context("plan:employees per site")
    assert "The program failed:" in repaired  # the code error went back for a repair


def test_a_python_winner_is_translated_to_sql(portal: BlockingPortal, toolbox: Toolbox) -> None:
    first = (
        "df = sql('SELECT dept_code, location_id FROM departments')\n"
        "result = df.groupby('location_id').dept_code.count().reset_index(name='n')"
    )
    second = "df = sql('SELECT location_id FROM departments')\nresult = df.location_id.value_counts().reset_index()"
    empty = "SELECT location_id, COUNT(*) FROM departments WHERE dept_code = 'nope' GROUP BY location_id"
    single = "SELECT location_id, 1 FROM departments GROUP BY location_id"
    translated = "SELECT location_id, COUNT(*) AS n FROM departments GROUP BY location_id"
    script = Script(
        {
            "plan": [
                plans(("count codes", 0.4, "python"), ("count rows", 0.35, "python"), ("one per site", 0.25, "sql"))
            ],
            "plan:count codes": [Call("submit_program", {"language": "python", "code": first})],
            "plan:count rows": [Call("submit_program", {"language": "python", "code": second})],
            "plan:one per site": [
                Call("submit_program", {"language": "sql", "code": empty}),
                Call("submit_program", {"language": "sql", "code": single}),
            ],
            "translate": [Say(f"```sql\n{translated}\n```")],
        }
    )
    outcome = ask(portal, toolbox, script, "How many departments does each site have?", solver="flex")
    assert outcome.kind == "answer" and outcome.language == "python"
    assert outcome.sql == translated
    assert sorted(outcome.rows) == demo(translated)
    assert "translated to SQL with the same result" in outcome.notes[0]
    assert "go back to the plan" in script.context("plan:one per site").lower()  # the empty result backtracked
    assert any(s.name == "sql()" for s in outcome.trace.steps)  # the program's queries are in the trace


def test_a_model_without_tool_calling_uses_json(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script({"explore": [GROUND, Call("final_answer", {"sql": FINAL})]}, refuse_tools=True, report_usage=False)
    outcome = ask(portal, toolbox, script)
    assert outcome.kind == "answer" and outcome.rows == demo(FINAL)
    sent = script.requests["explore"]
    assert "tools" in sent[0] and all("tools" not in r for r in sent[1:])
    assert '{"tool": "<tool name>"' in script.context("explore")
    assert outcome.usage.estimated and outcome.usage.prompt_tokens > 0


def test_a_rate_limit_then_retry(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script(
        {"explore": [Fail(429, "rate limited", {"Retry-After": "0"}), GROUND, Call("final_answer", {"sql": FINAL})]}
    )
    outcome = ask(portal, toolbox, script)
    assert outcome.kind == "answer"
    assert len(script.requests["explore"]) == 3
