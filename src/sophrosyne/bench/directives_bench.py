"""The directives benchmark: none, directives, oracle and the paper's method on every question, in one run."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sophrosyne.bench.baselines import PAPER_LLM_TOP1, PAPER_RULES_TOP1, paper_llm_top1, paper_rules_top1
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.bench.perturb import read_values
from sophrosyne.directives import (
    DirectiveModel,
    DirectiveSettings,
    LLMColumnInference,
    decide_directives,
    gold_tables,
    score_tables,
)
from sophrosyne.directives.knowledge import with_inferred_columns
from sophrosyne.directives.prepared import PreparedSchema, prepare_schema
from sophrosyne.directives.scoring import warm
from sophrosyne.errors import ConfigError
from sophrosyne.index.embedders import Embedder, default_embedder
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.values import ValueIndex
from sophrosyne.schema.catalog import Catalog
from sophrosyne.schema.joins import without_keys

SYSTEMS = ("none", "directives", "oracle", PAPER_RULES_TOP1)
LLM_SYSTEMS = ("directives_llm", PAPER_LLM_TOP1)  # run only with a model for column inference
SPLITS = ("all", "tune", "holdout")
CURVE_THRESHOLDS = (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.13, 0.14, 0.15, 0.16, 0.18, 0.2, 0.25, 0.3)
Tick = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ModelEndpoint:
    """An OpenAI-compatible endpoint whose model infers column names (the paper's inexpensive LLM)."""

    base_url: str
    model: str
    api_key: str | None = None

    def used(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "api_key": "set" if self.api_key else None}


@dataclass
class Outcome:
    """One question under one system; for `directives`, also what it flags at each threshold of the curve."""

    question: Question
    system: str
    gold: set[str]
    tables: list[str]
    flagged: set[str]
    latency_ms: float = 0.0
    abstained: bool = False
    swept: dict[float, set[str]] = field(default_factory=dict)


@dataclass
class BenchRun:
    """Every outcome of one run, with the options it used and the tuning split of its dataset (if any)."""

    dataset: str
    systems: tuple[str, ...] = SYSTEMS
    outcomes: list[Outcome] = field(default_factory=list)
    index_build_s: float = 0.0
    value_index_build_s: float = 0.0
    skipped: list[dict[str, str]] = field(default_factory=list)
    tuning: tuple[list[str], list[str]] | None = None  # (databases the model was tuned on, the held-out rest)
    settings: dict[str, Any] = field(default_factory=dict)


def tuning_split(dataset: Dataset, model: DirectiveModel) -> tuple[list[str], list[str]] | None:
    """The databases of `dataset` tuned on and the held-out rest: those the model was fitted on (its origin
    in model.json names the dataset and databases), else the split the dataset fixes itself (Spider-Syn, whose
    tuning part only the word resources are tuned on); None if there is neither."""
    tuned: set[str] = set()
    if model.origin.get("dataset") == dataset.name:
        tuned = set(model.origin.get("tuning_databases", ())) & set(dataset.catalogs)
    elif dataset.tuning_databases is not None:
        tuned = set(dataset.tuning_databases) & set(dataset.catalogs)
    if not tuned:
        return None
    return sorted(tuned), sorted(set(dataset.catalogs) - tuned)


def prepare_dataset(dataset: Dataset, drop_keys: bool = False) -> dict[str, PreparedSchema]:
    """Each database's schema as directives see it (units, inferred joins), every declared key removed first
    with `drop_keys`. No database is queried: joins rest on names and types."""
    return {
        db_id: prepare_schema(without_keys(catalog) if drop_keys else catalog)
        for db_id, catalog in sorted(dataset.catalogs.items())
    }


def question_gold(dataset: Dataset, q: Question, catalog: Catalog) -> set[str]:
    """The tables a question's gold SQL reads: resolved by the loader when it did, else parsed as SQLite."""
    if q.id in dataset.gold:
        return set(dataset.gold[q.id])
    return gold_tables(q.sql, catalog)


def build_indexes(
    dataset: Dataset, embedder: Embedder, tick: Tick | None = None, values: bool = True
) -> tuple[dict[str, SchemaIndex], dict[str, ValueIndex], float, float]:
    indexes: dict[str, SchemaIndex] = {}
    started = time.perf_counter()
    names = sorted(dataset.catalogs)
    for i, db_id in enumerate(names):
        indexes[db_id] = SchemaIndex.build(dataset.catalogs[db_id], embedder=embedder)
        warm(dataset.catalogs[db_id], indexes[db_id])
        if tick:
            tick("index", i + 1, len(names))
    index_s = time.perf_counter() - started
    value_indexes: dict[str, ValueIndex] = {}
    started = time.perf_counter()
    if values:
        for db_id, path in sorted(dataset.database_files.items()):
            value_indexes[db_id] = read_values(dataset.catalogs[db_id], path, dataset.source_names.get(db_id))
    return indexes, value_indexes, index_s, time.perf_counter() - started


def select_questions(
    dataset: Dataset, split: str, tuning: tuple[list[str], list[str]] | None, limit: int | None
) -> list[Question]:
    """The questions of a split (`tune`, `holdout` or `all`), the first `limit` of them."""
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}.", hint="Use all, tune or holdout.")
    if split != "all" and tuning is None:
        raise ConfigError(
            f"the directive model was never tuned on {dataset.name}, so it has no {split} split.",
            hint="Use --split all: every question of this dataset is held out.",
        )
    questions = dataset.questions
    if tuning is not None and split != "all":
        databases = set(tuning[0] if split == "tune" else tuning[1])
        questions = [q for q in questions if q.db_id in databases]
    return questions[:limit] if limit is not None else questions


