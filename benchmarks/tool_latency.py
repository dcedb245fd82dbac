"""Tool latency benchmark: per-tool p50/p95 in-process and over stdio, beside a bare echo tool in the same run.

Builds (once, cached) a deterministic synthetic SQLite database with many tables and one large table, then
times every Environment tool in-process and through the official MCP SDK client against a spawned
`python -m sophrosyne serve DB`, interleaved with calls to a bare echo tool on a minimal MCPServer spawned
the same way, so the ratio tool / echo is measured on the same machine at the same time. Writes JSON.

Example:
    .venv/bin/python benchmarks/tool_latency.py --out bench-out/tool_latency.json
    .venv/bin/python benchmarks/tool_latency.py --tables 50 --rows 20000 --repeats 5 --db /tmp/small.sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import math
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

BUILD_VERSION = 1
# Marks a file as built by this script, so --db never overwrites a database it did not build.
APPLICATION_ID = 0x536F7068  # "Soph"
BIG_TABLE = "people"
SEARCH_COLUMN = "full_name"
SEARCH_TERMS = ("smith", "maria", "garcia lopez", "jhonson", "zzqxv")  # common, first name, two words, typo, none
ECHO_SERVER = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="echo")


@server.tool()
def echo(text: str) -> str:
    \"\"\"Return the text unchanged.\"\"\"
    return text


server.run("stdio")
"""
# Acceptance limits (issue 2). The stdio check uses the cheapest data tool: its in-process work is small, so
# the ratio measures what the server adds to a round trip, not the cost of the query itself.
LIMITS = {"list_tables_p95_ms": 50.0, "describe_table_p95_ms": 20.0, "search_p95_ms": 300.0, "stdio_ratio": 2.0}
STDIO_CHECK_CASE = "execute_sql[small]"


def _words(text: str) -> list[str]:
    return text.split()


