"""The explorer-first solver: list tables with the question, describe, ground every filter value, run, verify."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sophrosyne.agent.outcome import Clarification, Outcome, Step, Trace
from sophrosyne.agent.review import review_query
from sophrosyne.agent.toolbox import Toolbox, ToolOutput, no_tool, rows_of
from sophrosyne.base.data_blocks import block_contents
from sophrosyne.errors import QueryFailed
from sophrosyne.llm import Conversation, ModelClient, ToolCall, ToolSpec
from sophrosyne.settings import Settings

SYSTEM = """\
You answer a question about a relational database by exploring it with read-only tools, explorer-first:
1. Start from the tables listed for you. Directives name tables that are likely irrelevant to this question:
   leave them alone unless the knowledge clearly needs them.
2. describe_table the few likely tables: columns, keys, real sample values.
3. Ground every filter value before you use it in SQL: get_distinct_values(table, column, search=...) or
   find_rows(term). Use the exact stored value: columns often hold codes, not labels.
   If several stored values could be what the question means and nothing in the question or knowledge picks
   one, call ask_clarification with the term and those values. If nothing matches, call ask_clarification
   with the term and no candidates.
4. Run your query with the SQL tool, read the result and fix what is wrong.
5. When the result answers the question, call final_answer with the SQL and one sentence of explanation.
   If the database cannot answer the question, call give_up with the reason."""

CONTROL = [
    ToolSpec(
        "final_answer",
        "Finish with the SQL that answers the question (it is run once more to show the result).",
        {
            "type": "object",
            "properties": {
                "sql": {"type": "string", "description": "One read-only SELECT."},
                "explanation": {"type": "string", "description": "One sentence: what the query counts or lists."},
            },
            "required": ["sql"],
        },
    ),
    ToolSpec(
        "ask_clarification",
        "Ask the user which stored value a term of the question means (or to restate it if nothing matched).",
        {
            "type": "object",
            "properties": {
                "term": {"type": "string", "description": "The ambiguous words of the question."},
                "candidates": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The values the data holds that could match (from value search).",
                },
                "question": {"type": "string", "description": "The question to put to the user."},
            },
            "required": ["term", "candidates"],
        },
    ),
    ToolSpec(
        "give_up",
        "Stop: the database cannot answer the question.",
        {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
    ),
]
GROUNDING_TOOLS = ("get_distinct_values", "find_rows")
# Tools whose answers quote the question or its words back (directives' reasons, schema matches): what they
# show grounds nothing.
_ECHOING_TOOLS = ("list_tables", "search_schema")
# Literals that are not labels to look up: numbers, dates and times.
_NOT_A_LABEL = re.compile(r"^[\d\s.:+\-/TZ%]*$")


@dataclass
class _Run:
    """The state of one explorer run, kept in a clarify outcome so that `resume` can continue it."""

    question: str
    knowledge: str | None
    conversation: Conversation
    trace: Trace
    seen: list[str] = field(default_factory=list)
    warned: set[str] = field(default_factory=set)
    failures: int = 0
    revised: bool = False
    checked_empty: bool = False
    pending: ToolCall | None = None


class Explorer:
    """The explorer loop over any toolbox, with a tool-call budget, bounded retries and an optional reviewer."""

    name = "explorer"

    def __init__(
        self,
        model: ModelClient,
        tools: Toolbox,
        settings: Settings | None = None,
        *,
        review: bool = False,
        on_step: Callable[[Step], None] | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.settings = settings or model.settings
        self.review = review
        self.on_step = on_step

    async def solve(self, question: str, knowledge: str | None = None) -> Outcome:
        system = SYSTEM + (
            f"\n\nThe server's instructions:\n{self.tools.instructions}" if self.tools.instructions else ""
        )
        run = _Run(question, knowledge, Conversation(system), Trace(self.on_step))
        opening = f"Question: {question}\nKnowledge: {knowledge or '(none)'}"
        if self.tools.has("list_tables"):
            arguments = {"question": question, **({"knowledge": knowledge} if knowledge else {})}
            listed = await self._call(run, "list_tables", arguments)
            opening += f"\n\nlist_tables returned:\n{listed.text}"
        run.conversation.user(opening)
        return await self._loop(run)

    async def resume(self, outcome: Outcome, answer: str) -> Outcome:
        """Continue a run that asked for clarification, with the user's answer."""
        run = outcome.state
        if not isinstance(run, _Run) or run.pending is None:
            raise QueryFailed("this outcome cannot be resumed.", hint="Resume only an outcome of kind `clarify`.")
        run.conversation.tool_result(run.pending, f"The user answered: {answer}")
        run.seen.append(answer)
        run.pending = None
        return await self._loop(run)

    # -- the loop ------------------------------------------------------------------------------------------

    async def _loop(self, run: _Run) -> Outcome:
        specs = [*self.tools.specs, *CONTROL]
        silent = 0
        for _ in range(self.settings.agent.tool_calls * 2 + 10):
            if run.trace.tool_calls >= self.settings.agent.tool_calls:
                return self._gave_up(run, f"the tool-call budget ({self.settings.agent.tool_calls}) is spent.")
            reply = await self.model.chat(run.conversation, specs)
            run.conversation.assistant(reply)
            run.trace.model(reply, "explore")
            if not reply.tool_calls:
                silent += 1
                if silent > 2:
                    return self._gave_up(run, "the model stopped calling tools without a final answer.")
                run.conversation.user("Continue with a tool call; call final_answer when the result answers it.")
                continue
            for call in reply.tool_calls:
                outcome = await self._handle(run, call)
                if outcome is not None:
                    return outcome
        return self._gave_up(run, "the model kept going without an answer.")

    async def _handle(self, run: _Run, call: ToolCall) -> Outcome | None:
        if call.bad_arguments is not None:
            self._refuse(run, call, "ERROR: the arguments were not a JSON object; call the tool again.")
            return None
        control = [spec.name for spec in CONTROL]
        if call.name not in control and not self.tools.has(call.name):
            self._refuse(run, call, "ERROR: " + no_tool(call.name, [s.name for s in self.tools.specs] + control))
            return None
        if call.name == "give_up":
            return self._gave_up(run, str(call.arguments.get("reason") or "the model gave up."))
        if call.name == "ask_clarification":
            return self._clarify(run, call)
        sql = self._sql_of(call)
        if sql is not None:
            unverified = self._ungrounded(run, sql)
            if unverified:
                run.warned.update(unverified)
                values = ", ".join(repr(v) for v in unverified)
                self._refuse(
                    run,
                    call,
                    f"Not run: {values} was not grounded in the data. Look it up first with "
                    "get_distinct_values(table, column, search=...) or find_rows(term), then use the stored value.",
                )
                return None
        if call.name == "final_answer":
            return await self._final(run, call)
        output = await self._call(run, call.name, call.arguments)
        text = output.text
        if output.is_error:
            text = f"ERROR: {text}"
            if sql is not None:
                run.failures += 1
                if run.failures > self.settings.agent.retries:
                    return self._gave_up(run, f"the query kept failing: {output.text.strip()[:300]}")
        run.conversation.tool_result(call, text)
        return None

    async def _final(self, run: _Run, call: ToolCall) -> Outcome | None:
        sql = str(call.arguments.get("sql") or "").strip()
        if not sql:
            run.conversation.tool_result(call, "ERROR: final_answer needs the SQL.")
            return None
        output = self._record(run, await self.tools.call_sql(sql))
        if output.is_error:
            run.failures += 1
            if run.failures > self.settings.agent.retries:
                return self._gave_up(run, f"the final query kept failing: {output.text.strip()[:300]}")
            run.conversation.tool_result(call, f"ERROR: the final SQL failed: {output.text}\nFix it and call again.")
            return None
        try:
            table = rows_of(output)
        except QueryFailed as exc:
            return self._gave_up(run, exc.message)
        if not table.rows and not run.checked_empty:
            # Verify: an empty result usually means a filter value that is not stored as written.
            run.checked_empty = True
            run.conversation.tool_result(
                call,
                "The query returned no rows. Check each filter value against the data; if empty is the right "
                "answer, call final_answer again with the same SQL.",
            )
            return None
        review = None
        if self.review:
            review = await review_query(
                self.model, run.trace, run.question, run.knowledge, sql, table.columns, table.rows
            )
            if review.verdict == "block":
                outcome = self._gave_up(run, f"blocked by the reviewer: {review.reason}")
                outcome.review = review
                return outcome
            if review.verdict == "revise" and not run.revised:
                run.revised = True
                run.conversation.tool_result(
                    call, f"A reviewer asks for a revision: {review.reason}\nRevise the query and call final_answer."
                )
                return None
        return Outcome(
            "answer",
            run.question,
            self.name,
            run.trace,
            sql=sql,
            columns=table.columns,
            rows=table.rows,
            explanation=str(call.arguments.get("explanation") or ""),
            review=review,
            notes=table.notes,
        )

    def _clarify(self, run: _Run, call: ToolCall) -> Outcome:
        term = str(call.arguments.get("term") or "").strip()
        offered = call.arguments.get("candidates") or []
        seen = "\n".join(run.seen)
        # Only values the data showed: a model must not offer the user values it made up.
        candidates = [str(c) for c in offered if isinstance(c, str | int | float) and str(c) in seen]
        question = str(call.arguments.get("question") or "").strip()
        if not question:
            listed = ", ".join(candidates)
            question = (
                f"Which one do you mean by '{term}': {listed}?"
                if candidates
                else f"I found nothing matching '{term}'. Could you say it differently?"
            )
        run.pending = call
        return Outcome(
            "clarify",
            run.question,
            self.name,
            run.trace,
            clarification=Clarification(term, candidates, question),
            state=run,
        )

    def _refuse(self, run: _Run, call: ToolCall, answer: str) -> None:
        """Answer a call without running it; the trace keeps it as a refused step."""
        run.trace.refused(
            call.name, call.arguments if call.bad_arguments is None else {"raw": call.bad_arguments}, answer
        )
        run.conversation.tool_result(call, answer)

    def _gave_up(self, run: _Run, reason: str) -> Outcome:
        return Outcome("gave_up", run.question, self.name, run.trace, reason=reason)

    async def _call(self, run: _Run, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return self._record(run, await self.tools.call(name, arguments))

    def _record(self, run: _Run, output: ToolOutput) -> ToolOutput:
        run.trace.tool(output)
        if not output.is_error:
            run.seen.append(returned_data(output))
        return output

    def _sql_of(self, call: ToolCall) -> str | None:
        if call.name == "final_answer" or call.name == self.tools.sql_tool:
            value = call.arguments.get("sql", call.arguments.get("query"))
            return str(value) if value else None
        return None

    def _ungrounded(self, run: _Run, sql: str) -> list[str]:
        """String literals compared with `=`/`IN` that no tool result, knowledge or user answer showed."""
        if not any(self.tools.has(t) for t in GROUNDING_TOOLS):
            return []
        seen = "\n".join([*run.seen, run.knowledge or ""])
        return [v for v in compared_literals(sql) if v not in seen and v not in run.warned]


def returned_data(output: ToolOutput) -> str:
    """What the data returned in a tool's answer, as text to ground values on: never the answer's own words.

    A header echoes the call's arguments ("matching 'Finance Dept'", "rows containing 'X'") and directive
    reasons quote the question, so a value found only there was not found in the data. Sophrosyne puts data in
    blocks; another server's structured rows count; a plain-text answer of another server counts whole, less
    the arguments it echoes."""
    if output.name in _ECHOING_TOOLS:
        return ""
    blocks = block_contents(output.text)
    if blocks:
        return "\n".join(blocks)
    arguments = [v for v in output.arguments.values() if isinstance(v, str) and v]
    if output.data is not None:
        # A top-level field that repeats an argument (the search term, the SQL as executed) is an echo.
        return "\n".join(
            leaf
            for value in output.data.values()
            if not (isinstance(value, str) and any(a in value for a in arguments))
            for leaf in _leaves(value)
        )
    text = output.text
    for argument in arguments:
        text = text.replace(argument, "")
    return text


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None else [str(value)]


def compared_literals(sql: str) -> list[str]:
    """String values a query filters on by equality or IN (labels to look up, not numbers or dates)."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql)
    except sqlglot.errors.SqlglotError:
        return []
    values: list[str] = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        for literal in node.find_all(exp.Literal):
            if literal.is_string and literal.this and not _NOT_A_LABEL.match(literal.this):
                values.append(literal.this)
    return sorted(dict.fromkeys(values), key=sql.find)
