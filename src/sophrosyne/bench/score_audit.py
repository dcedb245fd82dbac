"""An external agent's exploration, from the audit log of `sophrosyne serve`, attached to its scored answers."""

from __future__ import annotations

from pathlib import Path

from sophrosyne.bench.data.types import Suite
from sophrosyne.bench.exploration import gold_tables_of, measure
from sophrosyne.bench.predictions import Predictions
from sophrosyne.bench.score import Verdict
from sophrosyne.bench.sessions import Matched, match_sessions


def attach_audit(
    verdicts: list[Verdict], suite: Suite, predictions: Predictions, audit: Path, session_map: Path | None = None
) -> Matched:
    """Set each verdict's exploration from the calls its question received; questions the log never
    reached keep none."""
    matched = match_sessions(audit, [v.question for v in verdicts], session_map)
    for verdict in verdicts:
        work = matched.work.get(verdict.question.id)
        if work is None:
            continue
        question = verdict.question
        catalog = suite.catalogs.get(question.db_id)
        dialect = suite.dialect
        verdict.exploration = measure(
            work.calls,
            gold=gold_tables_of(question.sql, catalog, dialect),
            final_sql=predictions.sql.get(question.id),
            catalog=catalog,
            dialect=dialect,
            response_tokens=work.response_tokens,
            wall_s=work.wall_s,
        ).to_json()
    return matched
