"""Serving a team over streamable HTTP: Sophrosyne's `serve --http` beside DBHub on the same SQLite file, N
concurrent MCP clients per level, in one run: req/s, p50/p99 latency and server CPU per call, ratios ours/DBHub.

The clients are a light load generator of our own (raw JSON-RPC over HTTP/1.1 keep-alive on asyncio streams,
with the MCP handshake), in their own process(es): their CPU is measured apart and is not in the servers'.
A server's CPU is the utime+stime of its process tree (/proc/PID/stat) at the start and end of a level's window.

Example:
    .venv/bin/python benchmarks/serving.py --out /work/bench-out/serving.json
    .venv/bin/python benchmarks/serving.py --duration 10 --levels 1,32 --base-src /work/main/src --out /tmp/s.json

Acceptance (issue 35): with one worker, throughput at 32 clients >= 0.8x DBHub's, server CPU per small call
<= 1.5 ms, p99 at 64 clients <= 1.5x DBHub's. With two workers on two cores, throughput >= 1.6x one worker's
and memory <= 1.3x: `--servers sophrosyne,sophrosyne-w2` serves ours with one worker and with two side by side,
and `workers` in the report has both ratios (req/s, PSS summed over each server's processes after each level),
with the load generator's CPU per call and the ceiling that the machine's cores leave for the ratio:
    .venv/bin/python benchmarks/serving.py --servers sophrosyne,sophrosyne-w2 --levels 32 --out /tmp/w.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bytecode import compile_package
from soak import memory_mb
from stats import percentile

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = "2025-06-18"
SMALL_SQL = "SELECT atom_id, element FROM atom WHERE molecule_id = 'TR000'"  # peers.py's small query
SECOND_SQL = "SELECT bond_id, bond_type FROM bond WHERE molecule_id = 'TR001'"
TARGETS = {"throughput_32_vs_dbhub": 0.8, "cpu_per_call_ms": 1.5, "p99_64_vs_dbhub": 1.5}
WORKER_TARGETS = {"throughput_vs_one_worker": 1.6, "pss_vs_one_worker": 1.3}
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Target:
    """A server under load: how to start it over HTTP, and the calls of the mix (each client goes round them)."""

    name: str
    command: list[str]
    mix: list[tuple[str, dict[str, Any]]]
    env: dict[str, str] = field(default_factory=dict)


def ours_mix() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("execute_sql", {"sql": SMALL_SQL}),
        ("describe_table", {"table": "atom"}),
        ("execute_sql", {"sql": SECOND_SQL}),
        ("describe_table", {"table": "bond"}),
    ]


def dbhub_mix() -> list[tuple[str, dict[str, Any]]]:
    def describe(table: str) -> dict[str, Any]:
        return {"object_type": "column", "schema": "main", "table": table, "detail_level": "full"}

    return [
        ("execute_sql", {"sql": SMALL_SQL}),
        ("search_objects", describe("atom")),
        ("execute_sql", {"sql": SECOND_SQL}),
        ("search_objects", describe("bond")),
    ]


def ours(name: str, db: Path, cache: Path, workers: int, src: str | None = None) -> Target:
    command = [sys.executable, "-m", "sophrosyne", "serve", str(db), "--http", "--port", "{port}"]
    command += ["--workers", str(workers)] if workers > 1 else []
    env = {"SOPHROSYNE_CACHE_DIR": str(cache), **({"PYTHONPATH": src} if src else {})}
    return Target(name, command, ours_mix(), env)


def dbhub(peers_dir: Path, db: Path) -> Target | str:
    from peers import install_dbhub  # its installer (loaded here: peers.py imports the MCP SDK's client)

    installed = install_dbhub(peers_dir, db)
    if isinstance(installed, str):
        return installed
    node, entry, *_, config = installed.command
    return Target("dbhub", [node, entry, "--transport", "http", "--port", "{port}", "--config", config], dbhub_mix())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The load generator: one keep-alive connection per client, JSON-RPC posted by hand (no HTTP library: the
# clients must cost far less than the servers they measure).


class Connection:
    """One MCP client over streamable HTTP: the handshake, then one call at a time on a keep-alive connection."""

    def __init__(self, port: int, path: str = "/mcp") -> None:
        self.port, self.path = port, path
        self.session: str | None = None
        self.protocol: str | None = None
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.next_id = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        result = await self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "serving-bench", "version": "1"}},
        )
        self.protocol = result["result"]["protocolVersion"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        body = await self.post({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        for message in messages(body):
            if message.get("id") == wanted:
                return message
        raise RuntimeError(f"no answer to {method} in {body[:200]!r}")

    async def post(self, message: dict[str, Any]) -> bytes:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        payload = json.dumps(message, separators=(",", ":")).encode()
        head = [
            f"POST {self.path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"Content-Length: {len(payload)}",
        ]
        if self.session:
            head.append(f"Mcp-Session-Id: {self.session}")
        if self.protocol:
            head.append(f"MCP-Protocol-Version: {self.protocol}")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
        status, headers, body = await read_response(self.reader)
        if headers.get("connection") == "close":
            await self.close()
            self.writer = None
        if status >= 400:
            raise RuntimeError(f"HTTP {status}: {body[:300]!r}")
        self.session = headers.get("mcp-session-id", self.session)
        return body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            parts.append(chunk[:-2])
        return status, headers, b"".join(parts)
    if "content-length" in headers:
        return status, headers, await reader.readexactly(int(headers["content-length"]))
    if status in (202, 204) or headers.get("connection") != "close":
        return status, headers, b""
    return status, headers, await reader.read()


def messages(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response: one JSON body, or the `data:` of each event of a stream."""
    text = body.decode()
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    found, data = [], []
    for line in text.splitlines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line.strip():
            found.append("\n".join(data))
            data = []
    found.append("\n".join(data))
    return [json.loads(event) for event in found if event.strip()]  # a priming event carries no data


