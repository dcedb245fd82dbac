"""`bench run`: the agent over a suite in the paper's arms, many questions at once, one JSONL record per answer.

Arms: `coarse` (the whole schema in the prompt and only the SQL tool), `none` (the fine-grained tools without
directives: today's data systems), `directives` (Sophrosyne) and `oracle` (directives from the gold SQL). A
record is written as soon as its question is scored, so a killed run loses only what was in flight and a
rerun with the same output file skips every question already recorded."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sophrosyne.agent.toolbox import EnvironmentTools, ToolOutput
from sophrosyne.bench.data.types import Question, Suite
from sophrosyne.bench.exploration import gold_tables_of, measure
from sophrosyne.bench.score import Scorer
from sophrosyne.bench.tokens import whole_schema
from sophrosyne.errors import ConfigError

if TYPE_CHECKING:
    from sophrosyne.agent import Solver
    from sophrosyne.agent.outcome import Outcome
    from sophrosyne.environment import Environment
    from sophrosyne.llm import ModelClient
    from sophrosyne.settings import Settings

ARMS = ("coarse", "none", "directives", "oracle")
PER_QUESTION = ("directives", "oracle")  # arms whose Environment carries one question's directives
Status = Callable[[int, int, str], None]


class BenchTools(EnvironmentTools):
    """The in-process tools of one arm: all of them, or (coarse) the SQL tool alone. One toolbox serves every
    question of its database and arm at once; the directives each `list_tables` gave are kept per question."""

    def __init__(self, env: Environment, *, sql_only: bool = False) -> None:
        super().__init__(env)
        self.sql_only = sql_only
        # By the question and knowledge list_tables was given.
        self.directives: dict[tuple[str, str], list[dict[str, Any]]] = {}

    async def __aenter__(self) -> BenchTools:
        await super().__aenter__()
        if self.sql_only:
            self.specs = [s for s in self.specs if s.name == "execute_sql"]
        return self

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        output = await super().call(name, arguments)
        if name == "list_tables" and output.data and isinstance(output.data.get("directives"), list):
            given = [d for d in output.data["directives"] if isinstance(d, dict)]
            self.directives[(str(arguments.get("question") or ""), str(arguments.get("knowledge") or ""))] = given
        return output


class Toolboxes:
    """Open toolboxes, one per database and arm, opened and closed by the run's own task (an MCP session must
    end in the task that began it). The directives and oracle arms open one per question instead (see
    `Environments`)."""

    def __init__(self, environments: Environments) -> None:
        self.environments = environments
        self.stack = AsyncExitStack()
        self._open: dict[tuple[str, str], BenchTools] = {}

    async def open(self, question: Question, arm: str) -> None:
        if arm in PER_QUESTION or (question.db_id, arm) in self._open:
            if arm == "directives":  # its indexes are built here, in the run's task, before any question
                await asyncio.to_thread(self.environments.get, question.db_id, arm)
            return
        env = await asyncio.to_thread(self.environments.for_question, question, arm)
        tools = BenchTools(env, sql_only=arm == "coarse")
        await self.stack.enter_async_context(tools)
        self._open[(question.db_id, arm)] = tools

    def shared(self, question: Question, arm: str) -> BenchTools:
        return self._open[(question.db_id, arm)]

    async def aclose(self) -> None:
        await self.stack.aclose()


def coarse_knowledge(question: Question, schema: str) -> str:
    """The coarse arm's prompt: the question's knowledge, then the whole schema with sample values."""
    knowledge = question.knowledge.strip() or "(none)"
    return f"{knowledge}\n\nThe database schema (every table, with sample values):\n{schema}"


@dataclass
class RunPlan:
    suite: Suite
    arms: list[str]
    out: Path
    settings: Settings
    solver: Solver = "explorer"
    concurrency: int = 4
    question_timeout_s: float = 600.0


@dataclass
class RunTotals:
    """Running figures for the progress bar and the closing line."""

    done: int = 0
    correct: int = 0
    cost: float = 0.0
    already: int = 0  # recorded by an earlier run of the same output file
    failed: int = 0
    total: int = 0
    by_arm: dict[str, list[int]] = field(default_factory=dict)

    def status(self) -> str:
        ex = self.correct / self.done if self.done else 0.0
        return f"EX {ex:.3f}  ${self.cost:.4f}"


def record_key(arm: str, question_id: str) -> str:
    return f"{arm}/{question_id}"


def finished_keys(path: Path) -> set[str]:
    """Keys of the complete records already in `path` (a torn last line or a failed run does not count)."""
    if not Path(path).is_file():
        return set()
    keys: set[str] = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("key") and row.get("outcome") != "error":
            keys.add(str(row["key"]))
    return keys


class RecordWriter:
    """Appends one JSON line per record and syncs it, so that a kill leaves whole lines behind."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._repair()

    def _repair(self) -> None:
        # A run killed mid-write leaves a partial last line: end it, so the next record starts on its own line.
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as handle:
                handle.seek(-1, os.SEEK_END)
                last = handle.read(1)
            if last != b"\n":
                with self.path.open("ab") as handle:
                    handle.write(b"\n")

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock, self.path.open("ab") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


