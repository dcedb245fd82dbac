"""Directives through the Environment: list_tables names irrelevant tables, reminders follow, roles are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.openai_server import chat_reply, scripted_server
from sophrosyne.cli.app import demo_path
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError
from sophrosyne.settings import Settings

POLICY = Path(__file__).parents[2] / "examples" / "policy.toml"
QUESTION = "How many employees enrolled in each training course?"
KNOWLEDGE = "enrolled refers to training_enrollments; course refers to training_courses.title"


def open_demo(tmp_path: Path, role: str | None = None, **overrides: object) -> Environment:
    settings = Settings.load(None, cache_dir=tmp_path / "cache", **overrides)
    return Environment.open(demo_path(), settings=settings, role_name=role)


def test_directives_name_tables_the_answer_does_not_need(tmp_path: Path) -> None:
    env = open_demo(tmp_path)
    listed = env.list_tables(question=QUESTION, knowledge=KNOWLEDGE)
    flagged = {d.table for d in listed.directives}
    assert flagged, "a clear question over 12 tables should prune some"
    assert not flagged & {"training_enrollments", "training_courses"}
    assert all(d.reason and d.confidence in ("high", "medium") for d in listed.directives)
    assert env.list_tables().directives == []  # no question, no directives


def test_reminders_on_tables_a_directive_named(tmp_path: Path) -> None:
    env = open_demo(tmp_path)
    flagged = [d.table for d in env.list_tables(question=QUESTION, knowledge=KNOWLEDGE).directives]
    named = flagged[0]
    assert env.describe_table(named).reminder and named in (env.describe_table(named).reminder or "")
    assert named in (env.execute_sql(f'SELECT COUNT(*) FROM "{named}"').reminder or "")
    assert env.describe_table("training_courses").reminder is None


def test_mode_none_gives_no_directives_and_oracle_follows_the_gold_sql(tmp_path: Path) -> None:
    assert open_demo(tmp_path, directives="none").list_tables(question=QUESTION).directives == []
    oracle = open_demo(tmp_path, directives="oracle")
    with pytest.raises(ConfigError, match="reference SQL"):
        oracle.list_tables(question=QUESTION)
    oracle.set_oracle("SELECT c.title, COUNT(*) FROM training_enrollments e JOIN training_courses c USING (course_id)")
    flagged = {d.table for d in oracle.list_tables(question=QUESTION).directives}
    assert flagged == set(oracle.catalog.tables) - {"training_enrollments", "training_courses"}


def test_search_schema_and_directives_respect_the_role(tmp_path: Path) -> None:
    env = open_demo(tmp_path, "trainer", policy_file=POLICY)
    hits = env.search_schema("salary band of an employee", k=20).hits
    assert hits and {h.table for h in hits} <= {"employees", "training_courses", "training_enrollments"}
    assert "salary_band" not in {h.column for h in hits}
    listed = env.list_tables(question="What is the salary of each manager?", knowledge="salary refers to salaries")
    assert {d.table for d in listed.directives} <= set(env.catalog.tables)
    assert "salaries" not in {t.name for t in listed.tables}


def test_a_configured_model_infers_column_names(tmp_path: Path) -> None:
    columns = "training_enrollments.completed_on\ntraining_courses.title"
    with scripted_server(lambda path, body: chat_reply(columns)) as (url, received):
        env = open_demo(tmp_path, llm_base_url=url, llm_model="small")
        listed = env.list_tables(question="When did people finish their courses?")
        assert received and "When did people finish their courses?" in received[-1]["messages"][0]["content"]
        assert not {d.table for d in listed.directives} & {"training_enrollments", "training_courses"}
        with pytest.raises(ConfigError, match="llm_model"):
            open_demo(tmp_path, llm_base_url=url).list_tables(question="anything")


@pytest.mark.parametrize("question", ["hello there", "What is the answer?"])
def test_no_directives_when_nothing_in_the_question_points_anywhere(tmp_path: Path, question: str) -> None:
    listed = open_demo(tmp_path).list_tables(question=question)
    assert listed.directives == []
    assert listed.directive_note and "nothing in the question" in listed.directive_note


def test_concurrent_first_questions_share_one_index_build(tmp_path: Path) -> None:
    # A server's first clients arrive together on a cold cache: one moderator, one index, no half-saved files.
    from concurrent.futures import ThreadPoolExecutor

    env = open_demo(tmp_path, timeout_s=60)
    with ThreadPoolExecutor(8) as pool:
        listed = list(pool.map(lambda _: env.list_tables(question=QUESTION, knowledge=KNOWLEDGE), range(8)))
    assert all({d.table for d in x.directives} == {d.table for d in listed[0].directives} for x in listed)
    assert listed[0].directives
    saved = list((tmp_path / "cache" / "schema").iterdir())
    assert len(saved) == 1 and (saved[0] / "manifest.json").exists()
