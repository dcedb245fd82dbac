"""The figures of the fault suite (issue 8), measured in one run and written as JSON: response sizes on big
schemas, time of long questions, start-up, a quick call beside a slow one, cancellation, live schemas, value
search in a column of 1,000,000 distinct values.

Example:
    .venv/bin/python benchmarks/reliability.py --bench-dir bench-out --json bench-out/reliability.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from synthetic_db import build_database

from sophrosyne.environment import Environment
from sophrosyne.settings import Settings
from sophrosyne.tools.budget import measure

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Which customers in the sales region paid their invoices in euros last month, and how many refunds? "
SLOW_SQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT COUNT(*) FROM c"


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = call()
    return result, round(time.perf_counter() - started, 3)


def big_schemas(folder: Path, sizes: list[tuple[int, int]]) -> dict[str, Any]:
    """list_tables with a 30,000-character question: tokens of both forms and seconds, three calls each."""
    figures: dict[str, Any] = {}
    for tables, rows in sizes:
        db = build_database(folder / f"synthetic_{tables}_{rows}.sqlite", tables=tables, rows=rows)
        env = Environment.open(db.path)
        calls = []
        question = (QUESTION * 300)[:30_000]
        for _ in range(3):
            listed, seconds = timed(functools.partial(env.list_tables, question=question))
            calls.append(
                {
                    "seconds": seconds,
                    "tokens": measure(listed),
                    "tables_shown": len(listed.tables),
                    "directives": len(listed.directives),
                    "note": (listed.directive_note or "")[:160],
                }
            )
            time.sleep(2)
        figures[f"{tables}_tables"] = {
            "budget": env.settings.limits.token_budget,
            "timeout_s": env.settings.limits.timeout_s,
        }
        figures[f"{tables}_tables"]["calls"] = calls
        env.db.close()
    return figures


def wide(folder: Path) -> dict[str, Any]:
    path = folder / "wide.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        names = [f"attribute_{i:04d}" for i in range(1000)]
        conn.execute(f"CREATE TABLE wide (id INTEGER PRIMARY KEY, {', '.join(f'{n} TEXT' for n in names)})")
        conn.execute(f"INSERT INTO wide VALUES (1, {', '.join('?' * 1000)})", ["x" * 60] * 1000)
        conn.commit()
    env = Environment.open(path)
    described, rows = env.describe_table("wide"), env.execute_sql("SELECT * FROM wide")
    return {
        "describe_tokens": measure(described),
        "describe_columns_shown": len(described.columns),
        "select_star_tokens": measure(rows),
        "select_star_columns_shown": len(rows.columns),
        "budget": env.settings.limits.token_budget,
    }


async def _startup(db: str, cache: str) -> dict[str, float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sophrosyne", "serve", db],
        env={**os.environ, "SOPHROSYNE_CACHE_DIR": cache},
    )
    started = time.perf_counter()
    async with Client(params) as client:
        initialized = time.perf_counter() - started
        await client.list_tools()
        listed = time.perf_counter() - started
    return {"initialize_s": round(initialized, 3), "tools_list_s": round(listed, 3)}


def startup(db: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        first = anyio.run(_startup, db, cache)
        later = [anyio.run(_startup, db, cache) for _ in range(3)]
    return {"first_start": first, "later_starts": later}


async def _beside(target: Any) -> dict[str, Any]:
    async with Client(target) as client:
        await client.call_tool("execute_sql", {"sql": "SELECT 1"})
        waits: list[float] = []
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "execute_sql", {"sql": SLOW_SQL})
            await anyio.sleep(0.3)
            for _ in range(5):
                started = time.perf_counter()
                await client.call_tool("execute_sql", {"sql": "SELECT 1"})
                waits.append(round(time.perf_counter() - started, 3))
                await anyio.sleep(0.2)
        return {"select_1_waits_s": waits, "max_s": max(waits)}


async def _given_up(target: Any, pid: Callable[[], int]) -> float:
    async with Client(target) as client:
        await client.call_tool("execute_sql", {"sql": "SELECT 1"})
        with suppress(Exception):  # the client's own timeout: it gives up
            await client.call_tool("execute_sql", {"sql": SLOW_SQL}, read_timeout_seconds=0.5)
        await anyio.sleep(0.5)
        before = _cpu(pid())
        await anyio.sleep(2.0)
        return round((_cpu(pid()) - before) / 2.0, 3)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_child() -> int:
    mine = os.getpid()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == mine and b"sophrosyne" in cmdline and b"--http" not in cmdline:
                return int(entry.name)
    raise RuntimeError("no stdio server")


def transports(db: str) -> dict[str, Any]:
    """A quick call beside a slow one, and the CPU a server spends once a client gave up, stdio and HTTP."""
    env = {**os.environ, "SOPHROSYNE_TIMEOUT_S": "6", "SOPHROSYNE_DIRECTIVES": "none"}
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "sophrosyne", "serve", db], env=env)
    figures: dict[str, Any] = {"stdio": {}, "http": {}}
    figures["stdio"]["beside_slow"] = anyio.run(_beside, stdio)
    figures["stdio"]["cpu_share_after_give_up"] = anyio.run(_given_up, stdio, _server_child)
    port = 18_000 + os.getpid() % 1000
    process = subprocess.Popen(
        [sys.executable, "-m", "sophrosyne", "serve", db, "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while True:
            try:
                import urllib.request

                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        figures["http"]["beside_slow"] = anyio.run(_beside, url)
        figures["http"]["cpu_share_after_give_up"] = anyio.run(_given_up, url, lambda: process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return figures


def replaced_file(folder: Path) -> dict[str, Any]:
    path = folder / "served.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE old (id INTEGER)")
        conn.commit()
    env = Environment.open(path)
    env.list_tables()
    new = folder / "new.sqlite"
    with closing(sqlite3.connect(new)) as conn:
        conn.execute("CREATE TABLE shipments (port TEXT)")
        conn.execute("INSERT INTO shipments VALUES ('Rotterdam')")
        conn.commit()
    os.replace(new, path)
    started = time.perf_counter()
    while True:
        try:
            if env.execute_sql("SELECT port FROM shipments").rows == [["Rotterdam"]]:
                break
        except Exception:
            time.sleep(0.1)
    return {"served_after_s": round(time.perf_counter() - started, 3)}


def postgres_table(url: str) -> dict[str, Any]:
    import psycopg

    schema = f"soph_bench_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            env = Environment.open(f"{url}?options=-csearch_path%3D{schema}", settings=Settings(schemas="search_path"))
            env.list_tables()
            admin.execute(f'CREATE TABLE "{schema}".late (id INTEGER)')
            started = time.perf_counter()
            while "late" not in {t.name for t in env.list_tables().tables}:
                time.sleep(0.1)
            seconds = round(time.perf_counter() - started, 3)
            env.db.close()
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return {"visible_after_s": seconds}


def million_distinct(folder: Path) -> dict[str, Any]:
    path = folder / "distinct.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, code TEXT NOT NULL)")
        conn.executemany("INSERT INTO people VALUES (?, ?)", ((i, f"P{i:07d}") for i in range(1_000_000)))
        conn.commit()
    env = Environment.open(path)
    found, seconds = timed(lambda: env.get_distinct_values("people", "code", search="p0999993"))
    absent, absent_s = timed(lambda: env.get_distinct_values("people", "code", search="Q9999999"))
    return {
        "found": [(v.value, v.match) for v in found.values],
        "seconds": seconds,
        "note": found.note,
        "absent_note": absent.note,
        "absent_seconds": absent_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=Path("bench-out"), help="Where big databases are kept.")
    parser.add_argument("--json", type=Path, default=Path("bench-out/reliability.json"), help="Where to write.")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test", help="A server to use.")
    args = parser.parse_args()
    args.bench_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        report["big_schemas"] = big_schemas(args.bench_dir, [(3000, 100_000), (20_000, 1_000_000)])
        report["wide_table"] = wide(folder)
        report["startup_20000_tables"] = startup(str(args.bench_dir / "synthetic_20000_1000000.sqlite"))
        hr = folder / "hr.sqlite"
        with closing(sqlite3.connect(hr)) as conn:
            conn.execute("CREATE TABLE t (id INTEGER)")
            conn.commit()
        report["transports"] = transports(str(hr))
        report["replaced_sqlite_file"] = replaced_file(folder)
        try:
            report["postgres_new_table"] = postgres_table(args.postgres)
        except Exception as exc:
            report["postgres_new_table"] = {"skipped": str(exc).splitlines()[0]}
        report["million_distinct"] = million_distinct(folder)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