def failure(message: dict[str, Any]) -> str | None:
    """Why an answer is not a good one (a JSON-RPC error, a tool error), None when it is."""
    if "error" in message:
        return f"rpc error: {message['error']}"
    result = message.get("result", {})
    if result.get("isError"):
        return "tool error: " + " ".join(c.get("text", "") for c in result.get("content", []))[:300]
    return None


async def _clients(
    port: int, mix: list[tuple[str, dict[str, Any]]], clients: int, offset: int, start: float, window: float
) -> dict[str, Any]:
    """`clients` clients calling round the mix from `start` (a wall-clock time) until the window ends; the
    latencies of the calls that end inside the window, the errors, and this process's CPU over the window."""
    end = start + window
    latencies: list[float] = []
    errors: list[str] = []
    cpu: dict[str, float] = {}

    async def mark(at: float, key: str) -> None:
        await asyncio.sleep(max(0.0, at - time.time()))
        cpu[key] = time.process_time()

    async def client(index: int) -> None:
        connection = Connection(port)
        await connection.open()
        turn = index + offset  # the clients start at different calls of the mix
        try:
            while time.time() < end:
                tool, arguments = mix[turn % len(mix)]
                turn += 1
                began = time.time()
                try:
                    why = failure(await connection.call(tool, arguments))
                except (OSError, RuntimeError, asyncio.IncompleteReadError, ValueError) as exc:
                    why = f"{type(exc).__name__}: {exc}"
                    await connection.close()
                    connection.writer = None
                done = time.time()
                if start <= done <= end:
                    if why is None:
                        latencies.append(done - began)
                    else:
                        errors.append(why)
        finally:
            await connection.close()

    await asyncio.gather(mark(start, "start"), mark(end, "end"), *(client(i) for i in range(clients)))
    return {"latencies": latencies, "errors": errors, "cpu_s": cpu["end"] - cpu["start"]}


def load(
    port: int, mix: list[tuple[str, dict[str, Any]]], clients: int, offset: int, start: float, window: float
) -> dict[str, Any]:
    """(In a client process.) The load of `_clients`."""
    return asyncio.run(_clients(port, mix, clients, offset, start, window))


# The servers and their CPU.


