"""The robustness suite: directives on every set under every perturbation, one table of safe and prune rates.

A cell is the directives figures of `bench directives --dataset SET --perturb KIND`, on the part that command
heads with (held-out databases where the model was tuned on the set, with the whole beside; else all). The
classic sets run as one dataset per perturbation and are reported per set: a question's directives depend on
its own database only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sophrosyne.bench.data.text2sql_classic import CLASSIC, SETS
from sophrosyne.errors import ConfigError

ROBUSTNESS_SETS = ("bird-dev", "spider-dev", "spider2-cloud", "spider-syn", "spider-syn-original", CLASSIC)
# The last but one is the three at once, as a warehouse nobody tuned for comes: coded names, no rows, no keys.
HIDDEN_WAREHOUSE = "warehouse+schema-only+no-keys"
ROBUSTNESS_PERTURBATIONS = ("none", "schema-only", "warehouse", "no-keys", HIDDEN_WAREHOUSE, "synonyms")
FIGURES = ("questions", "safe_rate", "prune_rate", "abstain_rate", "table_recall")
Progress = Callable[[str, str, float], None]  # (set, perturbation, seconds it took)


def _cell(summary: dict[str, Any], part: str) -> dict[str, Any]:
    return {"part": part, **{k: summary.get(k) for k in FIGURES}}


def run_robustness(
    sets: tuple[str, ...] = ROBUSTNESS_SETS,
    perturbations: tuple[str, ...] = ROBUSTNESS_PERTURBATIONS,
    root: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every perturbation of every set: `cells[row][perturbation]` holds the directives figures, or `n/a` with
    the reason where a perturbation has no meaning for a set. `text2sql-classic` gives one row per classic
    set and one for all six."""
    from sophrosyne.bench.data.registry import load_dataset
    from sophrosyne.bench.directives_bench import run_directives_bench
    from sophrosyne.bench.directives_report import report
    from sophrosyne.bench.perturb import perturb

    started = time.perf_counter()
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    settings: dict[str, Any] = {}
    for name in sets:
        dataset = load_dataset(name, root)
        rows = [name] if name != CLASSIC else [*(f"{CLASSIC}-{s}" for s in SETS), name]
        for kind in perturbations:
            began = time.perf_counter()
            try:
                changed = perturb(dataset, kind, root)
            except ConfigError as exc:
                for row in rows:
                    cells.setdefault(row, {})[kind] = {"n/a": exc.message}
                continue
            result = report(run_directives_bench(changed))
            settings = {k: v for k, v in result["settings"].items() if k not in ("dataset", "perturbation")}
            cell = _cell(result["summary"], result["headline"])
            if result["headline"] != "all" and "all" in result["parts"]:
                cell["whole"] = _cell(result["parts"]["all"]["summary"], "all")
            cells.setdefault(name, {})[kind] = cell
            if name == CLASSIC:
                for set_name in SETS:
                    figures = result["per_database"].get(set_name, {}).get("directives", {"questions": 0})
                    cells.setdefault(f"{CLASSIC}-{set_name}", {})[kind] = _cell(figures, "all")
            if progress:
                progress(name, kind, time.perf_counter() - began)
    # The aggregate row of the classic sets after its sets.
    rows = sorted(cells, key=lambda r: (r == CLASSIC, 0))
    return {
        "perturbations": list(perturbations),
        "rows": rows,
        "cells": cells,
        "settings": settings,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
