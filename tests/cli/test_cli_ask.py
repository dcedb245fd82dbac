"""`sophrosyne ask`: the one-line error without a model, live steps, the answer, the trace, JSON, --server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.model_script import Call, Script
from fixtures.openai_server import scripted_server
from sophrosyne.cli.app import app

QUESTION = "How many employees in Field Operations were absent in November 2025?"
FINAL = (
    "SELECT COUNT(DISTINCT a.employee_id) AS absent FROM absence_records a "
    "JOIN employees e ON a.employee_id = e.employee_id JOIN departments d ON e.department = d.dept_code "
    "WHERE d.dept_name = 'Field Operations' AND a.absence_date >= '2025-11-01' AND a.absence_date < '2025-12-01'"
)
GROUND = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "Field Operations"})


@pytest.fixture(autouse=True)
def no_model_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SOPHROSYNE_MODEL", "SOPHROSYNE_BASE_URL", "SOPHROSYNE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_no_model_configured_is_one_line_and_exit_2() -> None:
    code, out, err = invoke("ask", "demo", QUESTION)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("error: no model configured: set SOPHROSYNE_MODEL (or --model)")
    assert "OPENAI_BASE_URL" in err and "OPENAI_API_KEY" in err


def test_ask_prints_each_step_then_the_sql_and_the_result(tmp_path: Path) -> None:
    script = Script({"explore": [GROUND, Call("final_answer", {"sql": FINAL, "explanation": "absent people"})]})
    trace = tmp_path / "trace.jsonl"
    with scripted_server(script) as (url, _):
        code, out, err = invoke(
            "ask", "demo", QUESTION, "--model", "scripted", "--base-url", url, "--trace", str(trace)
        )
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == "explorer on in-process demo with scripted"
    assert "list_tables(question=" in lines[1]
    assert "model explore → get_distinct_values · 100+10 tokens" in lines[2]
    assert (
        # Only execute_sql answers with structured rows (issue 10): other steps are sized by their text.
        "get_distinct_values(table='departments', column='dept_name', search='Field Operations') · " in lines[3]
    )
    assert "execute_sql(sql=" in lines[5] and "1 row " in lines[5]
    assert "COUNT(DISTINCT a.employee_id)" in out and "absent" in out
    assert "3 tool calls · 200+20 tokens" in out
    steps = [json.loads(line) for line in trace.read_text().splitlines()]
    tools = [s for s in steps if s["kind"] == "tool"]
    assert [s["name"] for s in tools] == ["list_tables", "get_distinct_values", "execute_sql"]
    assert tools[1]["arguments"] == {"table": "departments", "column": "dept_name", "search": "Field Operations"}
    assert all(s["result_chars"] > 0 and s["ms"] > 0 for s in tools)
    assert sum(s["prompt_tokens"] for s in steps) == 200


def test_ask_json_and_a_clarification_without_a_person() -> None:
    clarify = Call("ask_clarification", {"term": "operations", "candidates": ["Field Operations", "IT Operations"]})
    search = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "operations"})
    script = Script({"explore": [search, clarify]})
    with scripted_server(script) as (url, _):
        code, out, _ = invoke(
            "ask", QUESTION.replace("Field Operations", "operations"), "--model", "m", "--base-url", url, "--json"
        )
    assert code == 3
    result = json.loads(out)
    assert result["kind"] == "clarify"
    assert result["clarification"]["candidates"] == ["Field Operations", "IT Operations"]
    assert result["tool_calls"] == 2 and result["tables_touched"] == ["departments"]


def test_ask_through_an_external_server_over_stdio() -> None:
    # `serve --allow-python` over stdio: the model sees the server's run_python and may call it.
    program = Call("run_python", {"code": "df = sql('SELECT dept_code FROM departments')\nresult = [[len(df)]]"})
    script = Script({"explore": [program, GROUND, Call("final_answer", {"sql": FINAL})]})
    server = f"{sys.executable} -m sophrosyne serve demo --allow-python"
    with scripted_server(script) as (url, _):
        code, out, err = invoke("ask", QUESTION, "--server", server, "--model", "m", "--base-url", url, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["sql"] == FINAL
    assert f"explorer on {server}" in err
    assert "demo: 12 tables" not in err  # the server's own log stays out of the progress lines
    assert "run_python" in {t["function"]["name"] for t in script.requests["explore"][0]["tools"]}
    ran = next(s for s in result["steps"] if s["name"] == "run_python")
    assert ran["error"] is None and ran["rows"] == 1
    assert "15" in script.context("explore", 1)  # the program's answer (15 departments) reached the model


def test_a_server_that_fails_to_start_says_why() -> None:
    server = f"{sys.executable} -c 'import sys; sys.exit(\"no database here\")'"
    code, _, err = invoke("ask", QUESTION, "--server", server, "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 1
    assert "could not start the MCP server" in err and "no database here" in err
