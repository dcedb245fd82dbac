"""Reasons agree with decisions on every question of every benchmark set: a flagged table's reason never says the
question names, resembles or holds something of it (that would be a reason to keep it), a question some of whose
words found no table never gets a `high` directive, and abstentions name the words that found none. Slow (every
question of six sets): `pytest -m slow -n 0 tests/directives/test_directive_reasons_everywhere.py`."""

from __future__ import annotations

import re

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.registry import load_dataset
from sophrosyne.bench.data.types import Dataset
from sophrosyne.bench.directives_bench import build_indexes, prepare_dataset
from sophrosyne.directives import DirectiveSettings, decide_directives, score_tables
from sophrosyne.index.embedders import default_embedder

DATASETS = {
    "bird-dev": ("bird_dev",),
    "spider-dev": ("spider",),
    "spider-syn": ("spider_syn", "spider"),
    "spider2-cloud": ("spider2_lite",),
    "text2sql-classic": ("text2sql_classic",),
}
# What a reason to keep a table says: a flagged table's reason must say none of it.
_EVIDENCE = re.compile(r"resembles|names it|names its|holds the value|the knowledge (?:says|names)|its shards")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_every_flagged_reason_agrees_with_the_decision(name: str) -> None:
    shared_datasets(*DATASETS[name])
    dataset = load_dataset(name)
    prepared = prepare_dataset(dataset)
    subset = Dataset(
        dataset.name, dataset.questions, {k: p.catalog for k, p in prepared.items()}, dataset.database_files
    )
    indexes, values, _, _ = build_indexes(subset, default_embedder())
    settings = DirectiveSettings()
    contradictions: list[str] = []
    flagged = abstained = 0
    for q in dataset.questions:
        schema = prepared[q.db_id]
        scored = score_tables(
            q.question, q.knowledge, schema.catalog, indexes[q.db_id], values.get(q.db_id), settings, schema.units
        )
        directives = decide_directives(scored, settings, schema.units)
        unexplained = scored.account.unexplained
        entries = scored.board.resolved()
        if directives.abstained:
            abstained += 1
            if unexplained and scored.account.unexplained_share >= 0.5 and not scored.abstain_note:
                assert all(w in directives.note for w in unexplained[:6]), (q.question, directives.note)
            continue
        for d in directives.irrelevant:
            flagged += 1
            # A shard group is named by its pattern; its members share one entry.
            entry = entries.get(d.table) or next((entries[m] for m in d.members if m in entries), None)
            if _EVIDENCE.search(d.reason):
                contradictions.append(f"{q.question} -> {d.table}: {d.reason}")
            elif unexplained and d.tier == "high":
                contradictions.append(f"{q.question} -> {d.table} high though {unexplained} found no table")
            elif entry is not None and entry.values and d.tier == "high":
                contradictions.append(f"{q.question} -> {d.table} high though it holds {entry.values}")
    assert flagged > 0 and abstained < len(dataset.questions)
    assert not contradictions, "\n".join(contradictions[:20])
