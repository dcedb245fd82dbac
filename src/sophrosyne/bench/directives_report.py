"""The directives benchmark's report: metrics per system, part, database and difficulty; the curve; the plot.

The headline is the held-out part when the model was tuned on some databases of the dataset, else the whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from sophrosyne.bench.baselines import PAPER_LLM_TOP1, PAPER_RULES_TOP1
from sophrosyne.bench.directives_bench import CURVE_THRESHOLDS, BenchRun, Outcome
from sophrosyne.errors import ConfigError

PART_LABELS = {
    "holdout": "held-out databases (never used in tuning)",
    "tune": "tuning databases (fitted on them)",
    "all": "all databases",
}
PART_NAMES = {"holdout": "held-out", "tune": "tuning", "all": "whole"}
SYSTEM_LABELS = {
    "none": "no directives",
    "directives": "ours: names, values and hybrid retrieval scored by the fitted model, then foreign-key bridges",
    "oracle": "every table the gold SQL does not read is flagged",
    PAPER_RULES_TOP1: "the paper's method with rules standing in for its LLM column inference: "
    "top-1 table per inferred column name, no foreign-key bridging",
    "directives_llm": "directives with the model's inferred column names as anchors",
    PAPER_LLM_TOP1: "the paper's method with the model's inferred column names: top-1 table per name, no bridging",
}
Rows = list[tuple[set[str], set[str], int]]


def parts_of(run: BenchRun) -> dict[str, set[str] | None]:
    """The parts a run reports, headline first: held-out, tuning and whole when the model was tuned on this
    dataset, else only the whole (None: every database)."""
    if run.tuning is None:
        return {"all": None}
    present = {o.question.db_id for o in run.outcomes}
    tune, holdout = set(run.tuning[0]), set(run.tuning[1])
    parts: dict[str, set[str] | None] = {}
    if present & holdout:
        parts["holdout"] = holdout
    if present & tune:
        parts["tune"] = tune
    if len(parts) != 1:
        parts["all"] = None
    return parts


def _rates(rows: Rows) -> dict[str, float]:
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


def _grouped(
    outcomes: Iterable[Outcome], key: Callable[[Outcome], str], systems: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, list[Outcome]]] = {}
    for o in outcomes:
        groups.setdefault(key(o), {}).setdefault(o.system, []).append(o)
    return {g: {s: summarize(found[s]) for s in systems if s in found} for g, found in sorted(groups.items())}


def _part(run: BenchRun, databases: set[str] | None) -> dict[str, Any]:
    """Summary (directives, then each system), per difficulty and the curve, over the questions of some databases."""
    outcomes = [o for o in run.outcomes if databases is None or o.question.db_id in databases]
    by_system = {s: [o for o in outcomes if o.system == s] for s in run.systems}
    summary = summarize(by_system["directives"], run.index_build_s)
    summary["value_index_build_s"] = round(run.value_index_build_s, 3)
    summary["baselines"] = {s: summarize(v, run.index_build_s) for s, v in by_system.items() if s != "directives"}
    for s, v in by_system.items():
        summary[s] = summarize(v, run.index_build_s)
    curve = [
        {"threshold": t, **_rates([(o.gold, o.swept[t], len(o.tables)) for o in by_system["directives"]])}
        for t in CURVE_THRESHOLDS
    ]
    return {
        "summary": summary,
        "per_difficulty": _grouped(outcomes, lambda o: o.question.difficulty, run.systems),
        "curve": curve,
    }


def report(run: BenchRun) -> dict[str, Any]:
    """The JSON report. `summary`, `per_difficulty` and `curve` are the headline part's (named by `headline`);
    `parts` holds each part in the same shape; `per_database` covers every database; `settings` holds every
    option as this run used it."""
    parts = {name: _part(run, databases) for name, databases in parts_of(run).items()}
    headline = next(iter(parts))
    tuning = None
    if run.tuning is not None:
        tuning = {
            "dataset": run.dataset,
            "databases": run.tuning[0],
            "holdout_databases": run.tuning[1],
        }
    return {
        "dataset": run.dataset,
        "headline": headline,
        "summary": parts[headline]["summary"],
        "per_difficulty": parts[headline]["per_difficulty"],
        "curve": parts[headline]["curve"],
        "parts": parts,
        "tuning": tuning,
        "per_database": _grouped(run.outcomes, lambda o: o.question.db_id, run.systems),
        "systems": {s: SYSTEM_LABELS[s] for s in run.systems},
        "skipped": run.skipped,
        "settings": run.settings,
    }


def write_json(data: dict[str, Any], path: Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2))


def plot_curve(data: dict[str, Any], path: Path) -> None:
    """Safe rate against prune rate over the threshold, for the headline part (other parts dashed), with the
    baselines and the default threshold marked on the headline part."""
    from sophrosyne.bench import plots

    if not plots.available():
        raise ConfigError("--plot needs matplotlib, which is not installed.", hint=f"Run {plots.INSTALL}.")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4.5))
    headline = data["headline"]
    for name, part in data["parts"].items():
        curve = part["curve"]
        style = "o-" if name == headline else "--"
        label = f"directives over the threshold, {PART_NAMES[name]}"
        axes.plot(
            [p["prune_rate"] for p in curve],
            [p["safe_rate"] for p in curve],
            style,
            label=label,
            alpha=1.0 if name == headline else 0.5,
        )
    for i, point in enumerate(data["curve"]):
        if i % 2 == 0:  # every other label, so that they do not overlap
            xy = (point["prune_rate"], point["safe_rate"])
            axes.annotate(f"{point['threshold']:.2f}", xy, xytext=(0, -12), textcoords="offset points", fontsize=7)
    markers = {"none": "s", "oracle": "*", PAPER_RULES_TOP1: "^", PAPER_LLM_TOP1: "v", "directives_llm": "P"}
    for system, marker in markers.items():
        s = data["summary"].get(system)
        if s and s.get("questions"):
            axes.plot(
                [s["prune_rate"]], [s["safe_rate"]], marker, markersize=10, label=f"{system}, {PART_NAMES[headline]}"
            )
    chosen = data["summary"]["directives"]
    label = f"directives (fitted thresholds), {PART_NAMES[headline]}"
    axes.plot([chosen["prune_rate"]], [chosen["safe_rate"]], "D", markersize=9, label=label)
    axes.set_xlabel("prune rate (flagged non-gold / non-gold tables)")
    axes.set_ylabel("safe rate (questions with no gold table flagged)")
    axes.set_title(f"Directives on {data['dataset']}: {PART_LABELS[headline]}", fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="lower left")
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
