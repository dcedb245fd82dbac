"""The FlexSQL solver: diverse plans, grounded SQL or Python programs, repair and backtracking, then a vote."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

from sophrosyne.agent.outcome import Candidate, Outcome, Step, Trace, read_tables
from sophrosyne.agent.toolbox import Toolbox, ToolOutput, no_tool, rows_of
from sophrosyne.agent.voting import question_orders, tables_match, vote
from sophrosyne.errors import ProgramFailed, QueryFailed, SandboxUnavailable
from sophrosyne.llm import Conversation, ModelClient, ToolCall, ToolSpec, parse_json
from sophrosyne.sandbox.executor import ProgramResult, PythonExecutor
from sophrosyne.sandbox.rows import Rows
from sophrosyne.settings import Settings
from sophrosyne.tools.base import render_error

# The longest program error the model is shown for a repair (its traceback, in a data block: it may quote data).
PROGRAM_ERROR_CHARS = 4000

PLANNER = """\
You plan how to answer a question over a relational database. Write {k} plans, each for a different reading
of the question (the tables, joins, filters and aggregation that reading implies), and say how likely each
reading is what the user means (probabilities summing to about 1). Reply with JSON only:
{{"plans": [{{"reading": "...", "probability": 0.6, "plan": "tables, joins, filters, output columns",
"language": "sql" or "python"}}]}}
{languages}"""

PROGRAMMER = """\
You implement one plan for a question over a relational database. Ground it first with the tools:
describe_table for columns, get_distinct_values or find_rows for every filter value (use the stored value),
the SQL tool to test parts. Then call submit_program once: language "sql" (one read-only SELECT){python}.
If the data shows the plan cannot work, revise the plan in one sentence and implement the revised plan."""

PYTHON_NOTE = (
    ' or "python" (a program where sql(query) returns a pandas DataFrame and pd is pandas; '
    "assign the answer to `result`)"
)

TRANSLATOR = """\
Translate a Python program into one read-only SQL query that returns the same table: the same columns in the
same order and the same rows. Use only tables and columns the program's sql() calls read. Reply with the SQL
only, in a ```sql block."""

PLAN_ERRORS = {
    "empty": "returned no rows",
    "null": "returned only NULL values",
}


class FlexSQL:
    """K plans from one model call, each grounded and implemented concurrently, repaired on code errors and
    sent back to its plan on plan errors; a majority vote over the results picks the answer."""

    name = "flex"

    def __init__(
        self,
        model: ModelClient,
        tools: Toolbox,
        settings: Settings | None = None,
        *,
        executor: PythonExecutor | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.settings = settings or model.settings
        self.executor = executor
        self.on_step = on_step

    async def solve(self, question: str, knowledge: str | None = None) -> Outcome:
        trace = Trace(self.on_step)
        notes: list[str] = []
        context = f"Question: {question}\nKnowledge: {knowledge or '(none)'}"
        if self.tools.has("list_sources"):
            context += "\n\n" + (await self._call(trace, "list_sources", {})).text
        if self.tools.has("list_tables"):
            arguments = {"question": question, **({"knowledge": knowledge} if knowledge else {})}
            context += "\n\nlist_tables returned:\n" + (await self._call(trace, "list_tables", arguments)).text
        python = self.executor is not None and self.tools.sql_tool is not None
        plans = await self._plans(trace, context, python)
        if not plans:
            return Outcome("gave_up", question, self.name, trace, reason="the model wrote no plan in JSON.")
        candidates = await asyncio.gather(
            *(self._implement(trace, context, i, plan, python) for i, plan in enumerate(plans, 1))
        )
        ordered = question_orders(question)
        groups = vote(list(candidates), ordered=ordered)
        if not groups:
            errors = "; ".join(f"plan {c.plan}: {c.error}" for c in candidates)
            return Outcome(
                "gave_up",
                question,
                self.name,
                trace,
                reason=f"no plan produced a result ({errors})",
                candidates=list(candidates),
            )
        winners = groups[0]
        best = next((c for c in winners if c.language == "sql"), winners[0])
        outcome = Outcome(
            "answer",
            question,
            self.name,
            trace,
            sql=best.code if best.language == "sql" else None,
            columns=best.columns,
            rows=best.rows,
            explanation=f"{len(winners)} of {len(candidates)} plans agree; reading: {best.reading}",
            language=best.language,
            program=best.code,
            candidates=list(candidates),
            notes=notes,
        )
        if best.language == "python":
            outcome.sql = await self._translate(trace, context, best, ordered, notes)
        return outcome

    # -- plans -----------------------------------------------------------------------------------------------

    async def _plans(self, trace: Trace, context: str, python: bool) -> list[dict[str, Any]]:
        k = self.settings.agent.flex_plans
        languages = (
            "Choose python when the plan needs multi-step transformations awkward in SQL."
            if python
            else 'Use "sql" for every plan (Python is not available here).'
        )
        conversation = Conversation(PLANNER.format(k=k, languages=languages))
        conversation.user(context)
        for _ in range(2):
            reply = await self.model.chat(conversation)
            trace.model(reply, "plan")
            value = parse_json(reply.text)
            raw = value.get("plans") if isinstance(value, dict) else value
            if isinstance(raw, list):
                plans = [p for p in raw if isinstance(p, dict) and (p.get("plan") or p.get("reading"))]
                if plans:
                    return plans[:k]
            conversation.assistant(reply)
            conversation.user('Reply with JSON only: {"plans": [{"reading": ..., "probability": ..., "plan": ...}]}')
        return []

    async def _implement(self, trace: Trace, context: str, index: int, plan: dict[str, Any], python: bool) -> Candidate:
        reading = str(plan.get("reading") or plan.get("plan"))
        try:
            probability = float(plan.get("probability") or 0.0)
        except (TypeError, ValueError):
            probability = 0.0
        candidate = Candidate(index, reading, probability, "sql", "")
        languages = ["sql", "python"] if python else ["sql"]
        submit = ToolSpec(
            "submit_program",
            "Submit the program that implements the plan; it is run and its result joins the vote.",
            {
                "type": "object",
                "properties": {
                    "language": {"type": "string", "enum": languages},
                    "code": {"type": "string", "description": "The SQL query or the Python program."},
                },
                "required": ["language", "code"],
            },
        )
        specs = [*self.tools.specs, submit]
        conversation = Conversation(PROGRAMMER.format(python=PYTHON_NOTE if python else ""))
        conversation.user(
            f"{context}\n\nYour plan (reading: {reading}):\n{plan.get('plan') or reading}\n"
            f"Suggested language: {plan.get('language') or 'sql'}."
        )
        budget = max(6, self.settings.agent.tool_calls // max(1, self.settings.agent.flex_plans))
        calls = repairs = backtracks = 0
        for _ in range(budget * 2 + 8):
            reply = await self.model.chat(conversation, specs)
            conversation.assistant(reply)
            trace.model(reply, "program", plan=index)
            if not reply.tool_calls:
                conversation.user("Continue with a tool call, or submit_program when the plan is grounded.")
                continue
            for call in reply.tool_calls:
                refusal = self._refusal(call, [s.name for s in specs])
                if refusal is not None:
                    trace.refused(call.name, call.arguments, refusal, plan=index)
                    conversation.tool_result(call, refusal)
                    continue
                if call.name != "submit_program":
                    calls += 1
                    if calls > budget:
                        conversation.tool_result(call, "The tool budget of this plan is spent: submit_program now.")
                        continue
                    output = await self._call(trace, call.name, call.arguments, index)
                    conversation.tool_result(call, f"ERROR: {output.text}" if output.is_error else output.text)
                    continue
                candidate.language = str(call.arguments.get("language") or "sql").lower()
                candidate.code = str(call.arguments.get("code") or "")
                candidate.columns, candidate.rows, candidate.error = [], [], None
                error = await self._execute(trace, candidate, index)
                if error is not None:
                    repairs += 1
                    if repairs > self.settings.agent.retries:
                        candidate.error = error
                        return candidate
                    conversation.tool_result(call, f"The program failed: {error}\nFix the code and submit again.")
                    continue
                problem = plan_error(candidate.rows)
                if problem and backtracks == 0:
                    backtracks += 1
                    conversation.tool_result(
                        call,
                        f"The program ran but {PLAN_ERRORS[problem]}: the plan is probably wrong for this data "
                        "(a table, a filter value or a join). Go back to the plan: explore again, state the revised "
                        "plan in one sentence, then submit a new program.",
                    )
                    continue
                return candidate
        candidate.error = candidate.error or "the plan ran out of turns without a program."
        return candidate

    async def _execute(self, trace: Trace, candidate: Candidate, plan: int) -> str | None:
        """Run a candidate's program; its columns and rows on success, else the error for a repair."""
        if candidate.language == "python":
            if self.executor is None:
                return "Python is not available here: submit SQL."
            started = time.perf_counter()
            try:
                ran = await self._python(trace, candidate.code, plan)
            except SandboxUnavailable as exc:
                self.executor = None  # refuse Python from now on rather than run it less isolated
                trace.program("python", candidate.code, 0.0, None, exc.message, plan)
                return f"{exc.message} Submit SQL instead."
            except ProgramFailed as exc:
                ms = (time.perf_counter() - started) * 1000
                trace.program("python", candidate.code, ms, None, exc.full_message, plan)
                return render_error(exc, PROGRAM_ERROR_CHARS) + (f"\nIts output:\n{exc.output}" if exc.output else "")
            tables = sorted({t for q in ran.sql_calls for t in read_tables(q)})
            trace.program("python", candidate.code, ran.ms, len(ran.rows), None, plan, tables)
            candidate.columns, candidate.rows = ran.columns, ran.rows
            return None
        output = await self.tools.call_sql(candidate.code)
        trace.tool(output, plan)
        if output.is_error:
            return output.text.strip()
        try:
            table = rows_of(output)
        except QueryFailed as exc:
            return exc.message
        candidate.columns, candidate.rows = table.columns, table.rows
        return None

    async def _python(self, trace: Trace, code: str, plan: int | None) -> ProgramResult:
        """The program runs in a worker thread; each of its sql() calls comes back to this event loop and goes
        down the toolbox's secured path (Environment.execute_sql in-process, the SQL tool of a server)."""
        import anyio.from_thread
        import anyio.to_thread

        executor = self.executor
        assert executor is not None

        async def traced(query: str) -> Rows:
            started = time.perf_counter()
            try:
                rows = await self.tools.sql(query)
            except QueryFailed as exc:
                trace.tool(ToolOutput("sql()", {"sql": query}, exc.message, is_error=True), plan)
                raise
            ms = (time.perf_counter() - started) * 1000
            trace.tool(ToolOutput("sql()", {"sql": query}, "", {"row_count": len(rows.rows)}, ms=ms), plan)
            return rows

        def sql(query: str) -> Rows:
            return anyio.from_thread.run(traced, query)

        return await anyio.to_thread.run_sync(executor.run, code, sql)

    async def _translate(
        self, trace: Trace, context: str, winner: Candidate, ordered: bool, notes: list[str]
    ) -> str | None:
        """SQL for a Python winner, kept only when its result equals the Python result."""
        conversation = Conversation(TRANSLATOR)
        conversation.user(f"{context}\n\nThe program:\n```python\n{winner.code}\n```")
        for _ in range(2):
            reply = await self.model.chat(conversation)
            trace.model(reply, "translate")
            conversation.assistant(reply)
            sql = extract_sql(reply.text)
            if not sql:
                conversation.user("Reply with the SQL only, in a ```sql block.")
                continue
            output = await self.tools.call_sql(sql)
            trace.tool(output)
            if output.is_error:
                conversation.user(f"The SQL failed: {output.text.strip()}\nFix it.")
                continue
            table = rows_of(output)
            if tables_match(winner.rows, table.rows, ordered=ordered) and len(table.columns) == len(winner.columns):
                notes.append("the Python answer was translated to SQL with the same result")
                return sql
            preview = json.dumps(table.rows[:5], default=str)
            conversation.user(f"Its result differs from the program's (first rows: {preview}). Fix the SQL.")
        notes.append("no SQL translation gave the Python result: the answer is the Python program's")
        return None

    def _refusal(self, call: ToolCall, offered: list[str]) -> str | None:
        """Why a call is answered without running it: arguments that were not JSON, or no such tool."""
        if call.bad_arguments is not None:
            return "ERROR: the arguments were not a JSON object; call the tool again."
        if call.name not in offered:
            return "ERROR: " + no_tool(call.name, offered)
        return None

    async def _call(self, trace: Trace, name: str, arguments: dict[str, Any], plan: int | None = None) -> ToolOutput:
        output = await self.tools.call(name, arguments)
        trace.tool(output, plan)
        return output


def plan_error(rows: list[list[Any]]) -> str | None:
    """A result that usually means a wrong plan rather than wrong code: nothing, or only NULLs."""
    if not rows:
        return "empty"
    if all(v is None for r in rows for v in r):
        return "null"
    return None


def extract_sql(text: str) -> str | None:
    fenced = re.search(r"```(?:sql)?\s*(.*?)```", text, re.DOTALL | re.IGNORECASE)
    if fenced:
        return fenced.group(1).strip() or None
    value = parse_json(text)
    if isinstance(value, dict) and isinstance(value.get("sql"), str):
        return str(value["sql"]).strip()
    stripped = text.strip()
    return stripped if re.match(r"(?is)^(select|with)\b", stripped) else None
