"""Spider-Syn in both wordings: the same questions, the databases that ship, and a split by database's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.registry import load_dataset
from sophrosyne.bench.data.spider_syn import held_out, load_spider_syn
from sophrosyne.bench.directives_bench import select_questions, tuning_split
from sophrosyne.directives import fitted_model
from sophrosyne.errors import ConfigError


def test_both_wordings_hold_the_same_questions_on_the_databases_that_ship() -> None:
    shared_datasets("spider_syn", "spider")
    synonym, original = load_dataset("spider-syn"), load_dataset("spider-syn-original")
    assert [(q.id, q.db_id, q.sql) for q in synonym.questions] == [(q.id, q.db_id, q.sql) for q in original.questions]
    assert len(synonym.questions) == 6904 and len(synonym.catalogs) == 138
    # Spider ships no SQLite file for baseball_1 and soccer_1: their 96 questions are skipped, with the reason.
    assert len(synonym.skipped) == 96 and {s["db_id"] for s in synonym.skipped} == {"baseball_1", "soccer_1"}
    assert set(synonym.database_files) == set(synonym.catalogs)
    reworded = [s for s, o in zip(synonym.questions, original.questions, strict=True) if s.question != o.question]
    assert 4500 < len(reworded) < 4801  # 4,801 of the 7,000 differ, a few on the missing databases
    first = synonym.questions[0]
    assert first.question == "How many leaders of the divisions are older than 56 ?"
    assert original.questions[0].question == "How many heads of the departments are older than 56 ?"


def test_a_third_of_the_databases_is_held_out_by_their_names() -> None:
    shared_datasets("spider_syn", "spider")
    dataset = load_dataset("spider-syn")
    split = tuning_split(dataset, fitted_model())
    assert split is not None
    tune, holdout = split
    assert (len(holdout), len(tune)) == (49, 89)
    assert all(held_out(db) for db in holdout) and not any(held_out(db) for db in tune)
    held = select_questions(dataset, "holdout", split, None)
    assert len(held) == 2436 and {q.db_id for q in held} == set(holdout)
    assert not {q.db_id for q in select_questions(dataset, "tune", split, None)} & set(holdout)


def test_an_unknown_wording_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown Spider-Syn wording"):
        load_spider_syn(tmp_path, "spider-syn-reversed")
