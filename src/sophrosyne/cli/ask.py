"""`sophrosyne ask`: run a solver on one question with live progress, clarification and a rendered answer."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.prompt import Prompt
from rich.syntax import Syntax
from rich.table import Table

from sophrosyne.agent import Solver
from sophrosyne.agent.explorer import Explorer
from sophrosyne.agent.flex import FlexSQL
from sophrosyne.agent.outcome import Outcome, Step, write_steps
from sophrosyne.agent.toolbox import EnvironmentTools, MCPTools, Toolbox
from sophrosyne.base.text import counted
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError, SophrosyneError
from sophrosyne.llm import ModelClient
from sophrosyne.sandbox.executor import PythonExecutor
from sophrosyne.settings import Settings

EXIT_GAVE_UP = 1
EXIT_CLARIFY = 3


@dataclass
class AskRequest:
    question: str
    knowledge: str | None
    solver: Solver
    review: bool
    trace: Path | None
    as_json: bool
    interactive: bool


def progress_line(step: Step) -> str:
    """One line per step: what was called with which arguments, rows, milliseconds, tokens."""
    plan = f"[plan {step.plan}] " if step.plan is not None else ""
    if step.kind == "model":
        calls = step.arguments.get("calls")
        then = f" → {', '.join(calls)}" if calls else ""
        tokens = f"{step.prompt_tokens:,}+{step.completion_tokens:,} tokens"
        return f"{step.index:>3} {plan}model {step.name}{then} · {tokens} · {step.ms:,.0f} ms"
    if step.kind == "review":
        return f"{step.index:>3} review: {step.name} — {step.arguments.get('reason', '')}"
    if step.kind == "refused":
        shown = ", ".join(f"{k}={_short(v)}" for k, v in step.arguments.items())
        return f"{step.index:>3} {plan}not run: {step.name}({shown}) · {step.error}"
    shown = ", ".join(f"{k}={_short(v)}" for k, v in step.arguments.items())
    size = counted(step.rows, "row") if step.rows is not None else f"{step.result_chars:,} chars"
    error = f" · error: {step.error}" if step.error else ""
    return f"{step.index:>3} {plan}{step.name}({shown}) · {size} · {step.ms:,.0f} ms{error}"


def _short(value: Any, n: int = 70) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


async def run_ask(
    request: AskRequest,
    model: ModelClient,
    settings: Settings,
    toolbox: Toolbox,
    console: Console,
    err_console: Console,
) -> int:
    """Run the question to an outcome (asking the user when the explorer needs a clarification and a person
    is at the terminal), render it, write the trace; the exit code says how it ended."""

    steps: list[Step] = []

    def show(step: Step) -> None:
        steps.append(step)
        err_console.print(escape(progress_line(step)), highlight=False, soft_wrap=True)

    outcome: Outcome | None = None
    try:
        async with toolbox:
            # The MCP SDK sets the root logger to INFO when a server is built; its request logs and the HTTP
            # client's would interleave with the progress lines.
            for name in ("", "mcp", "httpx2", "httpx", "openai"):
                logging.getLogger(name).setLevel(logging.WARNING)
            err_console.print(
                f"[dim]{request.solver} on {escape(toolbox.label)} with {escape(model.model)}[/]", soft_wrap=True
            )
            if request.solver == "flex":
                flex = FlexSQL(model, toolbox, settings, executor=PythonExecutor(settings), on_step=show)
                outcome = await flex.solve(request.question, request.knowledge)
            else:
                explorer = Explorer(model, toolbox, settings, review=request.review, on_step=show)
                outcome = await explorer.solve(request.question, request.knowledge)
                while outcome.kind == "clarify" and request.interactive and outcome.clarification:
                    answer = _ask_user(outcome, console)
                    outcome = await explorer.resume(outcome, answer)
    finally:
        await model.aclose()
        # A run that ends on an error (the model's endpoint failed) still leaves the steps it took.
        if request.trace is not None:
            write_steps(request.trace, steps)
    assert outcome is not None
    if request.as_json:
        console.print_json(json.dumps(outcome.to_json(), default=str))
    else:
        render(outcome, console)
    return {"answer": 0, "clarify": EXIT_CLARIFY}.get(outcome.kind, EXIT_GAVE_UP)


def _ask_user(outcome: Outcome, console: Console) -> str:
    clarification = outcome.clarification
    assert clarification is not None
    console.print(f"[bold]{escape(clarification.question)}[/]")
    for i, value in enumerate(clarification.candidates, 1):
        console.print(f"  {i}. {escape(value)}")
    answer = Prompt.ask("your answer (a number or words)", console=console)
    if answer.strip().isdigit() and 1 <= int(answer) <= len(clarification.candidates):
        return clarification.candidates[int(answer) - 1]
    return answer


def render(outcome: Outcome, console: Console) -> None:
    if outcome.kind == "clarify" and outcome.clarification:
        console.print(f"[bold yellow]clarify:[/] {escape(outcome.clarification.question)}")
        for value in outcome.clarification.candidates:
            console.print(f"  - {escape(value)}")
    elif outcome.kind == "gave_up":
        console.print(f"[bold red]gave up:[/] {escape(outcome.reason or '')}")
    else:
        if outcome.sql:
            console.print(Syntax(outcome.sql, "sql", word_wrap=True))
        elif outcome.program:
            console.print(Syntax(outcome.program, "python", word_wrap=True))
        table = Table(*outcome.columns, show_lines=False)
        for row in outcome.rows[:100]:
            table.add_row(*("NULL" if v is None else escape(str(v)) for v in row))
        console.print(table)
        if len(outcome.rows) > 100:
            console.print(f"[dim]… {len(outcome.rows) - 100} more rows[/]")
        if outcome.explanation:
            console.print(escape(outcome.explanation))
    for note in outcome.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    if outcome.review is not None:
        console.print(f"[dim]review: {outcome.review.verdict} — {escape(outcome.review.reason)}[/]")
    usage = outcome.usage
    cost = f" · ${outcome.cost:.4f}" if outcome.cost is not None else ""
    estimated = " (counted offline)" if usage.estimated else ""
    console.print(
        f"[dim]{outcome.tool_calls} tool calls · {usage.prompt_tokens:,}+{usage.completion_tokens:,} tokens"
        f"{estimated}{cost} · tables: {', '.join(outcome.tables_touched) or 'none'}[/]"
    )


def error_json(exc: SophrosyneError) -> str:
    """An error as `ask --json` prints it on stdout, so that a JSON consumer gets an answer too."""
    return json.dumps({"kind": "error", "error": exc.message, "hint": exc.hint, "exit_code": exc.exit_code})


def toolbox_for(env: Environment | None, server: str | None, token: str | None) -> Toolbox:
    if server:
        return MCPTools(server, token=token)
    if env is None:
        raise ConfigError("ask needs a database or --server.", hint="e.g. sophrosyne ask demo 'How many …?'")
    return EnvironmentTools(env)


def ask(request: AskRequest, model: ModelClient, settings: Settings, toolbox: Toolbox, consoles: Any) -> int:
    console, err_console = consoles
    return asyncio.run(run_ask(request, model, settings, toolbox, console, err_console))


def is_interactive(as_json: bool) -> bool:
    return not as_json and sys.stdin.isatty() and sys.stdout.isatty()
