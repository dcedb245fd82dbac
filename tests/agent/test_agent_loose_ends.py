"""The agent's loose ends (issue 21, items 1-4): grounding on returned data only, unknown tools in JSON mode,
a trace that keeps every call the model made, and `ask`'s errors (empty question, endpoint named, JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from typer.testing import CliRunner

from fixtures.model_script import Call, Fail, Script, plans
from fixtures.openai_server import scripted_server
from sophrosyne.agent import solve
from sophrosyne.agent.explorer import returned_data
from sophrosyne.agent.outcome import Outcome
from sophrosyne.agent.toolbox import EnvironmentTools, Toolbox, ToolOutput
from sophrosyne.cli.app import app, demo_path
from sophrosyne.environment import Environment
from sophrosyne.llm import ModelClient
from sophrosyne.settings import Settings

QUESTION = "How many departments are called Finance Dept?"
ECHOED = "SELECT COUNT(*) AS n FROM departments WHERE dept_name = 'Finance Dept'"
GROUNDED = "SELECT COUNT(*) AS n FROM departments WHERE dept_name = 'Field Operations'"
GROUND = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "Field Operations"})


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module")
def toolbox(portal: BlockingPortal) -> Iterator[Toolbox]:
    env = Environment.open(str(demo_path()))
    with portal.wrap_async_context_manager(EnvironmentTools(env)) as opened:
        yield opened
    env.db.close()


@pytest.fixture(autouse=True)
def no_model_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SOPHROSYNE_MODEL", "SOPHROSYNE_BASE_URL", "SOPHROSYNE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def ask(portal: BlockingPortal, toolbox: Toolbox, script: Script, solver: str = "explorer", **extra: Any) -> Outcome:
    with scripted_server(script) as (url, _):
        config = Settings(model="scripted", base_url=url, llm_backoff_s=0.0, **extra)

        async def run() -> Outcome:
            model = ModelClient.from_settings(config)
            try:
                return await solve(QUESTION, tools=toolbox, settings=config, model=model, solver=solver)  # type: ignore[arg-type]
            finally:
                await model.aclose()

        return portal.call(run)


def answer_to(script: Script, turn: int, key: str = "explore") -> str:
    """What the solver answered to the model's tool call in turn `turn` (the last message of the next request)."""
    return str(script.requests[key][turn + 1]["messages"][-1]["content"])


@pytest.mark.parametrize(
    "search",
    [
        Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "Finance Dept"}),
        Call("find_rows", {"term": "Finance Dept"}),
    ],
    ids=["failed-value-search", "find-rows-header"],
)
def test_a_value_echoed_by_a_header_is_not_grounded(portal: BlockingPortal, toolbox: Toolbox, search: Call) -> None:
    # The header echoes the search ("matching 'Finance Dept'", "rows containing 'Finance Dept'"); the data does
    # not hold it, so the query that filters on it is not run.
    script = Script({"explore": [search, Call("execute_sql", {"sql": ECHOED}), Call("give_up", {"reason": "none"})]})
    outcome = ask(portal, toolbox, script)
    assert answer_to(script, 1).startswith("Not run: 'Finance Dept' was not grounded in the data")
    assert "execute_sql" not in [s.name for s in outcome.trace.steps if s.kind == "tool"]
    refused = [s for s in outcome.trace.steps if s.kind == "refused"]
    assert [(s.name, s.arguments) for s in refused] == [("execute_sql", {"sql": ECHOED})]


def test_a_value_the_data_returned_grounds_the_query(portal: BlockingPortal, toolbox: Toolbox) -> None:
    script = Script({"explore": [GROUND, Call("final_answer", {"sql": GROUNDED})]})
    outcome = ask(portal, toolbox, script)
    assert outcome.kind == "answer" and outcome.rows == [[1]]
    assert not [s for s in outcome.trace.steps if s.kind == "refused"]


def test_grounding_reads_data_blocks_structured_rows_or_text_without_the_echo() -> None:
    ours = ToolOutput("find_rows", {"term": "X"}, "rows containing 'X':\n<data 0a1b>\nY | Z\n</data 0a1b>\n")
    assert returned_data(ours) == "Y | Z\n"
    listed = ToolOutput("list_tables", {"question": "about 'X'"}, "<data 00>\n- t: holds the value 'X'\n</data 00>")
    assert returned_data(listed) == ""
    structured = ToolOutput("query", {"sql": "SELECT 'X'"}, "", {"sql": "SELECT 'X'", "rows": [["Y"], [None]]})
    assert returned_data(structured) == "Y"
    plain = ToolOutput("search", {"term": "X"}, "searched for X: found W")
    assert "X" not in returned_data(plain) and "W" in returned_data(plain)


@pytest.mark.parametrize("solver", ["explorer", "flex"])
def test_an_unknown_tool_in_json_mode_is_answered(portal: BlockingPortal, toolbox: Toolbox, solver: str) -> None:
    wrong = Call("describe_tables", {"table": "departments"})
    if solver == "explorer":
        script = Script({"explore": [wrong, GROUND, Call("final_answer", {"sql": GROUNDED})]}, refuse_tools=True)
        key, turn = "explore", 1  # the first request is refused (tools), the second returns the unknown call
    else:
        script = Script(
            {
                "plan": [plans(("departments named so", 1.0, "sql"))],
                "plan:departments named so": [
                    wrong,
                    GROUND,
                    Call("submit_program", {"language": "sql", "code": GROUNDED}),
                ],
            },
            refuse_tools=True,
        )
        key, turn = "plan:departments named so", 1
    outcome = ask(portal, toolbox, script, solver=solver, flex_plans=1)
    heard = answer_to(script, turn, key)
    assert "no tool `describe_tables`; the tools are: " in heard
    assert "get_distinct_values" in heard and ("final_answer" in heard or "submit_program" in heard)
    assert outcome.kind == "answer", outcome.reason
    assert [s.name for s in outcome.trace.steps if s.kind == "refused"] == ["describe_tables"]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_the_trace_is_written_when_the_model_fails_after_tools_ran(tmp_path: Path) -> None:
    script = Script({"explore": [GROUND, Call("execute_sql", {"sql": ECHOED}), Fail(400, "context length exceeded")]})
    trace = tmp_path / "trace.jsonl"
    with scripted_server(script) as (url, _):
        code, _, err = invoke("ask", "demo", QUESTION, "--model", "m", "--base-url", url, "--trace", str(trace))
    assert code == 1
    assert f"the model endpoint {url} (model m) refused the request (400)" in err
    steps = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [s["name"] for s in steps if s["kind"] == "tool"] == ["list_tables", "get_distinct_values"]
    assert [(s["name"], s["error"][:8]) for s in steps if s["kind"] == "refused"] == [("execute_sql", "Not run:")]


def test_ask_refuses_an_empty_question_before_calling_the_model() -> None:
    script = Script({"explore": []})
    with scripted_server(script) as (url, _):
        code, out, err = invoke("ask", "demo", "  ", "--model", "m", "--base-url", url)
    assert code == 1 and out == ""
    assert err.startswith("error: the question is empty.")
    assert script.requests == {}


def test_ask_json_prints_its_error_on_stdout() -> None:
    code, out, err = invoke("ask", "demo", QUESTION, "--json")
    assert code == 2 and err.startswith("error: no model configured")
    printed = json.loads(out)
    assert printed["kind"] == "error" and printed["exit_code"] == 2
    assert printed["error"].startswith("no model configured")
