"""Directives at warehouse scale: the work a question costs does not grow with the number of tables, and the
shortcuts that keep it so (shared entries, top-k by partition) give what visiting every table would."""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest

from sophrosyne.base.words import tokenize
from sophrosyne.directives import compute_directives, score_tables
from sophrosyne.index import SchemaIndex
from sophrosyne.index.fusion import top_ranked
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table

WORDS = [
    "order",
    "customer",
    "price",
    "amount",
    "rate",
    "count",
    "region",
    "product",
    "store",
    "date",
    "status",
    "total",
    "city",
    "level",
    "score",
]


def warehouse(tables: int, seed: int = 0) -> Catalog:
    """Tables of five columns named from a small vocabulary, so a question's words are in many of them."""
    rng = random.Random(seed)
    out: dict[str, Table] = {}
    for t in range(tables):
        name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{t}"
        columns = [Column(f"{name}_id", "INTEGER", primary_key=True)]
        columns += [Column(f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{c}", "TEXT") for c in range(4)]
        previous = list(out)[-1] if out else None
        keys = [ForeignKey([columns[1].name], previous, [f"{previous}_id"])] if previous else []
        out[name] = Table(name, columns, primary_key=[columns[0].name], foreign_keys=keys)
    return Catalog(tables=out)


QUESTIONS = (
    "What is the average price of each product by region?",
    "How many orders has each customer placed per store and date?",
    "Which city has the highest total score and level?",
    "Show the status count of amount rate",
)


@pytest.mark.slow  # a benchmark of scale (200 and 2,000 tables): CI runs it on its own (.ci/run)
def test_entries_scored_per_question_do_not_grow_with_tables() -> None:
    # Each distinct entry is one computation of features, probability and reason: with 10 times the tables,
    # a question should cost about the same number, not 10 times as many.
    work = {}
    for size in (200, 2000):
        c = warehouse(size)
        index = SchemaIndex.build(c)
        work[size] = [len(score_tables(q, None, c, index).board.own()) for q in QUESTIONS]
    for small, large in zip(work[200], work[2000], strict=True):
        assert large <= 2 * small + 150, work
    assert sum(work[2000]) < 2000 * len(QUESTIONS) / 4, work


def test_shared_entries_give_each_table_its_own_word_features() -> None:
    c = warehouse(600, seed=1)
    index = SchemaIndex.build(c)
    lexicon = lexicon_for(c)
    for question in QUESTIONS:
        scored = score_tables(question, None, c, index)
        board = scored.board
        assert len(board.own()) < len(c.tables)  # tables were shared, or this checks nothing
        words = set(tokenize(question))
        holders = {w: sum(w in lexicon.table_words[t] for t in c.tables) for w in words}
        named = {t for t, e in board.items() if e.features.get("anchor") or e.features.get("table_named")}
        for table, entry in board.items():
            own = words & lexicon.table_words[table]
            assert entry.features["own_cover"] == len(own) / len(words)
            assert entry.features["only_cover"] == len({w for w in own if holders[w] == 1}) / len(words)
            others = {w for w in words if holders[w] - (w in own) > 0}
            assert entry.features["others_cover"] == len(others) / len(words)
            assert entry.features.get("neighbor", 0.0) == (1.0 if lexicon.graph[table] & named else 0.0)
        directives = compute_directives(question, None, c, index)
        assert set(directives.flagged) | set(directives.relevant) == set(c.tables)
        assert directives.scores == {t: e.score for t, e in board.items()}


@pytest.mark.slow  # 2,000 tables: CI runs it on its own (.ci/run)
def test_flagged_tables_leave_no_tracked_object_each() -> None:
    # Thousands of flagged tables kept as objects piled up in the collector's oldest generation and set off a
    # full collection (half a second beside a warehouse index) every score of questions.
    c = warehouse(2000, seed=2)
    index = SchemaIndex.build(c)
    compute_directives(QUESTIONS[0], None, c, index)  # what is derived once per schema is derived now
    gc.collect()
    before = len(gc.get_objects())
    directives = compute_directives(QUESTIONS[1], None, c, index)
    gc.collect()
    assert len(directives.irrelevant) > 1000
    assert len(gc.get_objects()) - before < 100
    first = directives.irrelevant[0]
    assert first == next(iter(directives.irrelevant)) and first.table in directives.flagged
    assert directives.irrelevant[:2] == list(directives.irrelevant)[:2]
    confidences = [d.confidence for d in directives.irrelevant]
    assert confidences == sorted(confidences, reverse=True)


def test_top_ranked_is_the_stable_full_sort() -> None:
    rng = np.random.default_rng(0)
    for trial in range(300):
        # Small rows are sorted whole; rows past 2,048 items are partitioned first: both are checked.
        size = int(rng.integers(1, 400) if trial % 2 else rng.integers(2000, 6000))
        rows, depth = int(rng.integers(1, 4)), int(rng.integers(1, 60))
        if trial % 3 == 0:
            scores = rng.standard_normal((rows, size)).astype(np.float32)
        elif trial % 3 == 1:  # many ties
            scores = rng.integers(-1, 3, (rows, size)).astype(np.float32)
        else:  # mostly zeros, as BM25 over a wide schema
            scores = np.where(rng.random((rows, size)) < 0.05, rng.random((rows, size)), 0.0).astype(np.float32)
        for positive_only in (False, True):
            expected = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
            if positive_only:
                expected = np.where(np.take_along_axis(scores, expected, axis=1) > 0, expected, -1)
            assert np.array_equal(top_ranked(scores, depth, positive_only), expected)
