"""A fair share for every client (issue 33): another client's trivial call, unloaded and under one client's flood
of slow calls (SQLite statements, PostgreSQL statements, sleeping `run_python` programs), measured in one run
over streamable HTTP with two bearer tokens, written as JSON.

Example:
    .venv/bin/python benchmarks/fair_share.py --out bench-out/fair_share.json

Acceptance (issue 33): under the flood, the other client's trivial call p99 <= 3x its unloaded p99 + 50 ms.
Run with PYTHONPATH pointing at another checkout's `src` to measure that code instead (the baseline).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent

from sophrosyne.sql.policy import hash_token

ROOT = Path(__file__).resolve().parents[1]
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
PG_SCHEMA = "fair_share_bench"
TOKENS = {"flooder": "flood-token-5e1c0a", "other": "other-token-93d7b2"}
POLICY = f"""
default_role = "reader"

[roles.reader]

[tokens]
"{hash_token(TOKENS["flooder"])}" = "reader"
"{hash_token(TOKENS["other"])}" = "reader"
"""
TRIVIAL_SQL = "SELECT 1 AS one"
TRIVIAL_PROGRAM = "result = 1"
SLOW = {
    # Both keep a core busy until their time limit stops them, with little memory.
    "sqlite": ("execute_sql", {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                               "WHERE x < 1000000000) SELECT COUNT(*) FROM c"}),
    "postgres": ("execute_sql", {"sql": "SELECT COUNT(*) FROM generate_series(1, 100000) AS a, "
                                 "generate_series(1, 100000) AS b"}),
    "python": ("run_python", {"code": "import time\ntime.sleep(12)\nresult = 1"}),
}  # fmt: skip
ACCEPTANCE = "loaded p99 <= 3 x unloaded p99 + 50 ms"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server(target: str, folder: Path, python: bool, timeout_s: float) -> Iterator[str]:
    """`sophrosyne serve TARGET --http` with the two tokens' policy, ready when /health answers."""
    (folder / "policy.toml").write_text(POLICY)
    port = free_port()
    args = [sys.executable, "-m", "sophrosyne", "serve", target, "--http", "--port", str(port)]
    args += ["--policy", str(folder / "policy.toml"), *(["--allow-python"] if python else [])]
    env = {**os.environ, "SOPHROSYNE_DIRECTIVES": "none", "SOPHROSYNE_TIMEOUT_S": str(timeout_s)}
    if target.startswith("postgresql"):
        env["SOPHROSYNE_SCHEMAS"] = PG_SCHEMA
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the server exited: {process.stderr.read().decode() if process.stderr else ''}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not answer /health within 60 s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


@contextlib.asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def outcome(result: CallToolResult) -> str:
    if not result.is_error:
        return "ok"
    text = text_of(result)
    for word, kind in (("at most", "busy"), ("busy", "busy"), ("time limit", "timeout"), ("timeout", "timeout")):
        if word in text:
            return kind
    return "error: " + text[:120]


def summary(seconds: list[float], outcomes: list[str]) -> dict[str, Any]:
    ms = sorted(s * 1000 for s in seconds)
    p99 = statistics.quantiles(ms, n=100)[98] if len(ms) > 1 else ms[0]
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p99_ms": round(p99, 1),
        "max_ms": round(ms[-1], 1),
        "outcomes": dict(Counter(outcomes)),
    }


async def timed_calls(client: Client, tool: str, arguments: dict[str, Any], n: int, limit_s: float) -> dict[str, Any]:
    """`n` calls one after another, each given at most `limit_s` (a call past it counts at `limit_s`)."""
    seconds, outcomes = [], []
    for _ in range(n):
        started = time.perf_counter()
        with anyio.move_on_after(limit_s) as scope:
            result = await client.call_tool(tool, arguments)
        seconds.append(time.perf_counter() - started)
        outcomes.append("client gave up" if scope.cancelled_caught else outcome(result))
    return summary(seconds, outcomes)


