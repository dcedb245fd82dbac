"""The directives benchmark: none / directives / oracle / paper on every question, in one run."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sophrosyne.bench.baselines import paper_rules_top1
from sophrosyne.bench.datasets import Dataset, Question
from sophrosyne.catalog import Catalog
from sophrosyne.directives import (
    DirectiveSettings,
    decide_directives,
    gold_tables,
    score_tables,
)
from sophrosyne.index.embedders import Embedder, default_embedder
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.values import ValueBudget, ValueIndex

SYSTEMS = ("none", "directives", "oracle", "paper")
TUNE_DATABASES = 6
CURVE_THRESHOLDS = (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.13, 0.14, 0.15, 0.16, 0.18, 0.2, 0.25, 0.3)
Tick = Callable[[str, int, int], None]


@dataclass
class Outcome:
    """One question under one system."""

    question: Question
    system: str
    gold: set[str]
    tables: list[str]
    flagged: set[str]
    latency_ms: float = 0.0
    abstained: bool = False


@dataclass
class BenchRun:
    dataset: str
    outcomes: list[Outcome] = field(default_factory=list)
    index_build_s: float = 0.0
    value_index_build_s: float = 0.0
    skipped: list[dict[str, str]] = field(default_factory=list)
    curve: list[dict[str, float]] = field(default_factory=list)
    tune_databases: list[str] = field(default_factory=list)
    holdout_databases: list[str] = field(default_factory=list)


def split_databases(db_ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """Tuning databases: the alphabetically first six; the rest are held out."""
    ordered = sorted(set(db_ids))
    return ordered[:TUNE_DATABASES], ordered[TUNE_DATABASES:]


def build_indexes(
    dataset: Dataset, embedder: Embedder, tick: Tick | None = None, values: bool = True
) -> tuple[dict[str, SchemaIndex], dict[str, ValueIndex], float, float]:
    indexes: dict[str, SchemaIndex] = {}
    started = time.perf_counter()
    names = sorted(dataset.catalogs)
    for i, db_id in enumerate(names):
        indexes[db_id] = SchemaIndex.build(dataset.catalogs[db_id], embedder=embedder)
        if tick:
            tick("index", i + 1, len(names))
    index_s = time.perf_counter() - started
    value_indexes: dict[str, ValueIndex] = {}
    started = time.perf_counter()
    if values:
        for db_id, path in sorted(dataset.database_files.items()):
            value_indexes[db_id] = ValueIndex.from_sqlite(dataset.catalogs[db_id], path, ValueBudget(seconds=10.0))
    return indexes, value_indexes, index_s, time.perf_counter() - started


def run_directives_bench(
    dataset: Dataset,
    settings: DirectiveSettings | None = None,
    split: str = "all",
    embedder: Embedder | None = None,
    tick: Tick | None = None,
    limit: int | None = None,
    knowledge: bool = True,
) -> BenchRun:
    settings = settings or DirectiveSettings()
    embedder = embedder or default_embedder()
    tune, holdout = split_databases(dataset.catalogs)
    questions = dataset.questions
    if split == "tune":
        questions = [q for q in questions if q.db_id in tune]
    elif split == "holdout":
        questions = [q for q in questions if q.db_id in holdout]
    if limit is not None:
        questions = questions[:limit]
    if not knowledge:
        questions = [replace(q, knowledge="") for q in questions]
    run = BenchRun(dataset.name, tune_databases=tune, holdout_databases=holdout)
    used = {q.db_id for q in questions}
    subset = Dataset(
        dataset.name,
        questions,
        {k: v for k, v in dataset.catalogs.items() if k in used},
        {k: v for k, v in dataset.database_files.items() if k in used},
    )
    indexes, values, run.index_build_s, run.value_index_build_s = build_indexes(subset, embedder, tick)
    sweep: dict[float, list[tuple[set[str], set[str], int]]] = {t: [] for t in CURVE_THRESHOLDS}
    for n, q in enumerate(questions):
        catalog: Catalog = subset.catalogs[q.db_id]
        tables = list(catalog.tables)
        try:
            gold = gold_tables(q.sql, catalog)
        except Exception as exc:  # a gold query sqlglot cannot parse is reported, not scored
            run.skipped.append({"id": q.id, "db_id": q.db_id, "error": str(exc)[:200]})
            continue
        gold &= set(tables)
        run.outcomes.append(Outcome(q, "none", gold, tables, set()))
        run.outcomes.append(Outcome(q, "oracle", gold, tables, set(tables) - gold))
        index, value_index = indexes[q.db_id], values.get(q.db_id)
        started = time.perf_counter()
        scored = score_tables(q.question, q.knowledge, catalog, index, value_index, settings)
        directives = decide_directives(scored, settings)
        latency = (time.perf_counter() - started) * 1000
        run.outcomes.append(
            Outcome(q, "directives", gold, tables, set(directives.flagged), latency, directives.abstained)
        )
        started = time.perf_counter()
        paper = paper_rules_top1(q.question, q.knowledge, catalog, index)
        latency = (time.perf_counter() - started) * 1000
        run.outcomes.append(Outcome(q, "paper", gold, tables, set(paper.flagged), latency))
        for threshold in CURVE_THRESHOLDS:
            swept = decide_directives(scored, _with_threshold(settings, threshold))
            sweep[threshold].append((gold, set(swept.flagged), len(tables)))
        if tick:
            tick("questions", n + 1, len(questions))
    for threshold, rows in sweep.items():
        run.curve.append({"threshold": threshold, **_rates(rows)})
    return run


def _with_threshold(settings: DirectiveSettings, threshold: float) -> DirectiveSettings:
    return replace(settings, threshold=threshold, question_threshold=threshold)


def _rates(rows: list[tuple[set[str], set[str], int]]) -> dict[str, float]:
    safe = sum(1 for gold, flagged, _ in rows if not gold & flagged)
    non_gold = sum(n - len(gold) for gold, _, n in rows)
    pruned = sum(len(flagged - gold) for gold, flagged, _ in rows)
    return {
        "safe_rate": round(safe / len(rows), 4) if rows else 0.0,
        "prune_rate": round(pruned / non_gold, 4) if non_gold else 0.0,
    }


def summarize(outcomes: list[Outcome], index_build_s: float = 0.0) -> dict[str, Any]:
    """Metrics of one system's outcomes."""
    if not outcomes:
        return {"questions": 0}
    gold_total = sum(len(o.gold) for o in outcomes)
    kept_gold = sum(len(o.gold - o.flagged) for o in outcomes)
    rates = _rates([(o.gold, o.flagged, len(o.tables)) for o in outcomes])
    latencies = np.array([o.latency_ms for o in outcomes])
    return {
        "questions": len(outcomes),
        "safe_rate": rates["safe_rate"],
        "table_recall": round(kept_gold / gold_total, 4) if gold_total else 1.0,
        "prune_rate": rates["prune_rate"],
        "flagged_per_question": round(sum(len(o.flagged) for o in outcomes) / len(outcomes), 3),
        "abstain_rate": round(sum(o.abstained for o in outcomes) / len(outcomes), 4),
        "latency_ms_p50": round(float(np.percentile(latencies, 50)), 3),
        "latency_ms_p95": round(float(np.percentile(latencies, 95)), 3),
        "index_build_s": round(index_build_s, 3),
    }


