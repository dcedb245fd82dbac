"""The decision over scored tables: bridges on join paths between tables it is sure of, unless nothing points to
them; a short question held to a higher threshold."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sophrosyne.directives import DirectiveSettings, decide_directives, fitted_model, keep_threshold, score_tables
from sophrosyne.index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table


def chain() -> Catalog:
    """students -> enrolments -> courses, and two unrelated tables. Enrolments has columns of its own (a grade, a
    term, a date): a bridge, not a linking table made of its keys alone (those are kept whenever both ends are)."""
    tables = [
        Table("students", [Column("id", "INTEGER"), Column("name", "TEXT")]),
        Table(
            "enrolments",
            [
                Column("student_id", "INTEGER"),
                Column("course_id", "INTEGER"),
                Column("grade", "INTEGER"),
                Column("term", "INTEGER"),
                Column("enrolled_on", "DATE"),
            ],
            foreign_keys=[ForeignKey(["student_id"], "students", ["id"]), ForeignKey(["course_id"], "courses", ["id"])],
        ),
        Table("courses", [Column("id", "INTEGER"), Column("title", "TEXT")]),
        Table("rooms", [Column("id", "INTEGER"), Column("floor", "INTEGER")]),
        Table("staff", [Column("id", "INTEGER"), Column("salary", "REAL")]),
    ]
    return Catalog(tables={t.name: t for t in tables})


def decided(link_score: float) -> list[str]:
    c = chain()
    scored = score_tables("Which students take the course Algebra?", None, c, SchemaIndex.build(c))
    scores = {"students": 0.9, "courses": 0.8, "enrolments": link_score, "rooms": 0.01, "staff": 0.01}
    for table, entry in scored.board.items():
        entry.score = scores[table]
    settings = DirectiveSettings(threshold=0.2, question_threshold=0.2)
    return decide_directives(scored, settings).relevant


def test_a_bridge_between_two_sure_ends_is_kept_whatever_the_model_gives_it() -> None:
    assert decided(0.05) == ["courses", "enrolments", "students"]  # below the threshold, kept as the bridge
    assert decided(0.001) == ["courses", "enrolments", "students"]  # the only route between them


def bridged(
    course_score: float, question: str = "Which students take the course Algebra?", power: float = 0.0
) -> list[str]:
    """students (the best) and courses kept; is the link between them kept as a bridge?"""
    c = chain()
    scored = score_tables(question, None, c, SchemaIndex.build(c))
    scores = {"students": 0.9, "courses": course_score, "enrolments": 0.05, "rooms": 0.01, "staff": 0.01}
    for table, entry in scored.board.items():
        entry.score = scores[table]
    return decide_directives(scored, with_power(power)).relevant


def with_power(power: float) -> DirectiveSettings:
    """Thresholds of 0.2, a short question's raised by (12 / its words) ** power."""
    model = fitted_model()
    model = replace(model, without_knowledge=replace(model.without_knowledge, short_power=power))
    return DirectiveSettings(
        model=model, threshold=0.2, question_threshold=0.2, bridge_ends=2.5, long_question_words=12
    )


def test_a_bridge_joins_only_tables_the_decision_is_sure_of() -> None:
    assert bridged(0.5) == ["courses", "enrolments", "students"]  # 2.5 x the threshold: a sure end
    # Kept on a middling score, courses is as unsure as a path to it: the link is not kept for it.
    assert bridged(0.3) == ["courses", "students"]


def test_a_short_question_without_knowledge_is_held_to_a_higher_threshold() -> None:
    c = chain()
    index = SchemaIndex.build(c)
    settings = with_power(0.3)
    three = score_tables("Which students take Algebra?", None, c, index)
    assert three.question_words == 3
    assert keep_threshold(three, settings) == pytest.approx(0.2 * (12 / 3) ** 0.3)
    seven = score_tables("Which students older than twenty take Algebra with Smith on Mondays?", None, c, index)
    assert seven.question_words == 7
    assert keep_threshold(seven, settings) == pytest.approx(0.2 * (12 / 7) ** 0.3)
    # Knowledge says what the question means: the fitted threshold stands.
    known = score_tables("Which students take Algebra?", "Algebra refers to title = 'Algebra'", c, index)
    assert keep_threshold(known, settings) == 0.2
    # ... as it does for a short question whose bridge ends are judged: at the fitted threshold, not the raised one.
    assert bridged(0.5, "Which students take the course Algebra?", power=0.3) == ["courses", "enrolments", "students"]