class Environments:
    """The Environments of a run. Arms without per-question directive state (coarse, none) share one per
    database; `directives` and `oracle` get one per question over the same open database, because an
    Environment remembers the directives it gave last (for its reminders), which must stay with their question.
    The directive indexes are built once per database, before any question, so that every question sees the
    same finished indexes (a value index built under a time budget while questions run would not)."""

    def __init__(self, suite: Suite, settings: Settings) -> None:
        self.suite = suite
        self.settings = settings
        self._open: dict[tuple[str, str], Environment] = {}
        self._schemas: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, db_id: str, mode: str) -> Environment:
        from sophrosyne.environment import Environment

        with self._lock:
            env = self._open.get((db_id, mode))
            if env is None:
                settings = self.settings.replaced(directives=mode)
                target = self.suite.targets[db_id]
                env = Environment.open(target, settings=settings, descriptions=self.suite.descriptions.get(db_id))
                if mode == "directives":
                    env.moderator.warm()  # the schema and value indexes, built (or loaded) once, now
                self._open[(db_id, mode)] = env
            return env

    def for_question(self, question: Question, arm: str) -> Environment:
        from sophrosyne.environment import Environment

        if arm in ("coarse", "none"):
            return self.get(question.db_id, "none")
        base = self.get(question.db_id, arm)
        env = Environment(base.db, settings=base.settings, descriptions=self.suite.descriptions.get(question.db_id))
        if arm == "oracle":
            env.set_oracle(question.sql)
        return env

    def schema(self, db_id: str) -> str:
        with self._lock:
            cached = self._schemas.get(db_id)
        if cached is None:
            cached = whole_schema(self.get(db_id, "none"))
            with self._lock:
                self._schemas[db_id] = cached
        return cached

    def close(self) -> None:
        with self._lock:
            for env in self._open.values():
                env.close()
            self._open.clear()


def plan_tasks(plan: RunPlan, done: set[str]) -> list[tuple[str, Question]]:
    """(arm, question) pairs still to run, question by question so that a partial run covers every arm."""
    unknown = [a for a in plan.arms if a not in ARMS]
    if unknown:
        raise ConfigError(f"unknown arm(s) {', '.join(unknown)}.", hint=f"Arms: {', '.join(ARMS)}.")
    return [(arm, q) for q in plan.suite.questions for arm in plan.arms if record_key(arm, q.id) not in done]