FIRST_NAMES = _words(
    """
James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara Richard Susan
Joseph Jessica Thomas Sarah Charles Karen Christopher Nancy Daniel Lisa Matthew Betty Anthony Margaret Mark Sandra
Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Dorothy Kevin Carol Brian Amanda George
Melissa Edward Deborah Ronald Stephanie Timothy Rebecca Jason Sharon Jeffrey Laura Ryan Cynthia Jacob Kathleen Gary
Amy Nicholas Shirley Eric Angela Jonathan Helen Stephen Anna Larry Brenda Justin Pamela Scott Nicole Brandon Emma
Benjamin Samantha Samuel Katherine Gregory Christine Frank Debra Alexander Rachel Raymond Catherine Patrick Carolyn
Jack Janet Dennis Ruth Jerry Maria Tyler Heather Aaron Diane Jose Virginia Adam Julie Henry Joyce Nathan Victoria
Douglas Olivia Zachary Kelly Peter Christina Kyle Lauren Walter Joan Ethan Evelyn Jeremy Judith Harold Megan Keith
Cheryl Christian Andrea Roger Hannah Noah Martha Gerald Jacqueline Carl Frances Terry Gloria Sean Ann Austin Teresa
Arthur Kathryn Lawrence Sara Jesse Janice Dylan Jean Bryan Alice Joe Madison Jordan Doris Billy Abigail Bruce Julia
Albert Judy Willie Grace Gabriel Denise Logan Amber Alan Marilyn Juan Beverly Wayne Danielle Roy Theresa Ralph Sophia
Randy Marie Eugene Diana Vincent Brittany Russell Natalie Elijah Isabella Louis Charlotte Bobby Rose Philip Alexis
Johnny Kayla Lucia Mateo Sofia Hugo Ines Pierre Amelie Lukas Greta Marco Giulia Ahmed Fatima Kenji Yuki Wei Mei
Ravi Priya Olga Ivan Sven Astrid Diego Camila"""
)
LAST_NAMES = _words(
    """
Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson
Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis Robinson
Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell
Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales Murphy Cook
Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward Richardson Watson Brooks
Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Long Ross Foster
Jimenez Powell Jenkins Perry Russell Sullivan Bell Coleman Butler Henderson Barnes Gonzales Fisher Vasquez Simmons
Romero Jordan Patterson Alexander Hamilton Graham Reynolds Griffin Wallace Moreno West Cole Hayes Bryant Herrera
Gibson Ellis Tran Medina Aguilar Stevens Murray Ford Castro Marshall Owens Harrison Fernandez McDonald Woods
Washington Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford Olson Simpson Porter Hunter
Gordon Mendez Silva Shaw Snyder Mason Dixon Munoz Hunt Hicks Holmes Palmer Wagner Black Robertson Boyd Rose Stone
Salazar Fox Warren Mills Meyer Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner Payne
Grant Dunn Kelley Spencer Hawkins Arnold Pierce Vazquez Hansen Peters Santos Hart Bradley Knight Elliott Cunningham
Duncan Armstrong Hudson Carroll Lane Riley Andrews Alvarado Ray Delgado Berry Perkins Hoffman Johnston Matthews
Pena Richards Contreras Willis Carpenter Lawrence Sandoval Muller Schneider Fischer Weber Becker Rossi Russo Bianchi
Dubois Moreau Laurent Novak Kowalski Ivanov Petrov Larsen Nielsen Jansen Dekker Tanaka Suzuki Sato Wang Zhang
Liu Singh Kumar Shah Haddad Khalil Okafor Mensah"""
)
CITY_STEMS = _words(
    """
Ash Brook Cedar Clear Cold Deer Elm Fair Glen Green Hazel High Holly Iron Lake Lin Maple Mill Oak Pine
Red River Rock Rose Sand Silver Spring Stone Sun Water West Wheat White Wild Willow Wolf Bright Castle Copper"""
)
CITY_SUFFIXES = _words("ton ville field ford burg wood dale port haven ridge mont view side bury stead")
CITY_PREFIXES = ["", "", "", "North ", "South ", "East ", "West ", "New ", "Port ", "Lake ", "Fort ", "Mount "]
DOMAINS = _words(
    """
sales hr finance crm ops inventory logistics billing support marketing web mobile audit legal risk
payroll procurement quality research warehouse fleet energy health claims lending treasury tax security media
catalog"""
)
NOUNS = _words(
    """
orders invoices shipments accounts contacts tickets payments refunds products suppliers contracts visits
events sessions returns budgets forecasts assets licenses devices campaigns leads quotes receipts transfers
balances policies incidents reviews surveys schedules shifts routes vehicles stores regions channels partners
promotions"""
)
STATUSES = ["active", "pending", "closed", "cancelled", "on hold", "archived", "draft", "approved"]
WORDS = _words(
    """
alpha amber azure basalt cobalt coral crimson delta ember falcon garnet harbor indigo ivory jade juniper
kestrel lagoon lumen marble meadow nebula onyx opal orchid pebble quartz raven saffron sierra slate summit tundra
umber velvet willow zenith"""
)
# Column name -> type for the ordinary tables; each takes a random subset.
COLUMN_POOL = dict(
    pair.split(":")
    for pair in _words(
        """
created_at:TEXT updated_at:TEXT amount:REAL quantity:INTEGER status:TEXT code:TEXT label:TEXT notes:TEXT
category:TEXT price:REAL total:REAL region:TEXT owner_name:TEXT description:TEXT rating:INTEGER is_active:INTEGER
score:REAL ref_code:TEXT city:TEXT due_date:TEXT priority:INTEGER title:TEXT"""
    )
)


# -- the synthetic database ---------------------------------------------------------------------------------


@dataclass
class DatabaseShape:
    """What the benchmark needs to know about a built database."""

    path: str
    tables: int
    rows: int
    seed: int
    big_table: str = BIG_TABLE
    search_column: str = SEARCH_COLUMN
    distinct_values: int = 0
    size_mb: float = 0.0
    build_s: float | None = None
    reused: bool = False
    ordinary_tables: list[str] = field(default_factory=list)
    text_table: str = ""


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )


def _cache_key(tables: int, rows: int, seed: int) -> int:
    return zlib.crc32(f"{BUILD_VERSION}:{tables}:{rows}:{seed}".encode()) & 0x7FFFFFFF


def _zipf_cumulative(n: int, s: float) -> list[float]:
    total = 0.0
    cumulative = []
    for rank in range(1, n + 1):
        total += 1.0 / rank**s
        cumulative.append(total)
    return cumulative


def _table_names(count: int, rng: random.Random) -> list[str]:
    names = [f"{d}_{n}" for d in DOMAINS for n in NOUNS]
    rng.shuffle(names)
    extra = max(0, count - len(names))
    names += [f"misc_table_{i:04d}" for i in range(extra)]
    return names[:count]


