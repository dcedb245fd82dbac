"""A deterministic synthetic SQLite database for benchmarks: many tables, one large table, built once and cached.

Used by tool_latency.py and by any benchmark that needs a big schema; `--db` never overwrites a file it
did not build (the file is marked with `PRAGMA application_id`).

Example:
    .venv/bin/python benchmarks/synthetic_db.py --tables 1000 --rows 1000000 --db bench-out/tool_latency.sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sqlite3
import time
import zlib
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

BUILD_VERSION = 1
# Marks a file as built by this script, so --db never overwrites a database it did not build.
APPLICATION_ID = 0x536F7068  # "Soph"
BIG_TABLE = "people"
SEARCH_COLUMN = "full_name"


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
    # Each builder writes its own file (test workers may build the same database at once); the last rename wins.
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
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


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=Path("bench-out/tool_latency.sqlite"), help="Where to build it.")
    parser.add_argument("--tables", type=int, default=1000, help="Number of tables (at least 4).")
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows of the large table.")
    parser.add_argument("--seed", type=int, default=7, help="Seed of the deterministic data.")
    parser.add_argument("--rebuild", action="store_true", help="Build again even when the file matches.")
    args = parser.parse_args()
    shape = build_database(args.db, tables=args.tables, rows=args.rows, seed=args.seed, rebuild=args.rebuild)
    print(f"{shape.path}: {shape.tables} tables, {shape.rows} rows in {shape.big_table}, {shape.size_mb} MB")


if __name__ == "__main__":
    main()