async def run_plan(plan: RunPlan, model: ModelClient, status: Status | None = None) -> RunTotals:
    """Run every (arm, question) not yet recorded in `plan.out`, `plan.concurrency` at a time."""
    done = finished_keys(plan.out)
    tasks = plan_tasks(plan, done)
    totals = RunTotals(already=len(done), total=len(tasks))
    writer = RecordWriter(plan.out)
    environments = Environments(plan.suite, plan.settings)
    toolboxes = Toolboxes(environments)
    scorer = Scorer(plan.suite)
    gate = asyncio.Semaphore(max(1, plan.concurrency))

    async def one(arm: str, question: Question) -> None:
        async with gate:
            record = await answer(plan, model, environments, toolboxes, scorer, arm, question)
        writer.write(record)
        totals.done += 1
        totals.correct += int(record["ex"])
        totals.cost += record["exploration"].get("cost") or 0.0
        totals.failed += record["outcome"] == "error"
        totals.by_arm.setdefault(arm, [0, 0])
        totals.by_arm[arm][0] += 1
        totals.by_arm[arm][1] += int(record["ex"])
        if status is not None:
            status(totals.done, totals.total, totals.status())

    if status is not None:
        status(0, totals.total, totals.status())
    try:
        for arm, question in tasks:
            await toolboxes.open(question, arm)
        await asyncio.gather(*(one(arm, q) for arm, q in tasks))
    finally:
        await toolboxes.aclose()
        await asyncio.to_thread(scorer.close)
        await asyncio.to_thread(environments.close)
    return totals


async def answer(
    plan: RunPlan,
    model: ModelClient,
    environments: Environments,
    toolboxes: Toolboxes,
    scorer: Scorer,
    arm: str,
    question: Question,
) -> dict[str, Any]:
    """Solve one question in one arm, score the final SQL, measure the exploration: the record."""
    from sophrosyne.agent import solve

    started = time.perf_counter()
    knowledge: str | None = question.knowledge or None
    if arm == "coarse":
        knowledge = coarse_knowledge(question, await asyncio.to_thread(environments.schema, question.db_id))
    outcome: Outcome | None = None
    failure: str | None = None
    async with AsyncExitStack() as stack:
        if arm in PER_QUESTION:
            env = await asyncio.to_thread(environments.for_question, question, arm)
            tools = await stack.enter_async_context(BenchTools(env))
        else:
            tools = toolboxes.shared(question, arm)
            env = tools.env
        try:
            solving = solve(
                question.question, knowledge, tools=tools, settings=plan.settings, solver=plan.solver, model=model
            )
            outcome = await asyncio.wait_for(solving, timeout=plan.question_timeout_s)
        except TimeoutError:
            failure = f"the question took longer than {plan.question_timeout_s:g} s"
        except Exception as exc:  # a model or transport failure: recorded, and redone by a rerun
            failure = f"{type(exc).__name__}: {str(getattr(exc, 'message', '') or exc)[:300]}"
    wall = time.perf_counter() - started
    final_sql = outcome.sql if outcome is not None and outcome.kind == "answer" else None
    verdict = await asyncio.to_thread(scorer.score_sql, question, final_sql)
    catalog = env.catalog
    gold = gold_tables_of(question.sql, catalog, plan.suite.dialect)
    steps = outcome.trace.steps if outcome is not None else []
    exploration = measure(
        [(s.name, s.arguments) for s in steps if s.kind == "tool"],
        gold=gold,
        final_sql=final_sql,
        catalog=catalog,
        dialect=env.dialect,
        extra_tables=[t for s in steps if s.kind == "program" for t in s.tables],
        tokens_in=outcome.usage.prompt_tokens if outcome else 0,
        tokens_out=outcome.usage.completion_tokens if outcome else 0,
        wall_s=wall,
        cost=outcome.cost if outcome else None,
    )
    return {
        "key": record_key(arm, question.id),
        "dataset": plan.suite.name,
        "arm": arm,
        "solver": plan.solver,
        "model": model.model,
        "question_id": question.id,
        "db_id": question.db_id,
        "difficulty": question.difficulty,
        "question": question.question,
        "knowledge": question.knowledge,
        "gold_sql": question.sql,
        "gold_tables": sorted(gold),
        "outcome": "error" if failure else outcome.kind if outcome else "error",
        "reason": failure or (outcome.reason if outcome else None),
        "sql": final_sql,
        "result": {"columns": outcome.columns, "rows": outcome.rows[:20]} if outcome else None,
        "ex": verdict.ex,
        "soft_f1": verdict.soft_f1,
        "score_error": verdict.error,
        "directives": tools.directives.get((question.question, question.knowledge or ""), []),
        "exploration": exploration.to_json(),
        "usage_estimated": outcome.usage.estimated if outcome else False,
        "trace": [s.to_json() for s in steps],
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