def tree_cpu_s(pid: int) -> float:
    """utime+stime in seconds of `pid` and every live descendant (an HTTP server's workers)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(entry.name)
        parents[child] = int(fields[1])
        times[child] = (int(fields[11]) + int(fields[12])) / CLOCK_TICK
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        total += times.get(current, 0.0)
        stack.extend(p for p, parent in parents.items() if parent == current)
    return total


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (every core, every process: /proc/stat) since it started."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICK


@contextlib.contextmanager
def running(target: Target, log: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`target` started on a free port, ready once a client completes the handshake and one call of the mix."""
    port = free_port()
    command = [part.replace("{port}", str(port)) for part in target.command]
    with open(log, "wb") as errors:
        process = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, **target.env}, stdout=subprocess.DEVNULL, stderr=errors
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None:
                    raise SystemExit(f"{target.name} exited: {log.read_text()[-2000:]}")
                try:
                    asyncio.run(_probe(port, target.mix[0]))
                    break
                except (OSError, RuntimeError, asyncio.IncompleteReadError):
                    if time.monotonic() > deadline:
                        why = f"{target.name} did not answer within 120 s: {log.read_text()[-2000:]}"
                        raise SystemExit(why) from None
                    time.sleep(0.2)
            yield port, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _probe(port: int, call: tuple[str, dict[str, Any]]) -> None:
    connection = Connection(port)
    try:
        await connection.open()
        answer = await connection.call(*call)
        if failure(answer):
            raise SystemExit(f"the first call failed: {failure(answer)}")
    finally:
        await connection.close()


