"""DuckDB beside SQLite on the same schema: `list_tables` and `describe_table` p50, interleaved in one process.

The synthetic SQLite database of tool_latency.py (1,001 tables by default) is copied table by table into a
DuckDB file (same names, types and rows); both are opened through Sophrosyne, warmed, and each tool is called
on each in turn, so the ratio DuckDB / SQLite is measured on the same machine at the same time. Writes JSON.

Example:
    .venv/bin/python benchmarks/engine_parity.py --out bench-out/engine_parity.json
    .venv/bin/python benchmarks/engine_parity.py --tables 200 --rows 20000 --repeats 10
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from synthetic_db import build_database

from sophrosyne.environment import Environment


def copy_to_duckdb(source: Path, target: Path) -> None:
    """Every table of a SQLite file into a new DuckDB file, with the declared types and the rows."""
    import duckdb

    if target.exists():
        target.unlink()
    with contextlib.closing(sqlite3.connect(source)) as lite, contextlib.closing(duckdb.connect(str(target))) as duck:
        names = [r[0] for r in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            columns = lite.execute(f'PRAGMA table_info("{name}")').fetchall()
            declared = ", ".join(f'"{c[1]}" {c[2] or "VARCHAR"}' for c in columns)
            duck.execute(f'CREATE TABLE "{name}" ({declared})')
            rows = lite.execute(f'SELECT * FROM "{name}"')
            marks = ", ".join("?" for _ in columns)
            while batch := rows.fetchmany(50_000):
                duck.executemany(f'INSERT INTO "{name}" VALUES ({marks})', batch)


def raw_connections(lite_path: Path, duck_path: Path) -> dict[str, Any]:
    import duckdb

    return {"sqlite": sqlite3.connect(lite_path), "duckdb": duckdb.connect(str(duck_path), read_only=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000, help="Tables besides the big one.")
    parser.add_argument("--rows", type=int, default=100_000, help="Rows of the big table.")
    parser.add_argument("--repeats", type=int, default=30, help="Timed calls per tool and engine.")
    parser.add_argument("--work", type=Path, default=Path("bench-out/engine_parity"), help="Databases go here.")
    parser.add_argument("--out", type=Path, help="Write the results here.")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    lite_path = args.work / f"parity_{args.tables}.sqlite"
    duck_path = args.work / f"parity_{args.tables}.duckdb"
    shape = build_database(lite_path, tables=args.tables, rows=args.rows)
    if not duck_path.exists() or duck_path.stat().st_mtime < lite_path.stat().st_mtime:
        copy_to_duckdb(lite_path, duck_path)
    envs = {"sqlite": Environment.open(lite_path), "duckdb": Environment.open(duck_path)}
    tables = [*shape.ordinary_tables[:3], shape.big_table]
    cases: list[tuple[str, Any]] = [("list_tables", lambda env: env.list_tables())]
    cases += [(f"describe_table[{t}]", lambda env, t=t: env.describe_table(t)) for t in tables]
    for env in envs.values():  # the catalog read and the first statements, outside the timing
        for _, call in cases:
            call(env)
    samples: dict[str, dict[str, list[float]]] = {name: {e: [] for e in envs} for name, _ in cases}
    # The floor: each engine's own driver, in this process, running the statement describe_table sends.
    raw = raw_connections(lite_path, duck_path)
    floors: dict[str, dict[str, list[float]]] = {t: {e: [] for e in raw} for t in tables}
    for _ in range(args.repeats):
        for name, call in cases:
            for engine, env in envs.items():
                started = time.perf_counter()
                call(env)
                samples[name][engine].append((time.perf_counter() - started) * 1000)
        for table in tables:
            for engine, connection in raw.items():
                started = time.perf_counter()
                connection.execute(f'SELECT * FROM "{table}" LIMIT 200').fetchall()
                floors[table][engine].append((time.perf_counter() - started) * 1000)
    results = {}
    for name, by_engine in samples.items():
        p50 = {e: statistics.median(v) for e, v in by_engine.items()}
        results[name] = {
            "sqlite_ms_p50": round(p50["sqlite"], 2),
            "duckdb_ms_p50": round(p50["duckdb"], 2),
            "ratio": round(p50["duckdb"] / p50["sqlite"], 2),
        }
        print(f"{name}: SQLite {p50['sqlite']:.2f} ms, DuckDB {p50['duckdb']:.2f} ms, ratio {results[name]['ratio']}")
    for table, by_engine in floors.items():
        p50 = {e: statistics.median(v) for e, v in by_engine.items()}
        results[f"driver sample[{table}]"] = {
            "sqlite_ms_p50": round(p50["sqlite"], 3),
            "duckdb_ms_p50": round(p50["duckdb"], 3),
        }
        whole = results[f"describe_table[{table}]"]["sqlite_ms_p50"]
        print(
            f"the drivers' own `SELECT * ... LIMIT 200` of {table}: SQLite {p50['sqlite']:.3f} ms, DuckDB "
            f"{p50['duckdb']:.3f} ms ({p50['duckdb'] / whole:.2f}x SQLite's whole describe_table)"
        )
    report = {
        "tables": args.tables + 1,
        "rows": args.rows,
        "repeats": args.repeats,
        "load_average": list(os.getloadavg()),
        "results": results,
    }
    print(f"load average {report['load_average']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
