"""A quality floor for directives on real questions: a fixed sample of BIRD dev and Spider dev.

The floors are the figures measured on this sample on 2026-12-01 (main at b1d332e, and the same after the
directives became a package), with a small margin: a change that names gold tables more often, or prunes much
less, fails here before anyone runs the full bench.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.registry import load_dataset
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.directives import compute_directives, gold_tables
from sophrosyne.index import SchemaIndex, ValueBudget, ValueIndex

SAMPLE = 200  # questions per dataset
SEED = 9


@dataclass
class Floor:
    unsafe: int  # most questions of the sample where a directive may name a gold table
    prune: float  # least share of the non-gold tables the directives must name


# Measured: BIRD dev 3 unsafe questions of 200 (safe rate 0.985), prune 0.680; Spider dev 4 of 200 (0.980),
# prune 0.578. The margin: one more unsafe question (half a point of safe rate), 3 points less prune.
FLOORS = {"bird-dev": Floor(unsafe=4, prune=0.65), "spider-dev": Floor(unsafe=5, prune=0.548)}


def sample(dataset: Dataset) -> list[Question]:
    """A seeded sample; for BIRD dev, of the questions on its three databases that ship their data (so that
    values are grounded as in use)."""
    pool = [q for q in dataset.questions if not dataset.database_files or q.db_id in dataset.database_files]
    return random.Random(SEED).sample(pool, SAMPLE)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_directives_rarely_name_a_gold_table(name: str) -> None:
    shared_datasets("bird_dev", "spider")
    dataset = load_dataset(name)
    indexes: dict[str, SchemaIndex] = {}
    values: dict[str, ValueIndex] = {}
    unsafe, pruned, non_gold = [], 0, 0
    for q in sample(dataset):
        catalog = dataset.catalogs[q.db_id]
        if q.db_id not in indexes:
            indexes[q.db_id] = SchemaIndex.build(catalog)
            if q.db_id in dataset.database_files:
                path = dataset.database_files[q.db_id]
                values[q.db_id] = ValueIndex.from_sqlite(catalog, path, ValueBudget(seconds=10.0))
        gold = gold_tables(q.sql, catalog) & set(catalog.tables)
        flagged = set(
            compute_directives(q.question, q.knowledge, catalog, indexes[q.db_id], values.get(q.db_id)).flagged
        )
        if gold & flagged:
            unsafe.append(f"{q.id} ({q.db_id}): {sorted(gold & flagged)}")
        pruned += len(flagged - gold)
        non_gold += len(catalog.tables) - len(gold)
    floor = FLOORS[name]
    assert len(unsafe) <= floor.unsafe, f"{len(unsafe)} questions had a gold table flagged: {unsafe}"
    assert pruned / non_gold >= floor.prune, f"prune rate {pruned / non_gold:.3f} is below {floor.prune}"
