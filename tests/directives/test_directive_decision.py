"""The decision over scored tables: bridges on join paths between kept tables, unless nothing points to them."""

from __future__ import annotations

from sophrosyne.directives import DirectiveSettings, decide_directives, score_tables
from sophrosyne.index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table


def chain() -> Catalog:
    """students -> enrolments -> courses, and two unrelated tables."""
    tables = [
        Table("students", [Column("id", "INTEGER"), Column("name", "TEXT")]),
        Table(
            "enrolments",
            [Column("student_id", "INTEGER"), Column("course_id", "INTEGER")],
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
    settings = DirectiveSettings(threshold=0.2, question_threshold=0.2, bridge_floor=0.1)
    return decide_directives(scored, settings).relevant


def test_a_bridge_is_kept_unless_the_model_gives_it_almost_nothing() -> None:
    assert decided(0.05) == ["courses", "enrolments", "students"]  # below the threshold, kept as the bridge
    assert decided(0.019) == ["courses", "students"]  # below a tenth of it: no route through it
