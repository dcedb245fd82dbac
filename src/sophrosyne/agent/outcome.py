"""What a solver returns: the outcome (answer, clarify or gave_up) and the trace of every step it took."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from sophrosyne.agent.toolbox import ToolOutput
from sophrosyne.llm import Reply, Usage
from sophrosyne.tools.registry import TABLE_TOOLS

# `refused`: a call the model made that the solver did not pass on (unknown tool, bad arguments, ungrounded SQL).
StepKind = Literal["tool", "model", "program", "review", "refused"]


@dataclass
class Step:
    """One thing a solver did: a tool call, a model call, a program run or a review."""

    index: int
    kind: StepKind
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    ms: float = 0.0
    result_chars: int = 0
    rows: int | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    plan: int | None = None
    tables: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Trace:
    """Every step of a run, with running totals; `on_step` sees each step as it happens (live progress)."""

    def __init__(self, on_step: Callable[[Step], None] | None = None) -> None:
        self.steps: list[Step] = []
        self.usage = Usage()
        self.on_step = on_step

    def _add(self, step: Step) -> Step:
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)
        return step

    def tool(self, output: ToolOutput, plan: int | None = None) -> Step:
        error = output.text.strip().splitlines()[0][:300] if output.is_error and output.text.strip() else None
        tables = []
        if output.name in TABLE_TOOLS and isinstance(output.arguments.get("table"), str):
            tables = [output.arguments["table"]]
        sql = next((v for k, v in output.arguments.items() if k in ("sql", "query") and isinstance(v, str)), None)
        if sql and not output.is_error:
            tables = read_tables(sql)
        step = Step(
            len(self.steps) + 1,
            "tool",
            output.name,
            dict(output.arguments),
            round(output.ms, 2),
            len(output.text),
            output.rows,
            error if output.is_error else None,
            plan=plan,
            tables=tables,
        )
        return self._add(step)

    def refused(self, name: str, arguments: dict[str, Any], reason: str, plan: int | None = None) -> Step:
        """A call the model made that was answered with `reason` instead of being run."""
        return self._add(Step(len(self.steps) + 1, "refused", name, dict(arguments), error=reason[:300], plan=plan))

    def model(self, reply: Reply, purpose: str, plan: int | None = None) -> Step:
        self.usage.add(reply.usage)
        calls = [c.name for c in reply.tool_calls]
        step = Step(
            len(self.steps) + 1,
            "model",
            purpose,
            {"calls": calls} if calls else {},
            round(reply.ms, 2),
            len(reply.text),
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            plan=plan,
        )
        return self._add(step)

    def program(
        self,
        language: str,
        code: str,
        ms: float,
        rows: int | None,
        error: str | None,
        plan: int | None = None,
        tables: list[str] | None = None,
    ) -> Step:
        step = Step(
            len(self.steps) + 1,
            "program",
            language,
            {"code": code},
            round(ms, 2),
            rows=rows,
            error=error[:300] if error else None,
            plan=plan,
            tables=tables or [],
        )
        return self._add(step)

    def review(self, verdict: str, reason: str, reply: Reply | None) -> Step:
        if reply is not None:
            self.usage.add(reply.usage)
        step = Step(
            len(self.steps) + 1,
            "review",
            verdict,
            {"reason": reason},
            round(reply.ms, 2) if reply else 0.0,
            prompt_tokens=reply.usage.prompt_tokens if reply else 0,
            completion_tokens=reply.usage.completion_tokens if reply else 0,
        )
        return self._add(step)

    @property
    def tool_calls(self) -> int:
        return sum(1 for s in self.steps if s.kind == "tool")

    @property
    def tables_touched(self) -> list[str]:
        return sorted({t for s in self.steps for t in s.tables})

    def write_jsonl(self, path: Path) -> None:
        write_steps(path, self.steps)


def write_steps(path: Path, steps: list[Step]) -> None:
    """Steps as JSON lines, one a step."""
    with Path(path).open("w") as f:
        for step in steps:
            f.write(json.dumps(step.to_json(), default=str) + "\n")


def read_tables(sql: str) -> list[str]:
    """Base tables a query reads (CTE names left out); none when it does not parse."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql)
    except sqlglot.errors.SqlglotError:
        return []
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return sorted({t.name for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes})


@dataclass
class Clarification:
    """An ambiguous term of the question and the values the data holds for it (empty: nothing matched)."""

    term: str
    candidates: list[str]
    question: str


@dataclass
class Review:
    verdict: Literal["approve", "revise", "block"]
    reason: str
    valid: bool = True  # False when the reviewer's reply was not the strict JSON asked for


@dataclass
class Candidate:
    """One FlexSQL plan's program and its result (or error)."""

    plan: int
    reading: str
    probability: float
    language: str
    code: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    error: str | None = None
    group: int | None = None


@dataclass
class Outcome:
    """The end of a solver run. `kind` is answer (sql, columns, rows, explanation), clarify (clarification)
    or gave_up (reason); the trace holds every step, tokens and cost."""

    kind: Literal["answer", "clarify", "gave_up"]
    question: str
    solver: str
    trace: Trace
    sql: str | None = None
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    explanation: str = ""
    clarification: Clarification | None = None
    reason: str | None = None
    review: Review | None = None
    language: str = "sql"
    program: str | None = None
    candidates: list[Candidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    state: Any = None  # what `resume` needs after a clarification; not serialised

    @property
    def usage(self) -> Usage:
        return self.trace.usage

    @property
    def cost(self) -> float | None:
        return self.trace.usage.cost

    @property
    def tool_calls(self) -> int:
        return self.trace.tool_calls

    @property
    def tables_touched(self) -> list[str]:
        return self.trace.tables_touched

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "question": self.question,
            "solver": self.solver,
            "sql": self.sql,
            "columns": self.columns,
            "rows": self.rows,
            "explanation": self.explanation,
            "clarification": asdict(self.clarification) if self.clarification else None,
            "reason": self.reason,
            "review": asdict(self.review) if self.review else None,
            "language": self.language,
            "program": self.program,
            "candidates": [asdict(c) for c in self.candidates],
            "notes": self.notes,
            "tool_calls": self.tool_calls,
            "tables_touched": self.tables_touched,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "estimated": self.usage.estimated,
            },
            "cost": self.cost,
            "steps": [s.to_json() for s in self.trace.steps],
        }
