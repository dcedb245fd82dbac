"""The agent: tools over an Environment or any MCP server, the explorer and FlexSQL solvers, a Python sandbox."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

# Kept light: the sandbox child imports this package before it closes its layers.
if TYPE_CHECKING:
    from sophrosyne.agent.outcome import Outcome, Step
    from sophrosyne.agent.toolbox import Toolbox
    from sophrosyne.llm import ModelClient
    from sophrosyne.settings import Settings

Solver = Literal["explorer", "flex"]


async def solve(
    question: str,
    knowledge: str | None = None,
    *,
    tools: Toolbox,
    settings: Settings | None = None,
    solver: Solver = "explorer",
    model: ModelClient | None = None,
    review: bool = False,
    python: bool = True,
    on_step: Callable[[Step], None] | None = None,
) -> Outcome:
    """Answer one question with an open toolbox (`async with EnvironmentTools(env)` or `MCPTools(target)`).

    `model` defaults to the settings' model; `review` adds the reviewer (explorer); `python` lets FlexSQL
    write sandboxed Python programs. The Outcome carries the trace, token usage, cost, tool calls and the
    tables touched. An explorer outcome of kind `clarify` continues with `Explorer.resume`."""
    from sophrosyne.agent.explorer import Explorer
    from sophrosyne.agent.flex import FlexSQL
    from sophrosyne.llm import ModelClient
    from sophrosyne.sandbox.executor import PythonExecutor
    from sophrosyne.settings import Settings

    settings = settings or (model.settings if model else Settings())
    model = model or ModelClient.from_settings(settings)
    if solver == "flex":
        executor = PythonExecutor(settings) if python else None
        return await FlexSQL(model, tools, settings, executor=executor, on_step=on_step).solve(question, knowledge)
    return await Explorer(model, tools, settings, review=review, on_step=on_step).solve(question, knowledge)
