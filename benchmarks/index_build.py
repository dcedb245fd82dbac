"""Index build times: the 11 BIRD dev schemas, and a synthetic schema of 70,000 columns. Writes JSON.

Example: .venv/bin/python benchmarks/index_build.py --json bench-out/index_build.json
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from sophrosyne.bench.data.folders import datasets_root
from sophrosyne.bench.data.registry import load_dataset
from sophrosyne.index import SchemaIndex, ValueIndex, default_embedder
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table

_WORDS_TEXT = (
    "customer order item product price amount date time status type code name first last city country region "
    "store supplier invoice payment account balance credit debit card transaction branch employee salary dept "
    "manager project task hours rate score rank level category brand model year month day quarter total count "
    "average weight height length width volume stock quantity discount tax fee currency language label title "
    "description comment note email phone address zip street latitude longitude start end created updated"
)
WORDS = _WORDS_TEXT.split()


def synthetic_catalog(columns: int, per_table: int = 20, seed: int = 0) -> Catalog:
    """Tables of `per_table` columns with plausible snake_case / camelCase names and short descriptions."""
    rng = random.Random(seed)
    tables: dict[str, Table] = {}
    for t in range(columns // per_table):
        name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{t}"
        cols = [Column(f"{name}_id", "INTEGER", primary_key=True)]
        for c in range(per_table - 1):
            a, b = rng.choice(WORDS), rng.choice(WORDS)
            col = f"{a}{b.capitalize()}{c}" if c % 3 == 0 else f"{a}_{b}_{c}"
            cols.append(Column(col, rng.choice(("TEXT", "INTEGER", "REAL")), description=f"the {a} {b} of the {name}"))
        fks = [ForeignKey([cols[1].name], list(tables)[-1], [f"{list(tables)[-1]}_id"])] if tables else []
        tables[name] = Table(name, cols, primary_key=[cols[0].name], foreign_keys=fks)
    return Catalog(tables=tables)


def bird_build() -> dict[str, float]:
    root = datasets_root()
    if not (root / "bird_dev").is_dir():
        return {"skipped": 1.0}
    dataset = load_dataset("bird-dev")
    embedder = default_embedder()
    embedder.embed(["warm up"])
    started = time.perf_counter()
    columns = 0
    for catalog in dataset.catalogs.values():
        columns += len(SchemaIndex.build(catalog, embedder=embedder).docs)
    schema_s = time.perf_counter() - started
    started = time.perf_counter()
    values = sum(len(ValueIndex.from_sqlite(dataset.catalogs[db], p)) for db, p in dataset.database_files.items())
    return {
        "schemas": len(dataset.catalogs),
        "columns": columns,
        "schema_index_s": round(schema_s, 3),
        "value_index_s": round(time.perf_counter() - started, 3),
        "distinct_values": values,
    }


def synthetic_build(columns: int) -> dict[str, float | str]:
    catalog = synthetic_catalog(columns)
    stages: dict[str, float] = {}
    last = [time.perf_counter()]

    def tick(stage: str, done: int, total: int) -> None:
        if done == total:
            now = time.perf_counter()
            stages[stage] = round(now - last[0], 3)
            last[0] = now

    started = time.perf_counter()
    index = SchemaIndex.build(catalog, progress=tick)
    build_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        index.save(Path(folder) / "ix")
        save_s = time.perf_counter() - started
        started = time.perf_counter()
        loaded = SchemaIndex.load(Path(folder) / "ix")
        load_s = time.perf_counter() - started
    queries = ["customer first name", "invoice payment amount", "store region code", "employee salary rate"] * 10
    latencies = []
    for query in queries:
        started = time.perf_counter()
        loaded.search(query, k=10)
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "columns": len(index.docs),
        "tables": len(catalog.tables),
        "vector_index": index.vectors.kind,
        "build_s": round(build_s, 3),
        "stages_s": json.dumps(stages),
        "save_s": round(save_s, 3),
        "load_s": round(load_s, 3),
        "search_ms_p50": round(float(np.percentile(latencies, 50)), 3),
        "search_ms_p95": round(float(np.percentile(latencies, 95)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=70_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    bird = bird_build()
    synthetic = synthetic_build(args.columns)
    targets = {
        "bird_11_schemas_s": 15.0,
        "synthetic_70k_s": 90.0,
        "bird_ok": bird.get("schema_index_s", 0.0) <= 15.0,
        "synthetic_ok": float(synthetic["build_s"]) <= 90.0,
    }
    result = {"bird_dev": bird, "synthetic": synthetic, "targets": targets}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text)


if __name__ == "__main__":
    main()
