"""Soak: N clients over streamable HTTP for a while, the server's memory sampled every 10 s.

    .venv/bin/python benchmarks/soak.py --clients 16 --minutes 60 --out bench-out/soak.json

Each client opens a session (initialize, initialized) and sends a mix of small calls (list_tables with a
question, describe_table, execute_sql, get_distinct_values with a search, find_rows) until the time is up,
starting a new session every `--session-calls` calls, as agents come and go; `--rate R` holds each client to at
most R calls a second (a soak beside other work: 16 clients at 1 call/s each). The server is `sophrosyne serve DB
--http` with a fresh cache folder (or `--workers N`); RSS, PSS and anonymous PSS are summed over its processes.
The JSON has the series, the calls and errors, and `growth_after_warmup_mb`: the RSS at the end minus the RSS at
`--warmup` minutes (the mean of the three samples around each point, so a single sample's noise does not decide).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx2 as httpx

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
SAMPLE_S = 10.0
QUESTIONS = [
    "which employees took approved leave in March?",
    "how many people work in each department?",
    "average attendance per location last year",
    "employees without a manager",
]


def calls_for(db: str) -> list[tuple[str, dict[str, Any]]]:
    """The mix of small calls; the demo's tables by default."""
    if db != "demo":
        return [("list_tables", {}), ("execute_sql", {"sql": "SELECT 1 AS x"})]
    mix: list[tuple[str, dict[str, Any]]] = [("list_tables", {"question": q}) for q in QUESTIONS]
    mix += [
        ("describe_table", {"table": "employees"}),
        ("describe_table", {"table": "departments"}),
        ("execute_sql", {"sql": "SELECT department, COUNT(*) AS n FROM employees GROUP BY department"}),
        ("execute_sql", {"sql": "SELECT * FROM locations LIMIT 5"}),
        ("get_distinct_values", {"table": "employees", "column": "last_name", "search": "smi"}),
        ("find_rows", {"table": "departments", "term": "sales"}),
    ]
    return mix