def _value(name: str, sql_type: str, rng: random.Random) -> Any:
    if name.endswith(("_at", "_date")):
        return (date(2020, 1, 1) + timedelta(days=rng.randrange(1800))).isoformat()
    if name == "status":
        return rng.choice(STATUSES)
    if name in ("owner_name", "title"):
        return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    if name == "city":
        return f"{rng.choice(CITY_STEMS)}{rng.choice(CITY_SUFFIXES)}"
    if name in ("code", "ref_code"):
        return f"{rng.choice('ABCDEFGH')}{rng.randrange(1000):03d}"
    if name == "is_active":
        return rng.randrange(2)
    if sql_type == "INTEGER":
        return rng.randrange(1, 500) if rng.random() > 0.05 else None
    if sql_type == "REAL":
        return round(rng.uniform(0, 10_000), 2) if rng.random() > 0.05 else None
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 5)))


def build_database(
    path: Path,
    *,
    tables: int = 1000,
    rows: int = 1_000_000,
    seed: int = 7,
    rebuild: bool = False,
    console: Console | None = None,
) -> DatabaseShape:
    """Build the synthetic database at `path`, or reuse it when it was built with the same parameters."""
    console = console or Console(stderr=True)
    if tables < 4:
        raise ValueError("--tables must be at least 4 (three fixed tables and one more).")
    key = _cache_key(tables, rows, seed)
    if path.exists():
        with contextlib.closing(sqlite3.connect(path)) as conn:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise SystemExit(f"{path} exists and was not built by this script; give another --db path.")
        if version == key and not rebuild:
            shape = _read_shape(path, seed)
            shape.reused = True
            return shape
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    started = time.perf_counter()
    rng = random.Random(seed)
    conn = sqlite3.connect(partial, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    n_cities = 2000
    with _progress(console) as progress:
        # Fixed tables the big one refers to.
        conn.execute("CREATE TABLE departments (id INTEGER PRIMARY KEY, code TEXT NOT NULL, name TEXT NOT NULL)")
        conn.executemany(
            "INSERT INTO departments VALUES (?, ?, ?)",
            [(i, f"D{i:03d}", f"{rng.choice(WORDS).title()} {rng.choice(NOUNS).title()}") for i in range(1, 101)],
        )
        conn.execute("CREATE TABLE cities (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT)")
        city_names: list[str] = []
        seen: set[str] = set()
        while len(city_names) < n_cities:
            name = f"{rng.choice(CITY_PREFIXES)}{rng.choice(CITY_STEMS)}{rng.choice(CITY_SUFFIXES)}"
            if len(seen) == len(CITY_PREFIXES) * len(CITY_STEMS) * len(CITY_SUFFIXES):
                name = f"{name} {len(city_names)}"
            if name not in seen:
                seen.add(name)
                city_names.append(name)
        conn.executemany(
            "INSERT INTO cities VALUES (?, ?, ?)",
            [
                (i + 1, c, rng.choice(["US", "GB", "DE", "FR", "ES", "IT", "NL", "JP"]))
                for i, c in enumerate(city_names)
            ],
        )
        # Other tables: varied columns, some foreign keys, one group of same-shape date-suffixed tables.
        others = tables - 3
        group_size = min(30, others // 30)
        names = [f"web_sessions_2024{d // 28 + 1:02d}{d % 28 + 1:02d}" for d in range(group_size)]
        names += _table_names(others - group_size, rng)
        task = progress.add_task(f"{others} tables", total=others)
        made: list[str] = []
        for i, name in enumerate(names):
            if i < group_size:
                columns = [("visited_at", "TEXT"), ("page", "TEXT"), ("duration_s", "INTEGER"), ("city", "TEXT")]
            else:
                picked = rng.sample(sorted(COLUMN_POOL), rng.randrange(2, 13))
                columns = [(c, COLUMN_POOL[c]) for c in picked]
            fks: list[tuple[str, str]] = []
            if made and rng.random() < 0.12:
                target = rng.choice(made)
                fks.append((f"{target}_id", target))
            if rng.random() < 0.02:
                fks.append(("person_id", BIG_TABLE))
            if rng.random() < 0.05:
                fks.append(("department_id", "departments"))
            ddl = ", ".join(
                ["id INTEGER PRIMARY KEY"]
                + [f'"{c}" {t}' for c, t in columns]
                + [f'"{c}" INTEGER REFERENCES "{t}"(id)' for c, t in fks]
            )
            conn.execute(f'CREATE TABLE "{name}" ({ddl})')
            n = rng.randrange(5, 120)
            data = [
                (
                    r + 1,
                    *(_value(c, t, rng) for c, t in columns),
                    *(rng.randrange(1, 100) for _ in fks),
                )
                for r in range(n)
            ]
            marks = ", ".join("?" * (1 + len(columns) + len(fks)))
            conn.executemany(f'INSERT INTO "{name}" VALUES ({marks})', data)
            made.append(name)
            progress.advance(task)
        # The big table: a skewed name column (Zipf over first and last names) and a skewed city.
        conn.execute(
            f"CREATE TABLE {BIG_TABLE} (id INTEGER PRIMARY KEY, {SEARCH_COLUMN} TEXT NOT NULL, email TEXT, "
            "city TEXT, city_id INTEGER REFERENCES cities(id), department_id INTEGER REFERENCES departments(id), "
            "birth_date TEXT, salary REAL, status TEXT)"
        )
        first_cum = _zipf_cumulative(len(FIRST_NAMES), 0.9)
        last_cum = _zipf_cumulative(len(LAST_NAMES), 0.9)
        city_cum = _zipf_cumulative(n_cities, 1.0)
        task = progress.add_task(f"{rows:,} rows of {BIG_TABLE}", total=rows)
        chunk = 50_000
        for start in range(0, rows, chunk):
            size = min(chunk, rows - start)
            firsts = rng.choices(FIRST_NAMES, cum_weights=first_cum, k=size)
            lasts = rng.choices(LAST_NAMES, cum_weights=last_cum, k=size)
            cities = rng.choices(range(n_cities), cum_weights=city_cum, k=size)
            batch = []
            for j in range(size):
                full = f"{firsts[j]} {lasts[j]}"
                batch.append(
                    (
                        start + j + 1,
                        full,
                        f"{firsts[j].lower()}.{lasts[j].lower()}{(start + j) % 997}@example.org",
                        city_names[cities[j]],
                        cities[j] + 1,
                        rng.randrange(1, 101),
                        (date(1950, 1, 1) + timedelta(days=rng.randrange(20_000))).isoformat(),
                        round(rng.uniform(20_000, 200_000), 2),
                        STATUSES[rng.randrange(4)],
                    )
                )
            conn.executemany(f"INSERT INTO {BIG_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
            progress.advance(task, size)
        conn.execute(f"CREATE INDEX {BIG_TABLE}_city_id ON {BIG_TABLE}(city_id)")
        task = progress.add_task("ANALYZE", total=1)
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
        progress.advance(task)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {key}")
    conn.close()
    partial.replace(path)
    shape = _read_shape(path, seed)
    shape.build_s = round(time.perf_counter() - started, 2)
    return shape


def _read_shape(path: Path, seed: int) -> DatabaseShape:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        names = [n for n in names if not n.startswith("sqlite_")]
        ordinary = [n for n in names if n not in (BIG_TABLE, "departments", "cities")]
        rng = random.Random(len(names))
        picked = sorted(rng.sample(ordinary, min(3, len(ordinary))))
        text_table = next(
            (
                n
                for n in ordinary
                if any(r[1] in ("owner_name", "title") for r in conn.execute(f'PRAGMA table_info("{n}")').fetchall())
            ),
            "departments",
        )
        distinct = conn.execute(f"SELECT COUNT(DISTINCT {SEARCH_COLUMN}) FROM {BIG_TABLE}").fetchone()[0]
        count = conn.execute(f"SELECT COUNT(*) FROM {BIG_TABLE}").fetchone()[0]
    return DatabaseShape(
        path=str(path),
        tables=len(names),
        rows=count,
        seed=seed,
        distinct_values=distinct,
        size_mb=round(path.stat().st_size / 1e6, 1),
        ordinary_tables=["departments", *picked],
        text_table=text_table,
    )


# -- what is measured ---------------------------------------------------------------------------------------


@dataclass
class Case:
    """One tool call with fixed arguments; `group` pools cases that one acceptance figure covers."""

    name: str
    group: str
    tool: str
    args: dict[str, Any]


def make_cases(shape: DatabaseShape) -> list[Case]:
    cases = [Case("list_tables", "list_tables", "list_tables", {})]
    for table in [*shape.ordinary_tables, shape.big_table]:
        cases.append(Case(f"describe_table[{table}]", "describe_table", "describe_table", {"table": table}))
    target = {"table": shape.big_table, "column": shape.search_column}
    for term in SEARCH_TERMS:
        cases.append(
            Case(
                f"get_distinct_values[search={term!r}]",
                "get_distinct_values_search",
                "get_distinct_values",
                {**target, "search": term},
            )
        )
    cases.append(Case("get_distinct_values[no search]", "get_distinct_values", "get_distinct_values", target))
    cases.append(
        Case(f"find_rows[{shape.text_table}]", "find_rows", "find_rows", {"term": "son", "table": shape.text_table})
    )
    small_sql = "SELECT id, code, name FROM departments WHERE id <= 10"
    cases.append(Case("execute_sql[small]", "execute_sql", "execute_sql", {"sql": small_sql}))
    cases.append(Case("explain_sql[small]", "explain_sql", "explain_sql", {"sql": small_sql}))
    return cases


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def stats(samples_ms: list[float]) -> dict[str, Any]:
    return {
        "n": len(samples_ms),
        "mean_ms": round(statistics.fmean(samples_ms), 3),
        "p50_ms": round(percentile(samples_ms, 50), 3),
        "p95_ms": round(percentile(samples_ms, 95), 3),
        "min_ms": round(min(samples_ms), 3),
        "max_ms": round(max(samples_ms), 3),
    }


def summarize_result(data: dict[str, Any]) -> dict[str, Any]:
    """Sizes of list fields and any note or cut: enough to see that a fast answer is also a useful one."""
    summary: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, list):
            summary[f"{key}_count"] = len(value)
        elif key in ("note", "cut") and value:
            summary[key] = value
    if data.get("values"):
        summary["top_values"] = [v.get("value") for v in data["values"][:3]]
    return summary


def _pooled(samples: dict[str, list[float]], cases: list[Case]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[float]] = {}
    for case in cases:
        groups.setdefault(case.group, []).extend(samples[case.name])
    return {group: stats(values) for group, values in groups.items()}


def _wait_threads_idle(baseline: int, timeout_s: float = 60.0) -> float:
    """Wait until background threads a tool started (a value cache loading, say) have finished."""
    started = time.perf_counter()
    while threading.active_count() > baseline and time.perf_counter() - started < timeout_s:
        time.sleep(0.05)
    return round((time.perf_counter() - started) * 1000, 1)


def _children_cpu_ticks() -> int:
    """CPU ticks used so far by this process's children (the spawned servers); Linux only, else 0."""
    total = 0
    for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
        with contextlib.suppress(OSError):
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


async def _wait_children_idle(timeout_s: float = 60.0) -> float:
    """Wait until the spawned servers stop using CPU (background loads started by a warm-up call)."""
    import anyio

    started = time.perf_counter()
    last, quiet = _children_cpu_ticks(), 0
    while quiet < 3 and time.perf_counter() - started < timeout_s:
        await anyio.sleep(0.2)
        now = _children_cpu_ticks()
        quiet = quiet + 1 if now == last else 0
        last = now
    return round((time.perf_counter() - started) * 1000, 1)


def _cold_cases(cases: list[Case], repeats: int) -> list[Case]:
    """Search cases to time on a fresh environment: the first search of a column, before its values load."""
    searches = [c for c in cases if c.group == "get_distinct_values_search"]
    return [searches[k % len(searches)] for k in range(min(repeats, len(searches)))]


def measure_in_process(db_path: Path, cases: list[Case], repeats: int, console: Console) -> dict[str, Any]:
    """Time each case through Environment in this process, round-robin over cases so drift hits all alike.

    Three phases: cold searches (each on a fresh Environment, so the column's values are not cached yet),
    one warm-up call per case (timed and kept as `first_call`), then `repeats` rounds once background work
    the warm-up started is over.
    """
    from sophrosyne.environment import Environment

    baseline_threads = threading.active_count()
    cold: list[dict[str, Any]] = []
    for case in _cold_cases(cases, repeats):
        fresh = Environment.open(db_path)
        _ = fresh.catalog
        t0 = time.perf_counter_ns()
        result = getattr(fresh, case.tool)(**case.args)
        elapsed = (time.perf_counter_ns() - t0) / 1e6
        cold.append({"case": case.name, "ms": round(elapsed, 3), "result": summarize_result(result.model_dump())})
        _wait_threads_idle(baseline_threads)
        fresh.db.close()
    started = time.perf_counter()
    env = Environment.open(db_path)
    opened = time.perf_counter()
    tables = len(env.catalog.tables)
    catalog_ready = time.perf_counter()
    first: dict[str, dict[str, Any]] = {}
    for case in cases:
        t0 = time.perf_counter_ns()
        result = getattr(env, case.tool)(**case.args)
        elapsed = (time.perf_counter_ns() - t0) / 1e6
        first[case.name] = {"ms": round(elapsed, 3), "result": summarize_result(result.model_dump(mode="json"))}
    settle_ms = _wait_threads_idle(baseline_threads)
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    last: dict[str, dict[str, Any]] = {}
    with _progress(console) as progress:
        task = progress.add_task("in-process calls", total=repeats * len(cases))
        for _ in range(repeats):
            for case in cases:
                tool: Callable[..., Any] = getattr(env, case.tool)
                t0 = time.perf_counter_ns()
                result = tool(**case.args)
                samples[case.name].append((time.perf_counter_ns() - t0) / 1e6)
                last[case.name] = summarize_result(result.model_dump(mode="json"))
                progress.advance(task)
    env.db.close()
    return {
        "open_ms": round((opened - started) * 1000, 1),
        "catalog_ms": round((catalog_ready - opened) * 1000, 1),
        "catalog_tables": tables,
        "settle_ms": settle_ms,
        "cases": {
            c.name: {
                "tool": c.tool,
                "group": c.group,
                "args": c.args,
                **stats(samples[c.name]),
                "result": last[c.name],
                "first_call": first[c.name],
            }
            for c in cases
        },
        "groups": _pooled(samples, cases),
        "cold_search": {**stats([c["ms"] for c in cold]), "calls": cold} if cold else None,
    }


async def _measure_stdio(
    db_path: Path, cases: list[Case], repeats: int, workdir: Path, console: Console
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "sophrosyne", "serve", str(db_path)], cwd=str(workdir)
    )
    echo_server = StdioServerParameters(command=sys.executable, args=["-c", ECHO_SERVER], cwd=str(workdir))
    log_path = workdir / "tool_latency.servers.log"
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    echo_samples: list[float] = []
    first: dict[str, dict[str, Any]] = {}
    last: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}

    async def timed(client: Any, tool: str, args: dict[str, Any]) -> tuple[float, Any]:
        t0 = time.perf_counter_ns()
        result = await client.call_tool(tool, args)
        return (time.perf_counter_ns() - t0) / 1e6, result

    def summary(name: str, result: Any) -> dict[str, Any]:
        if result.is_error:
            errors[name] = " ".join(getattr(c, "text", "") for c in result.content)[:300]
        text_chars = sum(len(getattr(c, "text", "")) for c in result.content)
        return {**summarize_result(result.structured_content or {}), "response_chars": text_chars}

    with log_path.open("w") as errlog:
        t0 = time.perf_counter()
        async with Client(stdio_client(echo_server, errlog=errlog), read_timeout_seconds=120) as echo:
            echo_ready = time.perf_counter()
            async with Client(stdio_client(server, errlog=errlog), read_timeout_seconds=120) as client:
                server_ready = time.perf_counter()
                for _ in range(5):
                    await timed(echo, "echo", {"text": "ping"})
                for case in cases:
                    elapsed, result = await timed(client, case.tool, case.args)
                    first[case.name] = {"ms": round(elapsed, 3), "result": summary(case.name, result)}
                settle_ms = await _wait_children_idle()
                with _progress(console) as progress:
                    task = progress.add_task("stdio calls (tool + echo)", total=repeats * len(cases))
                    for _ in range(repeats):
                        for case in cases:
                            # An echo call right before each tool call: the baseline sees the same moment.
                            elapsed, _ = await timed(echo, "echo", {"text": "ping"})
                            echo_samples.append(elapsed)
                            elapsed, result = await timed(client, case.tool, case.args)
                            samples[case.name].append(elapsed)
                            last[case.name] = summary(case.name, result)
                            progress.advance(task)
    echo_stats = stats(echo_samples)
    tools: dict[str, Any] = {}
    for case in cases:
        s = stats(samples[case.name])
        tools[case.name] = {
            "tool": case.tool,
            "group": case.group,
            **s,
            "ratio_p50": round(s["p50_ms"] / echo_stats["p50_ms"], 2),
            "ratio_p95": round(s["p95_ms"] / echo_stats["p95_ms"], 2),
            "result": last[case.name],
            "first_call": first[case.name],
        }
    return {
        "echo_spawn_ms": round((echo_ready - t0) * 1000, 1),
        "server_spawn_ms": round((server_ready - echo_ready) * 1000, 1),
        "settle_ms": settle_ms,
        "echo": echo_stats,
        "cases": tools,
        "groups": _pooled(samples, cases),
        "errors": errors,
    }