def run_directives_bench(
    dataset: Dataset,
    settings: DirectiveSettings | None = None,
    split: str = "all",
    embedder: Embedder | None = None,
    tick: Tick | None = None,
    limit: int | None = None,
    knowledge: bool = True,
    llm: ModelEndpoint | None = None,
    drop_keys: bool = False,
) -> BenchRun:
    """Every system on every selected question; `run.settings` records each option as this run used it."""
    settings = settings or DirectiveSettings()
    embedder = embedder or default_embedder()
    tuning = tuning_split(dataset, settings.model)
    questions = select_questions(dataset, split, tuning, limit)
    if not knowledge:
        questions = [replace(q, knowledge="") for q in questions]
    run = BenchRun(dataset.name, systems=SYSTEMS + (LLM_SYSTEMS if llm else ()), tuning=tuning)
    run.settings = {
        "dataset": dataset.name,
        "split": split,
        "limit": limit,
        "knowledge": knowledge,
        "embedder": embedder.name,
        **settings.used(),
        "llm": llm.used() if llm else None,
        "drop_keys": drop_keys,
        "perturbation": dataset.perturbation,
    }
    run.skipped = list(dataset.skipped)
    used = {q.db_id for q in questions}
    originals = {k: v for k, v in dataset.catalogs.items() if k in used}
    prepared = prepare_dataset(Dataset(dataset.name, [], originals), drop_keys)
    run.settings["join_inference"] = _joins_used(prepared)
    subset = Dataset(
        dataset.name,
        questions,
        {k: p.catalog for k, p in prepared.items()},
        {k: v for k, v in dataset.database_files.items() if k in used},
        source_names=dataset.source_names,
    )
    indexes, values, run.index_build_s, run.value_index_build_s = build_indexes(subset, embedder, tick)
    inference = LLMColumnInference(llm.base_url, llm.model, api_key=llm.api_key) if llm else None
    for n, q in enumerate(questions):
        schema = prepared[q.db_id]
        catalog: Catalog = schema.catalog
        unit_of = schema.units.unit_of()
        tables = sorted(set(unit_of.values()))
        try:
            gold = {unit_of.get(t, t) for t in question_gold(dataset, q, originals[q.db_id])}
        except Exception as exc:  # a gold query sqlglot cannot parse is reported, not scored
            run.skipped.append({"id": q.id, "db_id": q.db_id, "error": str(exc)[:200]})
            continue
        gold &= set(tables)
        run.outcomes.append(Outcome(q, "none", gold, tables, set()))
        run.outcomes.append(Outcome(q, "oracle", gold, tables, set(tables) - gold))
        index, value_index = indexes[q.db_id], values.get(q.db_id)

        def units_of(names: list[str], unit_of: dict[str, str] = unit_of) -> set[str]:
            return {unit_of.get(t, t) for t in names}

        started = time.perf_counter()
        scored = score_tables(q.question, q.knowledge, catalog, index, value_index, settings, schema.units)
        directives = decide_directives(scored, settings, schema.units)
        latency = (time.perf_counter() - started) * 1000
        swept = {
            t: units_of(
                decide_directives(scored, replace(settings, threshold=t, question_threshold=t), schema.units).flagged
            )
            for t in CURVE_THRESHOLDS
        }
        run.outcomes.append(
            Outcome(q, "directives", gold, tables, units_of(directives.flagged), latency, directives.abstained, swept)
        )
        started = time.perf_counter()
        paper = paper_rules_top1(q.question, q.knowledge, catalog, index)
        latency = (time.perf_counter() - started) * 1000
        run.outcomes.append(Outcome(q, PAPER_RULES_TOP1, gold, tables, units_of(paper.flagged), latency))
        if inference is not None:
            run.outcomes += _with_model(inference, q, gold, schema, index, value_index, settings)
        if tick:
            tick("questions", n + 1, len(questions))
    return run


def _joins_used(prepared: dict[str, PreparedSchema]) -> dict[str, Any]:
    """What the run's join inference rested on, for the report."""
    joins = [j for p in prepared.values() for j in p.joins.joins]
    return {
        "inferred": len(joins),
        "databases": len(prepared),
        "evidence": "names and types only: the bench reaches no database to confirm joins by values",
    }


def _with_model(
    inference: LLMColumnInference,
    q: Question,
    gold: set[str],
    schema: PreparedSchema,
    index: SchemaIndex,
    value_index: ValueIndex | None,
    settings: DirectiveSettings,
) -> list[Outcome]:
    """Directives with the model's column names as anchors, and the paper's top-1 over the same names; the
    model call counts in the latency of both."""
    catalog = schema.catalog
    unit_of = schema.units.unit_of()
    tables = sorted(set(unit_of.values()))
    started = time.perf_counter()
    names = inference.infer(q.question, q.knowledge, catalog)
    call_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    knowledge = with_inferred_columns(q.knowledge, names)
    scored = score_tables(q.question, knowledge, catalog, index, value_index, settings, schema.units)
    directives = decide_directives(scored, settings, schema.units)
    directives_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    paper = paper_llm_top1(q.question, names, catalog, index)
    paper_ms = (time.perf_counter() - started) * 1000
    return [
        Outcome(
            q,
            "directives_llm",
            gold,
            tables,
            {unit_of.get(t, t) for t in directives.flagged},
            call_ms + directives_ms,
            directives.abstained,
        ),
        Outcome(q, PAPER_LLM_TOP1, gold, tables, {unit_of.get(t, t) for t in paper.flagged}, call_ms + paper_ms),
    ]