def report(run: BenchRun) -> dict[str, Any]:
    """The JSON report: `summary` (directives plus each baseline), per split, database and difficulty, curve."""
    by_system = {s: [o for o in run.outcomes if o.system == s] for s in SYSTEMS}
    summary = summarize(by_system["directives"], run.index_build_s)
    summary["value_index_build_s"] = round(run.value_index_build_s, 3)
    summary["baselines"] = {s: summarize(by_system[s], run.index_build_s) for s in SYSTEMS if s != "directives"}
    for s in SYSTEMS:
        summary[s] = summarize(by_system[s], run.index_build_s)

    def grouped(key: Callable[[Outcome], str]) -> dict[str, dict[str, Any]]:
        groups: dict[str, dict[str, list[Outcome]]] = {}
        for o in run.outcomes:
            groups.setdefault(key(o), {}).setdefault(o.system, []).append(o)
        return {g: {s: summarize(v) for s, v in sorted(systems.items())} for g, systems in sorted(groups.items())}

    splits = {
        "tune": {s: summarize([o for o in v if o.question.db_id in run.tune_databases]) for s, v in by_system.items()},
        "holdout": {
            s: summarize([o for o in v if o.question.db_id in run.holdout_databases]) for s, v in by_system.items()
        },
    }
    return {
        "dataset": run.dataset,
        "summary": summary,
        "splits": splits,
        "tune_databases": run.tune_databases,
        "holdout_databases": run.holdout_databases,
        "per_database": grouped(lambda o: o.question.db_id),
        "per_difficulty": grouped(lambda o: o.question.difficulty),
        "curve": run.curve,
        "skipped": run.skipped,
    }


def write_json(data: dict[str, Any], path: Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2))


def plot_curve(data: dict[str, Any], path: Path) -> None:
    """Safe rate against prune rate over the threshold, baselines marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4.5))
    curve = data["curve"]
    axes.plot([p["prune_rate"] for p in curve], [p["safe_rate"] for p in curve], "o-", label="directives (threshold)")
    for i, point in enumerate(curve):
        if i % 2 == 0:  # every other label, so that they do not overlap
            xy = (point["prune_rate"], point["safe_rate"])
            axes.annotate(f"{point['threshold']:.2f}", xy, xytext=(0, -12), textcoords="offset points", fontsize=7)
    markers = {"none": "s", "oracle": "*", "paper": "^"}
    for system, marker in markers.items():
        s = data["summary"][system]
        axes.plot([s["prune_rate"]], [s["safe_rate"]], marker, markersize=10, label=system)
    chosen = data["summary"]["directives"]
    axes.plot([chosen["prune_rate"]], [chosen["safe_rate"]], "D", markersize=9, label="directives (default)")
    axes.set_xlabel("prune rate (flagged non-gold / non-gold tables)")
    axes.set_ylabel("safe rate (questions with no gold table flagged)")
    axes.set_title(f"Directives on {data['dataset']}")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower left")
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