async def scenario(
    url: str, slow: tuple[str, dict[str, Any]], args: argparse.Namespace, python: bool
) -> dict[str, Any]:
    """The other client's trivial calls unloaded, then while the flooder keeps `--flood` slow calls going."""
    trivial: list[tuple[str, str, dict[str, Any]]] = [("sql", "execute_sql", {"sql": TRIVIAL_SQL})]
    if python:
        trivial.append(("program", "run_python", {"code": TRIVIAL_PROGRAM}))
    flood: list[str] = []
    report: dict[str, Any] = {"flood": args.flood, "slow_call": slow[1]}
    async with session(url, TOKENS["other"]) as other, session(url, TOKENS["flooder"]) as flooder:
        for name, tool, arguments in trivial:
            await timed_calls(other, tool, arguments, 20 if name == "sql" else 2, args.limit_s)  # warm-up
            n = args.program_calls if name == "program" else args.calls  # a sandbox takes a second to start
            report[f"{name}_unloaded"] = await timed_calls(other, tool, arguments, n, args.limit_s)

        async def keep_one_going() -> None:
            while True:
                result = await flooder.call_tool(*slow)
                flood.append(outcome(result))
                if result.is_error and "at most" in text_of(result):
                    await anyio.sleep(0.1)  # refused at once: a moment before sending it again

        async with anyio.create_task_group() as group:
            for _ in range(args.flood):
                group.start_soon(keep_one_going)
            await anyio.sleep(args.ramp_s)
            for name, tool, arguments in trivial:
                n = args.program_calls if name == "program" else args.calls
                report[f"{name}_loaded"] = await timed_calls(other, tool, arguments, n, args.limit_s)
            group.cancel_scope.cancel()
    report["flood_outcomes"] = dict(Counter(flood))
    for name, _, _ in trivial:
        unloaded, loaded = report[f"{name}_unloaded"]["p99_ms"], report[f"{name}_loaded"]["p99_ms"]
        limit = 3 * unloaded + 50
        report[f"{name}_check"] = {"loaded_p99_ms": loaded, "limit_ms": round(limit, 1), "pass": loaded <= limit}
    return report


def sqlite_database(folder: Path) -> str:
    folder.mkdir()
    import sqlite3

    path = folder / "fair.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO items (name) VALUES (?)", [(f"item {i}",) for i in range(100)])
        conn.commit()
    return str(path)


def postgres_database(url: str) -> str:
    import sqlalchemy as sa

    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}"))
        conn.execute(sa.text(f"CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.items (id int PRIMARY KEY, name text)"))
    engine.dispose()
    return url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "fair_share.json")
    parser.add_argument("--scenarios", default="sqlite,postgres,python", help="comma-separated: " + ", ".join(SLOW))
    parser.add_argument("--calls", type=int, default=100, help="trivial calls timed per phase")
    parser.add_argument("--program-calls", type=int, default=20, help="trivial programs timed per phase")
    parser.add_argument("--flood", type=int, default=40, help="slow calls the flooder keeps going")
    parser.add_argument("--ramp-s", type=float, default=2.0, help="seconds the flood runs before the timing")
    parser.add_argument("--timeout-s", type=float, default=5.0, help="the server's timeout_s: a slow call's length")
    parser.add_argument("--limit-s", type=float, default=15.0, help="longest the client waits for a trivial call")
    parser.add_argument("--pg-url", default=PG_URL)
    parser.add_argument("--label", default="", help="a name for the code measured (e.g. main)")
    args = parser.parse_args()
    import sophrosyne

    report: dict[str, Any] = {
        "label": args.label,
        "code": str(Path(sophrosyne.__file__).parents[1]),
        "cores": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "acceptance": ACCEPTANCE,
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "label")},
        "scenarios": {},
    }
    with tempfile.TemporaryDirectory(prefix="fair-share-") as tmp:
        folder = Path(tmp)
        for name in args.scenarios.split(","):
            target = postgres_database(args.pg_url) if name == "postgres" else sqlite_database(folder / name)
            with server(target, folder, name == "python", args.timeout_s) as url:
                result = anyio.run(scenario, url, SLOW[name], args, name == "python")
            report["scenarios"][name] = result
            for phase in ("sql", "program"):
                if f"{phase}_check" in result:
                    u, lo, c = result[f"{phase}_unloaded"], result[f"{phase}_loaded"], result[f"{phase}_check"]
                    print(
                        f"{name:8} trivial {phase:7}: unloaded p50 {u['p50_ms']:7.1f} p99 {u['p99_ms']:7.1f} ms | "
                        f"flooded p50 {lo['p50_ms']:7.1f} p99 {lo['p99_ms']:7.1f} ms (limit {c['limit_ms']:.0f}) "
                        f"{'PASS' if c['pass'] else 'FAIL'} {lo['outcomes']}"
                    )
            print(f"{name:8} flooder's calls: {result['flood_outcomes']}")
    report["load_average_after"] = list(os.getloadavg())
    checks = [r[k]["pass"] for r in report["scenarios"].values() for k in r if k.endswith("_check")]
    report["all_pass"] = all(checks)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"load average {report['load_average']} -> {report['load_average_after']}; wrote {args.out}")
    return 0 if report["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
