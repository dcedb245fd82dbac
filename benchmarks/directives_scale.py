"""Directives at warehouse scale: index build and per-question latency on Spider 2.0's 785-table database and
on a synthetic 5,000-table catalog, and the size of the directives an agent is shown. Writes JSON.

Example: .venv/bin/python benchmarks/directives_scale.py --json bench-out/directives_scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from index_build import WORDS, synthetic_catalog

from sophrosyne.base.words import split_identifier
from sophrosyne.bench.data.folders import datasets_root
from sophrosyne.directives import compute_directives
from sophrosyne.directives.prepared import prepare_schema
from sophrosyne.directives.scoring import warm
from sophrosyne.index import SchemaIndex
from sophrosyne.schema.catalog import Catalog

BUDGETS = {"latency_p95_ms": 20.0, "latency_5000_p95_ms": 100.0, "index_785_s": 60.0, "index_5000_s": 120.0}
TOKEN_BUDGET_CHARS = 4000 * 4 // 2  # the directives' share of a default list_tables response


def questions_for(catalog: Catalog, count: int, seed: int = 0) -> list[str]:
    """Questions that name a few columns of a random table in plain words, as an analyst would."""
    rng = random.Random(seed)
    tables = [t for t in catalog.tables.values() if t.columns]
    out = []
    for _ in range(count):
        table = rng.choice(tables)
        columns = rng.sample(table.columns, min(3, len(table.columns)))
        words = [" ".join(split_identifier(c.name.rsplit(".", 1)[-1])) for c in columns]
        subject = " ".join(w for w in split_identifier(table.name.rsplit(".", 1)[-1]) if not w.isdigit())
        out.append(f"What is the average {words[0]} of {subject} by {' and '.join(words[1:]) or rng.choice(WORDS)}?")
    return out


def measure(name: str, catalog: Catalog, questions: list[str]) -> dict[str, Any]:
    """Index build (units, inferred joins, schema index, warm-up) and directive latency per question."""
    started = time.perf_counter()
    prepared = prepare_schema(catalog)
    index = SchemaIndex.build(prepared.catalog)
    warm(prepared.catalog, index)
    build_s = time.perf_counter() - started
    latencies: list[float] = []
    cpu: list[float] = []  # the process's CPU time per question: what a busy shared machine does not inflate
    rendered: list[int] = []
    for question in questions:
        started, started_cpu = time.perf_counter(), time.process_time()
        directives = compute_directives(question, None, prepared.catalog, index, units=prepared.units)
        latencies.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        rendered.append(len(directives.render(TOKEN_BUDGET_CHARS)))
    return {
        "database": name,
        "tables": len(catalog.tables),
        "units": len(prepared.catalog.tables),
        "columns": sum(len(t.columns) for t in catalog.tables.values()),
        "inferred_joins": len(prepared.joins.joins),
        "index_build_s": round(build_s, 2),
        "questions": len(questions),
        "latency_ms_p50": round(float(np.percentile(latencies, 50)), 2) if latencies else None,
        "latency_ms_p95": round(float(np.percentile(latencies, 95)), 2) if latencies else None,
        "cpu_ms_p50": round(float(np.percentile(cpu, 50)), 2) if cpu else None,
        "cpu_ms_p95": round(float(np.percentile(cpu, 95)), 2) if cpu else None,
        "cpu_ms_max": round(max(cpu), 2) if cpu else None,
        "rendered_chars_max": max(rendered) if rendered else 0,
        "rendered_budget_chars": TOKEN_BUDGET_CHARS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="Write the results here.")
    parser.add_argument("--questions", type=int, default=200, help="Questions per database.")
    parser.add_argument("--tables", type=int, default=5000, help="Tables of the synthetic catalog.")
    args = parser.parse_args()
    results: dict[str, Any] = {"load_average": list(os.getloadavg()), "budgets": BUDGETS, "runs": []}
    folder = datasets_root() / "spider2_lite" / "databases" / "bigquery" / "ebi_chembl"
    if folder.is_dir():
        from sophrosyne.bench.data.spider2 import read_catalog

        chembl = read_catalog(folder, "bigquery")
        results["runs"].append(measure("ebi_chembl (Spider 2.0)", chembl, questions_for(chembl, args.questions)))
    synthetic = synthetic_catalog(args.tables * 20, per_table=20)
    results["runs"].append(measure(f"synthetic {args.tables} tables", synthetic, questions_for(synthetic, 50)))
    results["load_average_after"] = list(os.getloadavg())
    for run in results["runs"]:
        print(
            f"{run['database']}: {run['tables']} tables ({run['units']} units, {run['columns']} columns, "
            f"{run['inferred_joins']} inferred joins): index {run['index_build_s']} s; directives p50 "
            f"{run['latency_ms_p50']} ms, p95 {run['latency_ms_p95']} ms (CPU p50 {run['cpu_ms_p50']}, p95 "
            f"{run['cpu_ms_p95']}, max {run['cpu_ms_max']} ms) over {run['questions']} questions; "
            f"longest rendering {run['rendered_chars_max']} of {run['rendered_budget_chars']} characters"
        )
    print(f"load average {results['load_average']} -> {results['load_average_after']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