def processes_of(root: int) -> list[int]:
    """`root` and its descendants (workers, DuckDB children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def memory_mb(root: int) -> dict[str, float]:
    """RSS and PSS (shared pages counted once over the processes that share them) of `root` and descendants, and
    their anonymous part (Pss_Anon): the processes' own memory counted once, without the library pages that
    other programs on the machine share (which move PSS as those come and go)."""
    totals = {"Rss": 0, "Pss": 0, "Pss_Anon": 0}
    for pid in processes_of(root):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                for line in rollup:
                    key, _, value = line.partition(":")
                    if key in totals:
                        totals[key] += int(value.split()[0])
        except OSError:
            continue
    return {
        "rss_mb": round(totals["Rss"] / 1024, 1),
        "pss_mb": round(totals["Pss"] / 1024, 1),
        "anon_mb": round(totals["Pss_Anon"] / 1024, 1),
    }


class Tally:
    def __init__(self) -> None:
        self.calls = 0
        self.sessions = 0
        self.errors: list[str] = []
        self.ms: list[float] = []


async def client(
    url: str, mix: list[tuple[str, dict[str, Any]]], until: float, per_session: int, tally: Tally, pace_s: float = 0.0
) -> None:
    """Sessions of `per_session` calls until `until`; with `pace_s`, a call starts at most every `pace_s` seconds."""
    rng = random.Random(len(tally.ms) + id(asyncio.current_task()))
    async with httpx.AsyncClient(timeout=60) as http:
        while time.monotonic() < until:
            tally.sessions += 1
            ident = 0

            async def post(message: dict[str, Any]) -> str:
                response = await http.post(url, json=message, headers=HEADERS)
                if response.status_code >= 400:
                    raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
                return response.text

            try:
                await post(
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {},
                            "clientInfo": {"name": "soak", "version": "1"},
                        },
                    }
                )
                await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
                for _ in range(per_session):
                    if time.monotonic() >= until:
                        break
                    name, arguments = rng.choice(mix)
                    ident += 1
                    started = time.perf_counter()
                    body = await post(
                        {
                            "jsonrpc": "2.0",
                            "id": ident,
                            "method": "tools/call",
                            "params": {"name": name, "arguments": arguments},
                        }
                    )
                    took = time.perf_counter() - started
                    tally.ms.append(took * 1000)
                    tally.calls += 1
                    if pace_s > took:
                        await asyncio.sleep(pace_s - took)
                    if '"isError":true' in body or '"error":{' in body or f'"id":{ident}' not in body:
                        tally.errors.append(f"{name}: {body[:300]}")
            except (httpx.HTTPError, RuntimeError) as exc:
                tally.errors.append(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(0.5)


def start_server(db: str, port: int, workers: int, cache: Path, extra: list[str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "sophrosyne", "serve", db, "--http", "--port", str(port), *extra]
    if workers > 1:
        command += ["--workers", str(workers)]
    env = {**os.environ, "SOPHROSYNE_CACHE_DIR": str(cache)}
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                if json.load(answer).get("status") == "ok":
                    return server
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start (exit {server.poll()})")
        time.sleep(0.2)


def mean_around(series: list[dict[str, Any]], at_s: float, key: str) -> float:
    """The mean of `key` over the three samples nearest `at_s`."""
    nearest = sorted(series, key=lambda s: abs(s["t_s"] - at_s))[:3]
    return sum(s[key] for s in nearest) / len(nearest)


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    cache = Path(tempfile.mkdtemp(prefix="soak-cache-"))
    server = start_server(args.db, args.port, args.workers, cache, args.server_args)
    url = f"http://127.0.0.1:{args.port}/mcp"
    tally, series = Tally(), []
    start = time.monotonic()
    until = start + args.minutes * 60
    mix = calls_for(args.db)
    pace_s = 1.0 / args.rate if args.rate else 0.0
    tasks = [
        asyncio.create_task(client(url, mix, until, args.session_calls, tally, pace_s)) for _ in range(args.clients)
    ]
    try:
        while time.monotonic() < until:
            sample = {"t_s": round(time.monotonic() - start, 1), **memory_mb(server.pid), "calls": tally.calls}
            sample["errors"] = len(tally.errors)
            sample["load"] = round(os.getloadavg()[0], 2)
            series.append(sample)
            print(json.dumps(sample), file=sys.stderr, flush=True)
            await asyncio.sleep(min(SAMPLE_S, max(0.0, until - time.monotonic())))
        await asyncio.gather(*tasks)
        series.append({"t_s": round(time.monotonic() - start, 1), **memory_mb(server.pid), "calls": tally.calls})
        series[-1] |= {"errors": len(tally.errors), "load": round(os.getloadavg()[0], 2)}
    finally:
        server.terminate()
        server.wait(30)
    ms = sorted(tally.ms)
    warm_s, end_s = args.warmup * 60, series[-1]["t_s"]
    result: dict[str, Any] = {
        "clients": args.clients,
        "minutes": args.minutes,
        "workers": args.workers,
        "rate_per_client": args.rate,
        "db": args.db,
        "calls": tally.calls,
        "sessions": tally.sessions,
        "errors": len(tally.errors),
        "first_errors": tally.errors[:5],
        "calls_per_s": round(tally.calls / max(end_s, 1e-9), 1),
        "p50_ms": round(ms[len(ms) // 2], 1) if ms else None,
        "p99_ms": round(ms[int(len(ms) * 0.99)], 1) if ms else None,
        "series": series,
    }
    if end_s > warm_s:
        for key in ("rss_mb", "pss_mb"):
            growth = mean_around(series, end_s, key) - mean_around(series, warm_s, key)
            result[f"growth_after_warmup_{key[:-3]}_mb"] = round(growth, 1)
        result["growth_after_warmup_mb"] = result["growth_after_warmup_rss_mb"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="demo", help="the database served (default: the demo)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0, help="minutes of warm-up before growth is counted")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--session-calls", type=int, default=50, help="calls per session before a new one")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="calls per second per client at most (default: as fast as answered)"
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--out", type=Path, default=Path("bench-out/soak.json"))
    parser.add_argument("server_args", nargs="*", help="more arguments for `serve` (after --)")
    args = parser.parse_args()
    result = asyncio.run(soak(args))
    result["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    summary = {k: v for k, v in result.items() if k != "series"}
    print(json.dumps(summary, indent=1))
    sys.exit(1 if result["errors"] else 0)


if __name__ == "__main__":
    main()
