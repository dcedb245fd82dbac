"""Reasons agree with decisions, on a sample of every shared dataset: no flagged table is said to hold a value
of the question, and none that holds one is flagged for it. Spider 2.0's sample is `slow` (reading its 88 DDL
catalogs took most of this file's time: the suite's longest test); CI runs it with the slow directive checks
(`.ci/run`)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.base.text import normalize
from sophrosyne.bench.data.registry import load_dataset
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.directives import compute_directives
from sophrosyne.directives.knowledge import capitalised_phrases, quoted_literals
from sophrosyne.directives.prepared import prepare_schema
from sophrosyne.index import SchemaIndex, ValueBudget, ValueIndex
from sophrosyne.schema.catalog import Catalog

SAMPLE = 60  # questions per dataset
SEED = 18
DATASETS = {
    "bird-dev": ("bird_dev",),
    "spider-dev": ("spider",),
    "spider-syn": ("spider_syn", "spider"),
    "spider-syn-original": ("spider_syn", "spider"),
    "spider2-cloud": ("spider2_lite",),
}
_NAMED = re.compile(r"'([^']+)'")


def sample(dataset: Dataset) -> list[Question]:
    """Questions on databases that ship their data where some do (values are grounded as in use); on Spider
    2.0 (no data, catalogs of up to 785 tables), a third of the sample, on catalogs of 5 to 20 tables, for speed."""
    pool = [q for q in dataset.questions if not dataset.database_files or q.db_id in dataset.database_files]
    if not dataset.database_files:
        pool = [q for q in pool if 5 <= len(dataset.catalogs[q.db_id].tables) <= 20]
        return random.Random(SEED).sample(pool, min(SAMPLE // 3, len(pool)))
    return random.Random(SEED).sample(pool, min(SAMPLE, len(pool)))


def holds(table: str, value: str, catalog: Catalog, values: ValueIndex | None) -> bool:
    """Whether the table holds the value: in its data (the value index), or in a column's value description."""
    if values is not None and any(t == table for t, _ in values.lookup(value)):
        return True
    needle = normalize(value)
    return any(needle in c.value_description.lower() for c in catalog.tables[table].columns)


@pytest.fixture(scope="module")
def value_indexes() -> dict[tuple[str, str], ValueIndex]:
    """Value indexes by database file and catalog: Spider dev and its two Spider-Syn wordings read the same
    databases, whose indexes took most of their time, built once for the three."""
    return {}


def value_index(catalog: Catalog, path: Path, built: dict[tuple[str, str], ValueIndex]) -> ValueIndex:
    shape = repr(sorted((t.name, [(c.name, c.type) for c in t.columns]) for t in catalog.tables.values()))
    key = (str(path), shape)
    if key not in built:
        built[key] = ValueIndex.from_sqlite(catalog, path, ValueBudget(seconds=10.0))
    return built[key]


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "spider2-cloud" else n for n in sorted(DATASETS)]
)
def test_no_flagged_table_is_said_to_hold_a_value_of_the_question(
    name: str, value_indexes: dict[tuple[str, str], ValueIndex]
) -> None:
    shared_datasets(*DATASETS[name])
    dataset = load_dataset(name)
    indexes: dict[str, tuple[Catalog, SchemaIndex, ValueIndex | None]] = {}
    contradictions, flagged_count, holding = [], 0, 0
    for q in sample(dataset):
        if q.db_id not in indexes:
            prepared = prepare_schema(dataset.catalogs[q.db_id])
            path = dataset.database_files.get(q.db_id)
            values = value_index(prepared.catalog, path, value_indexes) if path else None
            indexes[q.db_id] = (prepared.catalog, SchemaIndex.build(prepared.catalog), values)
        catalog, index, values = indexes[q.db_id]
        directives = compute_directives(q.question, q.knowledge, catalog, index, values)
        written = quoted_literals(q.question) + quoted_literals(q.knowledge) + capitalised_phrases(q.question)
        for d in directives.irrelevant:
            flagged_count += 1
            named = [v for v in _NAMED.findall(d.reason) if holds(d.table, v, catalog, values)]
            if "holds the value" in d.reason or named:
                contradictions.append(f"{q.id}: {d.table}: {d.reason}")
            # A quoted literal or a name of the question that only this table holds keeps it.
            for value in written:
                if holds(d.table, value, catalog, values):
                    holders = [t for t in catalog.tables if holds(t, value, catalog, values)]
                    holding += 1
                    if len(holders) == 1:
                        contradictions.append(f"{q.id}: {d.table} alone holds '{value}' and is flagged")
    assert flagged_count > 0, "the sample flagged nothing: it checks nothing"
    assert not contradictions, "\n".join(contradictions)