def measure_stdio(db_path: Path, cases: list[Case], repeats: int, workdir: Path, console: Console) -> dict[str, Any]:
    """Time each case over stdio with the SDK client, beside a bare echo tool spawned the same way."""
    import anyio

    try:
        return anyio.run(_measure_stdio, db_path, cases, repeats, workdir, console)
    except Exception as exc:
        log = (workdir / "tool_latency.servers.log").read_text()[-2000:]
        raise SystemExit(f"the stdio measurement failed ({exc!r}); server stderr ends with:\n{log}") from None


# -- report -------------------------------------------------------------------------------------------------


def _cpu_pressure() -> str | None:
    """Linux PSI: the share of time some task waited for a CPU; above ~10% other work skews the figures."""
    with contextlib.suppress(OSError, IndexError):
        return Path("/proc/pressure/cpu").read_text().splitlines()[0]
    return None


def machine_info() -> dict[str, Any]:
    versions = {}
    for package in ("sophrosyne", "mcp", "sqlglot", "sqlalchemy", "rapidfuzz", "rich"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    commit = dirty = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        root = Path(__file__).resolve().parent.parent
        git = ["git", "-C", str(root)]
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() or None
        status = subprocess.run([*git, "status", "--porcelain", "src"], capture_output=True, text=True).stdout
        dirty = bool(status.strip()) if commit else None
    return {
        "git_commit": commit,
        "src_dirty": dirty,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "cpu_pressure": _cpu_pressure(),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "versions": versions,
    }


def checks(in_process: dict[str, Any], stdio: dict[str, Any] | None) -> dict[str, Any]:
    groups = in_process["groups"]

    def at_most(value: float, limit: float, unit: str, what: str) -> dict[str, Any]:
        return {"value": value, "limit": limit, "unit": unit, "measured": what, "pass": value <= limit}

    result: dict[str, Any] = {
        "list_tables_p95_in_process": at_most(
            groups["list_tables"]["p95_ms"], LIMITS["list_tables_p95_ms"], "ms", "list_tables, in-process"
        ),
        "describe_table_p95_in_process": at_most(
            groups["describe_table"]["p95_ms"],
            LIMITS["describe_table_p95_ms"],
            "ms",
            "describe_table on ordinary tables and the big table pooled, in-process",
        ),
        "get_distinct_values_search_p95": at_most(
            groups["get_distinct_values_search"]["p95_ms"],
            LIMITS["search_p95_ms"],
            "ms",
            f"get_distinct_values with search on {BIG_TABLE}.{SEARCH_COLUMN}, all terms pooled, in-process, "
            "after the column's values are cached",
        ),
    }
    cold = in_process.get("cold_search")
    if cold:
        result["get_distinct_values_search_cold_p95"] = at_most(
            cold["p95_ms"],
            LIMITS["search_p95_ms"],
            "ms",
            f"first search of {BIG_TABLE}.{SEARCH_COLUMN} on a fresh Environment (values not cached), in-process",
        )
    if stdio is None:
        result["stdio_round_trip_vs_echo"] = {"pass": None, "skipped": True}
    else:
        case = stdio["cases"][STDIO_CHECK_CASE]
        worst = max(case["ratio_p50"], case["ratio_p95"])
        result["stdio_round_trip_vs_echo"] = {
            "value": worst,
            "ratio_p50": case["ratio_p50"],
            "ratio_p95": case["ratio_p95"],
            "limit": LIMITS["stdio_ratio"],
            "unit": "x echo",
            "measured": f"{STDIO_CHECK_CASE} over stdio / bare echo tool over stdio, p50 and p95",
            "pass": worst <= LIMITS["stdio_ratio"],
            "per_tool_pass": {
                name: max(c["ratio_p50"], c["ratio_p95"]) <= LIMITS["stdio_ratio"] for name, c in stdio["cases"].items()
            },
        }
    result["all_pass"] = all(v["pass"] is not False for v in result.values())
    return result


def print_report(report: dict[str, Any], console: Console) -> None:
    in_process = report["in_process"]
    stdio = report["stdio"]
    db = report["database"]
    table = RichTable(
        title=f"tool latency, ms ({db['tables']:,} tables, {db['rows']:,} rows in {db['big_table']}; "
        f"n={report['repeats']} per case)"
    )
    table.add_column("case", no_wrap=True)
    for header in ("in-proc p50", "p95", "mean", "stdio p50", "p95", "x echo p50", "x echo p95"):
        table.add_column(header, justify="right")
    for name, c in in_process["cases"].items():
        s = stdio["cases"][name] if stdio else None
        table.add_row(
            escape(name),
            f"{c['p50_ms']:.2f}",
            f"{c['p95_ms']:.2f}",
            f"{c['mean_ms']:.2f}",
            *(
                (f"{s['p50_ms']:.2f}", f"{s['p95_ms']:.2f}", f"{s['ratio_p50']:.2f}", f"{s['ratio_p95']:.2f}")
                if s
                else ("-",) * 4
            ),
        )
    cold = in_process.get("cold_search")
    if cold:
        table.add_row(
            escape("get_distinct_values[search, cold]"),
            f"{cold['p50_ms']:.2f}",
            f"{cold['p95_ms']:.2f}",
            f"{cold['mean_ms']:.2f}",
            *("-",) * 4,
        )
    if stdio:
        e = stdio["echo"]
        table.add_row("bare echo (stdio)", "", "", "", f"{e['p50_ms']:.2f}", f"{e['p95_ms']:.2f}", "1.00", "1.00")
    console.print(table)
    checks_table = RichTable(title="checks")
    for header in ("check", "value", "limit", "result"):
        checks_table.add_column(header)
    for name, c in report["checks"].items():
        if name == "all_pass":
            continue
        if c.get("skipped"):
            checks_table.add_row(name, "-", "-", "skipped")
            continue
        verdict = "[green]pass[/]" if c["pass"] else "[red]FAIL[/]"
        checks_table.add_row(name, f"{c['value']:.2f} {c['unit']}", f"{c['limit']:g}", verdict)
    console.print(checks_table)


def run(
    *,
    db: Path,
    out: Path,
    tables: int = 1000,
    rows: int = 1_000_000,
    repeats: int = 30,
    seed: int = 7,
    rebuild: bool = False,
    stdio: bool = True,
    console: Console | None = None,
) -> dict[str, Any]:
    """Build or reuse the database, measure, write the JSON report to `out` and return it."""
    # Piped output gets a wide table rather than rich's 80-column default.
    console = console or Console(width=None if sys.stdout.isatty() else 150)
    progress_console = Console(stderr=True)
    db, out = db.resolve(), out.resolve()  # the server runs in out's folder
    load_before = {
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "cpu_pressure": _cpu_pressure(),
    }
    shape = build_database(db, tables=tables, rows=rows, seed=seed, rebuild=rebuild, console=progress_console)
    cases = make_cases(shape)
    in_process = measure_in_process(db, cases, repeats, progress_console)
    out.parent.mkdir(parents=True, exist_ok=True)
    over_stdio = measure_stdio(db, cases, repeats, out.parent, progress_console) if stdio else None
    report = {
        "benchmark": "tool_latency",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {**machine_info(), "before": load_before},
        "database": {k: v for k, v in asdict(shape).items() if k not in ("ordinary_tables", "text_table")},
        "repeats": repeats,
        "in_process": in_process,
        "stdio": over_stdio,
        "limits": LIMITS,
        "checks": checks(in_process, over_stdio),
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report, console)
    console.print(f"wrote {out}")
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="example:\n  .venv/bin/python benchmarks/tool_latency.py --out bench-out/tool_latency.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--db", type=Path, default=Path("bench-out/tool_latency.sqlite"), help="database to build or reuse"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out/tool_latency.json"), help="JSON report path")
    parser.add_argument("--tables", type=int, default=1000, help="tables in the database, the big one included")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the big table")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per case (after one warm-up)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the synthetic data")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the database even if it is cached")
    parser.add_argument("--no-stdio", action="store_true", help="measure in-process only")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(
        db=args.db,
        out=args.out,
        tables=args.tables,
        rows=args.rows,
        repeats=args.repeats,
        seed=args.seed,
        rebuild=args.rebuild,
        stdio=not args.no_stdio,
    )
    return 0 if report["checks"]["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
