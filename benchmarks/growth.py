"""How start-up, the first answer, calls and memory grow with the schema: 10 to 20,000 tables, over stdio.

Per size, a synthetic SQLite database (synthetic_db.py, small tables) is served by a fresh
`python -m sophrosyne serve DB` process twice: once with an empty index cache (fresh) and once with the cache
that the first run left (cached). Each run times, from the spawn: the initialized session, the first
`list_tables` with a question (what an agent calls first), and the moment the directives come with no note
that an index is still being built or read (index ready). Then `list_tables` and `describe_table` p50/p95, the
server's resident memory (VmRSS, and its peak VmHWM) and the cache's size. Writes JSON with the issue 20
checks.

Example:
    .venv/bin/python benchmarks/growth.py --out bench-out/growth.json
    .venv/bin/python benchmarks/growth.py --sizes 10,1000 --repeats 10 --out /tmp/growth.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

sys.path.insert(0, str(Path(__file__).parent))
from bytecode import compile_package
from synthetic_db import build_database

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Which customers in the sales region paid their invoices in euros last month, and how many refunds?"
# Words in a directive note that say an index was not there yet (moderator.py's notes and NotReady).
NOT_READY = ("still being", "from names only", "No directives this time")
CALL_LIMIT_S = 10.0  # the default limits.timeout_s: a first answer must come within it
TARGETS = {"first_cached_5000_s": 1.5, "rss_5000_over_10": 2.0, "rss_20000_mb": 600.0}


def text_of(result: CallToolResult) -> str:
    """The text content of a tool's answer."""
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def child_pid(marker: str, *others: str) -> int | None:
    """A spawned server: a child of this process whose command line holds `marker` (and each of `others`)."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if parent == me and all(word in cmdline for word in (marker, *others)):
            return int(entry.name)
    return None


def _memory_mb(pid: int | None) -> dict[str, float | None]:
    if pid is None:
        return {"rss_mb": None, "peak_rss_mb": None}
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return {"rss_mb": round(fields.get("VmRSS", 0), 1), "peak_rss_mb": round(fields.get("VmHWM", 0), 1)}


def _size_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2)}


async def _one_start(database: Path, cache: Path, tables: list[str], repeats: int, ready_s: float) -> dict[str, Any]:
    env = {**os.environ, "SOPHROSYNE_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sophrosyne", "serve", str(database)], env=env, cwd=str(ROOT)
    )
    run: dict[str, Any] = {}
    spawned = time.perf_counter()
    errlog = (cache.parent / f"{cache.name}.stderr").open("a")  # the server's banner and logs, kept apart
    async with Client(stdio_client(params, errlog=errlog)) as session:
        run["initialized_s"] = round(time.perf_counter() - spawned, 3)
        pid = child_pid(str(database), "sophrosyne")
        first = await session.call_tool("list_tables", {"question": QUESTION})
        run["first_list_tables_s"] = round(time.perf_counter() - spawned, 3)
        text = text_of(first)
        run["first_is_error"] = bool(first.is_error)
        run["first_error"] = text[:300] if first.is_error else None  # what the agent was told instead
        run["first_has_directives"] = "irrelevant" in text.lower()
        run["first_note"] = next((line for line in text.splitlines() if any(w in line for w in NOT_READY)), None)
        run["memory_after_first"] = _memory_mb(pid)
        # Index ready: the first answer with directives and no note that an index is still missing.
        ready_at = None
        deadline = spawned + ready_s
        answer = text
        while True:
            if not first.is_error and not any(w in answer for w in NOT_READY):
                ready_at = time.perf_counter() - spawned
                break
            if time.perf_counter() > deadline:
                break
            await anyio.sleep(0.5)
            result = await session.call_tool("list_tables", {"question": QUESTION})
            first, answer = result, text_of(result)
        run["index_ready_s"] = round(ready_at, 3) if ready_at is not None else None
        calls: dict[str, list[float]] = {"list_tables": [], "describe_table": []}
        for i in range(repeats):
            for name, arguments in (
                ("list_tables", {}),
                ("describe_table", {"table": tables[i % len(tables)]}),
            ):
                started = time.perf_counter()
                result = await session.call_tool(name, arguments)
                calls[name].append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    run.setdefault("errors", []).append(f"{name}: {text_of(result)[:200]}")
        run["calls"] = {name: _stats(samples) for name, samples in calls.items()}
        run["memory"] = _memory_mb(pid)
    errlog.close()
    run["cache_mb"] = _size_mb(cache) if cache.exists() else 0.0
    return run


def measure_size(tables: int, work: Path, repeats: int, ready_s: float, rows: int) -> dict[str, Any]:
    database = work / f"growth_{tables}.sqlite"
    shape = build_database(database, tables=tables, rows=rows)
    names = ["departments", "cities", "people"]  # tables every synthetic database has
    cache = work / f"cache_{tables}"
    shutil.rmtree(cache, ignore_errors=True)
    fresh = anyio.run(_one_start, database, cache, names, repeats, ready_s)
    cached = anyio.run(_one_start, database, cache, names, repeats, ready_s)
    return {
        "tables": tables,
        "build_s": None if shape.build_s is None else round(shape.build_s, 1),
        "reused": shape.reused,
        "fresh": fresh,
        "cached": cached,
    }


def _checks(sizes: dict[int, dict[str, Any]]) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    if 5000 in sizes:
        value = sizes[5000]["cached"]["first_list_tables_s"]
        checks["first_cached_5000_s"] = {"value": value, "limit": TARGETS["first_cached_5000_s"]}
    if 5000 in sizes and 10 in sizes:
        ratio = sizes[5000]["cached"]["memory"]["rss_mb"] / sizes[10]["cached"]["memory"]["rss_mb"]
        checks["rss_5000_over_10"] = {"value": round(ratio, 2), "limit": TARGETS["rss_5000_over_10"]}
    if 20_000 in sizes:
        for start in ("fresh", "cached"):
            run = sizes[20_000][start]
            within = not run["first_is_error"] and run["first_list_tables_s"] - run["initialized_s"] <= CALL_LIMIT_S
            checks[f"first_20000_{start}_within_limit"] = {"value": within, "limit": True}
            checks[f"rss_20000_{start}_mb"] = {"value": run["memory"]["peak_rss_mb"], "limit": TARGETS["rss_20000_mb"]}
    for check in checks.values():
        value, limit = check["value"], check["limit"]
        check["pass"] = value is limit if isinstance(limit, bool) else value is not None and value <= limit
    checks["all_pass"] = all(c["pass"] for c in checks.values())
    return checks


def _machine() -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True, text=True)
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "commit": commit.stdout.strip(),
        "src_changed": bool(dirty.stdout.strip()),
        "load_before": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000,5000,20000", help="Table counts, comma-separated.")
    parser.add_argument("--work", type=Path, default=Path("bench-out/growth"), help="Databases and caches go here.")
    parser.add_argument("--repeats", type=int, default=20, help="Calls per tool after the index is ready.")
    parser.add_argument("--rows", type=int, default=2000, help="Rows of the one large table.")
    parser.add_argument("--ready-timeout", type=float, default=400.0, help="Seconds to wait for the index.")
    parser.add_argument("--out", type=Path, default=Path("bench-out/growth.json"), help="The JSON report.")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.work.mkdir(parents=True, exist_ok=True)
    compile_package()  # the servers start as an installed package does, its bytecode written
    report: dict[str, Any] = {"machine": _machine(), "question": QUESTION, "sizes": {}}
    for tables in sizes:
        result = measure_size(tables, args.work, args.repeats, args.ready_timeout, args.rows)
        report["sizes"][tables] = result
        for start in ("fresh", "cached"):
            run = result[start]
            print(
                f"{tables:>6} tables {start:>6}: init {run['initialized_s']:.2f} s, first list_tables "
                f"{run['first_list_tables_s']:.2f} s{' (error)' if run['first_is_error'] else ''}, index ready "
                f"{run['index_ready_s']} s, list p50 {run['calls']['list_tables']['p50_ms']} ms, describe p50 "
                f"{run['calls']['describe_table']['p50_ms']} ms, rss {run['memory']['rss_mb']} MB "
                f"(peak {run['memory']['peak_rss_mb']}), cache {run['cache_mb']} MB",
                flush=True,
            )
    report["machine"]["load_after"] = os.getloadavg()
    report["checks"] = _checks(report["sizes"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report["checks"], indent=2))
    sys.exit(0 if report["checks"]["all_pass"] else 1)


if __name__ == "__main__":
    main()
