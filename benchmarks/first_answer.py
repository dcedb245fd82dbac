"""The first answer of a fresh server process, beside the SDK's own echo server, in one run (issue 35).

Two SQLite databases of plausible names (plausible_db.py: domains x entities x qualifiers, 5-12 columns each),
a small one and a large one (5,000 tables), each indexed by `sophrosyne index` and served once before the
clock starts (the cache warm, as after a first session). Then, interleaved and `--runs` times, each server is
spawned over stdio with the SDK's client and timed from the spawn: the initialized session, and the first
answer (ours: `list_tables` with a question; the echo: its `echo` call), with the server's CPU time until then.
With `--base-src` the same code at another checkout (its `src`) runs beside ours as the baseline, its cache
warmed by itself. Every first answer must be complete (no error, no note that an index was not ready), and
ours must equal the base's word for word.

Example:
    .venv/bin/python benchmarks/first_answer.py --out bench-out/first_answer.json
    .venv/bin/python benchmarks/first_answer.py --base-src /work/main/src --runs 7 --out bench-out/first_answer.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

sys.path.insert(0, str(Path(__file__).parent))
from growth import NOT_READY, child_pid, text_of
from plausible_db import build_plausible

ROOT = Path(__file__).resolve().parents[1]
ECHO_SERVER = Path(__file__).with_name("echo_server.py")
QUESTION = "Which customers in the sales region paid their invoices in euros last month, and how many refunds?"
TARGETS = {"small_over_echo_s": 0.3, "large_first_s": 2.0}
SMALL_DOMAINS = ["sales", "billing"]  # the small database's tables, where the question's words live
TICKS = os.sysconf("SC_CLK_TCK")
DATA_TAG = re.compile(r"(</?data) [0-9a-f]+>")  # a data block's nonce differs in every answer


@dataclass
class Server:
    """One server to time: its command, environment and first call."""

    name: str
    args: list[str]
    env: dict[str, str]
    call: tuple[str, dict[str, Any]]
    marker: str  # a word of its command line, to find its process
    runs: list[dict[str, Any]] = field(default_factory=list)


def _cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of a process (all its threads) so far."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


async def first_answer(server: Server, errlog: Path, limit_s: float) -> dict[str, Any]:
    """Spawn the server, and time from the spawn its initialized session, its first answer and its first
    complete answer (the same as the first, or a later one within `limit_s`)."""
    params = StdioServerParameters(command=sys.executable, args=server.args, env=server.env, cwd=str(ROOT))
    run: dict[str, Any] = {}
    with errlog.open("a") as log:
        spawned = time.perf_counter()
        async with Client(stdio_client(params, errlog=log)) as session:
            run["initialized_s"] = round(time.perf_counter() - spawned, 3)
            pid = child_pid(server.marker)
            tool, arguments = server.call
            result = await session.call_tool(tool, arguments)
            run["first_s"] = round(time.perf_counter() - spawned, 3)
            run["first_cpu_s"] = _cpu_s(pid)
            text = text_of(result)
            run["complete"] = _complete(result)
            if not run["complete"]:
                run["answer"] = text[:400]
            # A first answer without everything (an index not ready within the call's time): the same call
            # again until one is complete, which is when the agent would have what it asked for.
            while not _complete(result) and time.perf_counter() - spawned < limit_s:
                await anyio.sleep(0.25)
                result = await session.call_tool(tool, arguments)
                text = text_of(result)
            run["complete_s"] = round(time.perf_counter() - spawned, 3) if _complete(result) else None
            run["complete_cpu_s"] = _cpu_s(pid)
    run["sha"] = hashlib.sha256(DATA_TAG.sub(r"\1>", text).encode()).hexdigest()[:16]
    return run


def _complete(result: CallToolResult) -> bool:
    return not result.is_error and not any(w in text_of(result) for w in NOT_READY)


async def warm_session(server: Server, errlog: Path, limit_s: float) -> bool:
    """One earlier session: its first call repeated until the answer is complete (the indexes loaded and
    saved); whether it was within `limit_s`."""
    params = StdioServerParameters(command=sys.executable, args=server.args, env=server.env, cwd=str(ROOT))
    with errlog.open("a") as log:
        async with Client(stdio_client(params, errlog=log)) as session:
            deadline = time.perf_counter() + limit_s
            while time.perf_counter() < deadline:
                if _complete(await session.call_tool(*server.call)):
                    return True
                await anyio.sleep(0.5)
    return False


def _environ(src: Path, cache: Path, pycache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPHROSYNE_") and k != "PYTHONDONTWRITEBYTECODE"}
    # Bytecode is written (as an installed package has it) under a prefix of this benchmark's, for every
    # checkout and the SDK alike: the warm-up sessions write it, the timed ones read it.
    return env | {"PYTHONPATH": str(src), "SOPHROSYNE_CACHE_DIR": str(cache), "PYTHONPYCACHEPREFIX": str(pycache)}


def _index(database: Path, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "sophrosyne", "index", str(database)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`sophrosyne index {database}` failed:\n{done.stderr[-2000:]}")


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median(key: str) -> float | None:
        values = [r[key] for r in runs if r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    return {
        "n": len(runs),
        "initialized_p50_s": median("initialized_s"),
        "first_p50_s": median("first_s"),
        "first_cpu_p50_s": median("first_cpu_s"),
        "complete_p50_s": median("complete_s"),
        "complete_cpu_p50_s": median("complete_cpu_s"),
        "first_s": [r["first_s"] for r in runs],
        "all_complete": all(r["complete"] for r in runs),
        "answers": sorted({r["sha"] for r in runs}),
    }


def _checks(summary: dict[str, dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    echo = summary["sdk-echo"]["first_p50_s"]
    ours = labels[0]
    small, large = summary[f"{ours}-small"], summary[f"{ours}-large"]
    value = round(small["first_p50_s"] - echo, 3)
    checks["small_over_echo_s"] = {"value": value, "limit": TARGETS["small_over_echo_s"]}
    checks["large_first_s"] = {"value": large["first_p50_s"], "limit": TARGETS["large_first_s"]}
    checks["large_complete_s"] = {"value": large["complete_p50_s"], "limit": TARGETS["large_first_s"]}
    for check in checks.values():
        check["pass"] = check["value"] is not None and check["value"] <= check["limit"]
    for name, result in summary.items():
        checks[f"{name}_complete"] = {"value": result["all_complete"], "limit": True, "pass": result["all_complete"]}
    if len(labels) > 1:
        for size in ("small", "large"):
            same = summary[f"{labels[0]}-{size}"]["answers"] == summary[f"{labels[1]}-{size}"]["answers"]
            checks[f"{size}_answer_equals_{labels[1]}"] = {"value": same, "limit": True, "pass": same}
    checks["all_pass"] = all(c["pass"] for c in checks.values())
    return checks


def _ratios(summary: dict[str, dict[str, Any]], labels: list[str]) -> dict[str, Any]:
    if len(labels) < 2:
        return {}
    ratios: dict[str, Any] = {}
    for size in ("small", "large"):
        mine, theirs = summary[f"{labels[0]}-{size}"], summary[f"{labels[1]}-{size}"]
        for key in ("first_p50_s", "first_cpu_p50_s", "complete_p50_s", "complete_cpu_p50_s", "initialized_p50_s"):
            if mine[key] and theirs[key]:
                ratios[f"{size}_{key}"] = round(mine[key] / theirs[key], 3)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=5000, help="Tables of the large database.")
    parser.add_argument("--small-tables", type=int, default=20, help="Tables of the small database.")
    parser.add_argument("--seed", type=int, default=11, help="Seed of the databases.")
    parser.add_argument("--runs", type=int, default=5, help="Fresh processes per server (medians reported).")
    parser.add_argument("--work", type=Path, default=ROOT / "bench-out/first_answer", help="Databases and caches.")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="The code measured (a checkout's src).")
    parser.add_argument("--base-src", type=Path, default=None, help="Another checkout's src, timed beside it.")
    parser.add_argument("--ready-timeout", type=float, default=300.0, help="Seconds a warm-up session may take.")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out/first_answer.json", help="The JSON report.")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    databases = {
        "small": build_plausible(
            work / f"plausible_{args.small_tables}.sqlite",
            tables=args.small_tables,
            seed=args.seed,
            domains=SMALL_DOMAINS,
        ),
        "large": build_plausible(work / f"plausible_{args.tables}.sqlite", tables=args.tables, seed=args.seed),
    }
    sources = {"ours": args.src.resolve()} | ({"base": args.base_src.resolve()} if args.base_src else {})
    labels = list(sources)
    pycache = work / "pycache"
    errlog = work / "servers.stderr"
    echo_env = _environ(sources["ours"], work / "cache-echo", pycache)
    servers = [Server("sdk-echo", [str(ECHO_SERVER)], echo_env, ("echo", {"text": "x"}), str(ECHO_SERVER))]
    for label, src in sources.items():
        env = _environ(src, work / f"cache-{label}", pycache)
        for size, shape in databases.items():
            call = ("list_tables", {"question": QUESTION})
            servers.append(Server(f"{label}-{size}", ["-m", "sophrosyne", "serve", shape.path], env, call, shape.path))
    for server in servers:  # the cache warmed as after `sophrosyne index` and one earlier session
        if server.name != "sdk-echo":
            _index(Path(server.args[-1]), server.env)
        if not anyio.run(warm_session, server, errlog, args.ready_timeout):
            raise SystemExit(f"{server.name}: no complete answer within {args.ready_timeout} s of warming up.")
        print(f"warmed {server.name}", flush=True)
    for round_ in range(args.runs):  # interleaved, each round in another order, so load falls on all alike
        turn = servers[round_ % len(servers) :] + servers[: round_ % len(servers)]
        for server in turn:
            run = anyio.run(first_answer, server, errlog, args.ready_timeout)
            run["load"] = round(os.getloadavg()[0], 2)
            server.runs.append(run)
            print(
                f"{server.name:>12}: initialized {run['initialized_s']:.3f} s, first answer {run['first_s']:.3f} s "
                f"(cpu {run['first_cpu_s']} s), complete {run['complete_s']} s (cpu {run['complete_cpu_s']} s), "
                f"load {run['load']}",
                flush=True,
            )
    summary = {server.name: _summary(server.runs) for server in servers}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    report = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "commit": commit.stdout.strip(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
        "sources": {label: str(src) for label, src in sources.items()},
        "databases": {size: vars(shape) for size, shape in databases.items()},
        "question": QUESTION,
        "summary": summary,
        "ratios_ours_over_base": _ratios(summary, labels),
        "runs": {server.name: server.runs for server in servers},
    }
    report["checks"] = _checks(summary, labels)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    for name, result in summary.items():
        print(
            f"{name:>12}: initialized p50 {result['initialized_p50_s']} s, first answer p50 {result['first_p50_s']} s, "
            f"cpu p50 {result['first_cpu_p50_s']} s, complete p50 {result['complete_p50_s']} s, "
            f"cpu p50 {result['complete_cpu_p50_s']} s"
        )
    print(json.dumps({"ratios_ours_over_base": report["ratios_ours_over_base"], "checks": report["checks"]}, indent=2))
    sys.exit(0 if report["checks"]["all_pass"] else 1)


if __name__ == "__main__":
    main()
