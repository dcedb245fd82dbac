"""An external agent's audit log (`sophrosyne serve --audit-log`) cut into one piece of work per question.

A session is one server process (stdio) or one client (HTTP). Within a session, the calls after a
`list_tables` whose `question` argument is a question of the dataset belong to that question, up to the next
such call; an explicit map `{question_id: session}` assigns whole sessions instead."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sophrosyne.audit import AuditRecord, read_records
from sophrosyne.bench.data.types import Question
from sophrosyne.errors import ConfigError


@dataclass
class Work:
    """The tool calls one question received, in order."""

    question_id: str
    sessions: list[str] = field(default_factory=list)
    records: list[AuditRecord] = field(default_factory=list)

    @property
    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(r.tool, dict(r.arguments)) for r in self.records]

    @property
    def response_tokens(self) -> int:
        return sum(r.response_tokens or 0 for r in self.records)

    @property
    def wall_s(self) -> float:
        """From the first call's start to the last call's end."""
        starts = [_time(r.time) for r in self.records if r.time]
        if not starts:
            return sum(r.ms for r in self.records) / 1000
        ends = [_time(r.time) + r.ms / 1000 for r in self.records if r.time]
        return max(ends) - min(starts)


@dataclass
class Matched:
    """Work per question, and what could not be placed."""

    work: dict[str, Work]
    unmatched_calls: int = 0
    unmatched_sessions: list[str] = field(default_factory=list)
    bad_lines: int = 0


def _time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def match_sessions(path: Path, questions: list[Question], session_map: Path | None = None) -> Matched:
    """Cut an audit log into each question's work (see the module docstring)."""
    if not Path(path).is_file():
        raise ConfigError(f"no audit log at {path}.", hint="Pass the file `sophrosyne serve --audit-log` wrote.")
    by_text: dict[str, str] = {}
    for q in questions:
        by_text.setdefault(_key(q.question), q.id)
    known = {q.id for q in questions}
    assigned: dict[str, str] = {}
    if session_map is not None:
        try:
            mapping = json.loads(Path(session_map).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the session map {session_map}: {exc}.") from None
        if not isinstance(mapping, dict):
            raise ConfigError(f"the session map {session_map} must be a JSON object {{question_id: session}}.")
        for question_id, session in mapping.items():
            if str(question_id) not in known:
                raise ConfigError(f"the session map names question {question_id!r}, which this run does not have.")
            assigned[str(session)] = str(question_id)
    matched = Matched({})
    current: dict[str, str | None] = {}  # session -> question its calls now belong to
    sessions_seen: list[str] = []
    placed_sessions: set[str] = set()
    for record in read_records(path):
        if record is None:
            matched.bad_lines += 1
            continue
        session = record.session
        if session not in current:
            sessions_seen.append(session)
            current[session] = assigned.get(session)
        if session not in assigned and record.tool == "list_tables":
            asked = record.arguments.get("question")
            if isinstance(asked, str) and _key(asked) in by_text:
                current[session] = by_text[_key(asked)]
        question_id = current[session]
        if question_id is None:
            matched.unmatched_calls += 1
            continue
        work = matched.work.setdefault(question_id, Work(question_id))
        if session not in work.sessions:
            work.sessions.append(session)
        work.records.append(record)
        placed_sessions.add(session)
    matched.unmatched_sessions = [s for s in sessions_seen if s not in placed_sessions]
    return matched