def measure_level(
    pool: ProcessPoolExecutor, port: int, pid: int, target: Target, clients: int, warmup_s: float, window_s: float
) -> dict[str, Any]:
    """One level: `clients` clients split over the pool's processes; the window opens after `warmup_s`."""
    procs = min(pool._max_workers, clients)  # type: ignore[attr-defined]
    start = time.time() + 1.0 + warmup_s  # a second for the processes to connect, then the warm-up
    shares = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    offsets = [sum(shares[:i]) for i in range(procs)]
    futures = [
        pool.submit(load, port, target.mix, share, offset, start, window_s)
        for share, offset in zip(shares, offsets, strict=True)
    ]
    time.sleep(max(0.0, start - time.time()))
    cpu_before, machine_before = tree_cpu_s(pid), machine_busy_s()
    time.sleep(max(0.0, start + window_s - time.time()))
    cpu_after, machine_after = tree_cpu_s(pid), machine_busy_s()
    memory = memory_mb(pid)  # every process of the server, loaded
    parts = [f.result() for f in futures]
    latencies = sorted(x for p in parts for x in p["latencies"])
    errors = [e for p in parts for e in p["errors"]]
    calls = len(latencies)
    server_cpu = cpu_after - cpu_before
    client_cpu = sum(p["cpu_s"] for p in parts)
    return {
        "clients": clients,
        "calls": calls,
        "errors": len(errors),
        "first_errors": sorted(set(errors))[:3],
        "req_per_s": round(calls / window_s, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_per_call_ms": round(server_cpu * 1000 / calls, 3) if calls else None,
        "server_cores_busy": round(server_cpu / window_s, 2),
        "client_cpu_per_call_ms": round(client_cpu * 1000 / calls, 3) if calls else None,
        "client_cores_busy": round(client_cpu / window_s, 2),
        # Everything else the machine ran meanwhile (other programs): the cores it left to this benchmark.
        "other_cores_busy": round(max(0.0, machine_after - machine_before - server_cpu - client_cpu) / window_s, 2),
        "server_pss_mb": memory["pss_mb"],
        "server_rss_mb": memory["rss_mb"],
        "server_anon_mb": memory["anon_mb"],
    }


def ratios(results: dict[str, dict[str, Any]], ours_name: str, peer: str) -> dict[str, Any]:
    out = {}
    for level, mine in results[ours_name].items():
        theirs = results[peer].get(level)
        if not theirs:
            continue

        def ratio(key: str, mine: dict[str, Any] = mine, theirs: dict[str, Any] = theirs) -> float | None:
            a, b = mine.get(key), theirs.get(key)
            return round(a / b, 2) if a is not None and b else None

        out[level] = {k: ratio(k) for k in ("req_per_s", "p50_ms", "p99_ms", "server_cpu_per_call_ms")}
    return out


def checks(results: dict[str, dict[str, Any]], by_dbhub: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    ours_levels = results.get("sophrosyne", {})
    cpu = [lvl["server_cpu_per_call_ms"] for lvl in ours_levels.values() if lvl["server_cpu_per_call_ms"]]
    if cpu:
        worst = max(cpu)
        found["cpu_per_call_ms"] = {
            "value": worst,
            "limit": TARGETS["cpu_per_call_ms"],
            "pass": worst <= TARGETS["cpu_per_call_ms"],
        }
    for key, level, what, above in (
        ("throughput_32_vs_dbhub", "32", "req_per_s", False),
        ("p99_64_vs_dbhub", "64", "p99_ms", True),
    ):
        value = by_dbhub.get(level, {}).get(what)
        if value is not None:
            limit = TARGETS[key]
            found[key] = {"value": value, "limit": limit, "pass": value <= limit if above else value >= limit}
    errors = sum(lvl["errors"] for levels in results.values() for lvl in levels.values())
    found["no_errors"] = {"value": errors, "limit": 0, "pass": errors == 0}
    found["all_pass"] = all(c["pass"] for c in found.values())
    return found


def worker_figures(results: dict[str, dict[str, Any]], cores: int) -> dict[str, Any]:
    """Each `sophrosyne-wN` (and `base-wN`) beside `sophrosyne` (one worker), level by level: the ratios of req/s
    and of memory (PSS, and its anonymous part), and the ceiling of the req/s ratio on this machine: the `cores`
    that other programs left during the N-worker window, shared by the server and the load generator, each call
    costing both their CPU (the N-worker server's and the clients', per call), against one worker's req/s. A
    ratio at the ceiling is as much as those cores can give, whatever the server does."""
    one = results.get("sophrosyne", {})
    found: dict[str, Any] = {}
    for name, levels in results.items():
        if not name.startswith(("sophrosyne-w", "base-w")):
            continue
        for level, many in levels.items():
            single = one.get(level)
            if not single or not single["req_per_s"] or not many["req_per_s"]:
                continue
            per_call_ms = (many["server_cpu_per_call_ms"] or 0) + (many["client_cpu_per_call_ms"] or 0)
            free = max(0.0, cores - many["other_cores_busy"])
            ceiling = free * 1000 / per_call_ms / single["req_per_s"] if per_call_ms else None
            found[f"{name}@{level}"] = {
                "req_per_s": [single["req_per_s"], many["req_per_s"]],
                "throughput_vs_one_worker": round(many["req_per_s"] / single["req_per_s"], 2),
                "pss_mb": [single["server_pss_mb"], many["server_pss_mb"]],
                "pss_vs_one_worker": round(many["server_pss_mb"] / single["server_pss_mb"], 2),
                "anon_mb": [single["server_anon_mb"], many["server_anon_mb"]],
                "anon_vs_one_worker": round(many["server_anon_mb"] / single["server_anon_mb"], 2),
                "rss_vs_one_worker": round(many["server_rss_mb"] / single["server_rss_mb"], 2),
                "server_cpu_per_call_ms": [single["server_cpu_per_call_ms"], many["server_cpu_per_call_ms"]],
                "client_cpu_per_call_ms": [single["client_cpu_per_call_ms"], many["client_cpu_per_call_ms"]],
                "cores_busy_server_and_clients": [
                    round(single["server_cores_busy"] + single["client_cores_busy"], 2),
                    round(many["server_cores_busy"] + many["client_cores_busy"], 2),
                ],
                "cores_busy_others": [single["other_cores_busy"], many["other_cores_busy"]],
                "ceiling_vs_one_worker": round(ceiling, 2) if ceiling else None,
                "targets": WORKER_TARGETS,
            }
    return found


def run(
    *,
    out: Path,
    peers_dir: Path,
    servers: list[str],
    levels: list[int],
    duration_s: float,
    warmup_s: float,
    workers: int,
    client_procs: int,
    base_src: str | None,
    db: Path | None = None,
) -> dict[str, Any]:
    """The whole benchmark: the servers started side by side, each level measured on each in turn. `db`: a
    SQLite file with BIRD toxicology's `atom` and `bond` (by default a copy of BIRD's, in `peers_dir`)."""
    peers_dir.mkdir(parents=True, exist_ok=True)
    compile_package()
    if db is None:
        from peers import SOURCE_DB

        if not SOURCE_DB.is_file():
            raise SystemExit(f"BIRD's toxicology database is not at {SOURCE_DB} (set SOPHROSYNE_DATASETS)")
        db = peers_dir / "toxicology.sqlite"  # a copy: every server reads the same file, none the shared one
        if not db.exists():
            shutil.copyfile(SOURCE_DB, db)
    cache = peers_dir / "cache"
    env = {**os.environ, "SOPHROSYNE_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-m", "sophrosyne", "index", str(db)], env=env, check=True, capture_output=True)
    targets: list[Target] = []
    skipped: dict[str, str] = {}
    for name in servers:
        if name == "sophrosyne":
            targets.append(ours("sophrosyne", db, cache, workers))
        elif name.startswith("sophrosyne-w") and name[len("sophrosyne-w") :].isdigit():
            targets.append(ours(name, db, cache, int(name[len("sophrosyne-w") :])))
        elif name == "base" or (name.startswith("base-w") and name[len("base-w") :].isdigit()):
            if base_src is None:
                raise SystemExit(f"--servers {name} needs --base-src (another checkout's src folder)")
            count = int(name[len("base-w") :]) if name != "base" else workers
            targets.append(ours(name, db, cache, count, base_src))
        elif name == "dbhub":
            peer = dbhub(peers_dir, db)
            if isinstance(peer, str):
                skipped["dbhub"] = peer
            else:
                targets.append(peer)
        else:
            raise SystemExit(f"unknown server {name!r}: choose among sophrosyne, sophrosyne-wN, base, base-wN, dbhub")
    load_before = os.getloadavg()
    results: dict[str, dict[str, Any]] = {t.name: {} for t in targets}
    logs = out.parent / "serving-logs"
    logs.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        started = {t.name: stack.enter_context(running(t, logs / f"{t.name}.log")) for t in targets}
        pool = stack.enter_context(ProcessPoolExecutor(max_workers=client_procs))
        for clients in levels:  # each level on every server in turn: the machine's load falls on all alike
            for target in targets:
                port, process = started[target.name]
                figures = measure_level(pool, port, process.pid, target, clients, warmup_s, duration_s)
                figures["load_after"] = os.getloadavg()[0]
                results[target.name][str(clients)] = figures
                print(f"{target.name:>12} {clients:>3} clients: " + json.dumps(figures), flush=True)
    mine = "sophrosyne" in results
    peers = [name for name in results if not name.startswith(("sophrosyne", "base-w"))]
    by_peer = {peer: ratios(results, "sophrosyne", peer) for peer in peers if mine}
    report = {
        "machine": {"cores": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()},
        "database": str(db),
        "settings": {
            "levels": levels,
            "duration_s": duration_s,
            "warmup_s": warmup_s,
            "workers": workers,
            "client_procs": client_procs,
            "client": "raw JSON-RPC over HTTP/1.1 keep-alive (asyncio streams), one connection per client",
            "mix": {t.name: [call[0] for call in t.mix] for t in targets},
        },
        "skipped": skipped,
        "servers": {t.name: t.command for t in targets},
        "results": results,
        "ratios_ours_over_peer": by_peer,
        "checks": checks(results, by_peer.get("dbhub", {})),
        "workers": worker_figures(results, os.cpu_count() or 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/work/bench-out/serving.json"))
    parser.add_argument("--peers-dir", type=Path, default=Path("/work/bench-out/peers"))
    parser.add_argument(
        "--servers",
        default="sophrosyne,dbhub",
        help="among sophrosyne, sophrosyne-wN (N workers), base, base-wN, dbhub",
    )
    parser.add_argument("--levels", default="1,32,64", help="concurrent clients, comma-separated")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds measured per level and server")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of load before each window")
    parser.add_argument("--workers", type=int, default=1, help="ours: HTTP worker processes")
    parser.add_argument("--client-procs", type=int, default=1, help="processes the clients are spread over")
    parser.add_argument("--base-src", help="`base`: another checkout's src folder (PYTHONPATH), e.g. /work/main/src")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    report = run(
        out=args.out,
        peers_dir=args.peers_dir,
        servers=args.servers.split(","),
        levels=[int(x) for x in args.levels.split(",")],
        duration_s=args.duration,
        warmup_s=args.warmup,
        workers=args.workers,
        client_procs=args.client_procs,
        base_src=args.base_src,
    )
    print(f"skipped: {report['skipped'] or 'none'}; load {report['machine']}")
    print("ratios:", json.dumps(report["ratios_ours_over_peer"]))
    print("checks:", json.dumps(report["checks"]))
    for key, figures in report["workers"].items():
        print(f"workers {key}:", json.dumps(figures))
    sys.exit(0 if report["checks"]["all_pass"] else 1)


if __name__ == "__main__":
    main()
