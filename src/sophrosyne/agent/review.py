"""The reviewer: a second model call that approves, asks to revise, or blocks a query, in strict JSON."""

from __future__ import annotations

import json
from typing import Any

from sophrosyne.agent.outcome import Review, Trace
from sophrosyne.errors import ModelError
from sophrosyne.llm import Conversation, ModelClient, Reply, parse_json

REVIEWER = """\
You review a SQL query written to answer a question about a database. Check that it answers the question as
asked: the right tables and joins, filters on the values the data holds, no double counting (COUNT(*) over a
join that repeats rows), the right aggregation and grouping. Reply with strict JSON only, nothing else:
{"verdict": "approve" | "revise" | "block", "reason": "<one or two sentences>"}
approve: the query answers the question. revise: it is wrong in a way the author can fix (say how).
block: it must not be used (it cannot answer this question from this data, or it exposes data it should not)."""

VERDICTS = ("approve", "revise", "block")


async def review_query(
    model: ModelClient,
    trace: Trace,
    question: str,
    knowledge: str | None,
    sql: str,
    columns: list[str],
    rows: list[list[Any]],
) -> Review:
    """Ask the reviewer once (and once more if the reply is not the strict JSON asked for). A reviewer that
    fails does not stop the answer: the guard and the policy still control what runs."""
    conversation = Conversation(REVIEWER)
    preview = json.dumps({"columns": columns, "rows": rows[:10], "row_count": len(rows)}, default=str)
    conversation.user(
        f"Question: {question}\nKnowledge: {knowledge or '(none)'}\nSQL:\n{sql}\nResult (first rows):\n{preview}"
    )
    reply: Reply | None = None
    for _ in range(2):
        try:
            reply = await model.chat(conversation)
        except ModelError as exc:
            return _recorded(trace, Review("approve", f"not reviewed: {exc.message}", valid=False), None)
        verdict = _parse(reply.text)
        if verdict is not None:
            return _recorded(trace, verdict, reply)
        trace.usage.add(reply.usage)
        conversation.assistant(reply)
        conversation.user('Reply with strict JSON only: {"verdict": "approve" | "revise" | "block", "reason": "..."}')
    return _recorded(trace, Review("approve", "not reviewed: the reviewer did not reply in JSON", valid=False), reply)


def _parse(text: str) -> Review | None:
    value = parse_json(text)
    if not isinstance(value, dict):
        return None
    verdict = str(value.get("verdict", value.get("decision", ""))).strip().lower()
    if verdict not in VERDICTS:
        return None
    return Review(verdict, str(value.get("reason", "")).strip())  # type: ignore[arg-type]


def _recorded(trace: Trace, review: Review, reply: Reply | None) -> Review:
    trace.review(review.verdict, review.reason, reply)
    return review
