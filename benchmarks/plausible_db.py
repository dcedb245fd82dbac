"""A deterministic SQLite database of tables with plausible names: domains x entities x qualifiers.

Real warehouses name their tables `sales_customer`, `billing_invoice_history`, `hr_employee_eu`: words that
recur across thousands of tables, columns that name other entities (`customer_id`, `invoice_id`), and more
shared vocabulary than synthetic `misc_table_0042` names have. Each table has 5-12 columns (an `id`, a few
`<entity>_id` columns pointing at entities of its domain, some declared as foreign keys, and attributes drawn
from its entity's kind) and a few rows of plausible values. Built once per (tables, seed) and reused; the file
is marked (`PRAGMA application_id`, `user_version`), and a file the script did not build is never overwritten.

Example:
    .venv/bin/python benchmarks/plausible_db.py --tables 5000 --db bench-out/first_answer/plausible_5000.sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import sqlite3
import time
import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

BUILD_VERSION = 1
APPLICATION_ID = 0x536F7050  # "SopP": built by this script


def _words(text: str) -> list[str]:
    return text.split()


DOMAINS = _words(
    """
sales finance hr crm inventory logistics billing support marketing procurement manufacturing payroll clinical
pharmacy lending insurance treasury tax legal compliance fleet energy retail ecommerce education research
quality security facilities travel"""
)
# Entity -> its kind, which decides its attribute columns.
ENTITIES = dict(
    pair.split(":")
    for pair in _words(
        """
customer:party supplier:party vendor:party employee:person patient:person student:person contact:person
partner:party account:ledger invoice:document order:document order_line:line quote:document receipt:document
payment:money refund:money transfer:money budget:money expense:money product:item asset:item device:item
vehicle:item part:item material:item shipment:movement delivery:movement route:movement return:movement
ticket:case incident:case claim:case complaint:case contract:document policy:document license:document
campaign:event visit:event session:event appointment:event course:event warehouse:place store:place
branch:place region:place department:group team:group"""
    )
)
QUALIFIERS = _words("history archive daily monthly summary staging audit snapshot eu us apac backup")
KIND_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "party": [("name", "TEXT"), ("email", "TEXT"), ("phone", "TEXT"), ("country_code", "TEXT"), ("city", "TEXT")],
    "person": [("first_name", "TEXT"), ("last_name", "TEXT"), ("birth_date", "TEXT"), ("email", "TEXT")],
    "ledger": [("account_number", "TEXT"), ("balance", "REAL"), ("currency", "TEXT"), ("opened_on", "TEXT")],
    "document": [("document_number", "TEXT"), ("issued_on", "TEXT"), ("total_amount", "REAL"), ("currency", "TEXT")],
    "line": [("line_number", "INTEGER"), ("quantity", "INTEGER"), ("unit_price", "REAL"), ("discount", "REAL")],
    "money": [("amount", "REAL"), ("currency", "TEXT"), ("paid_on", "TEXT"), ("method", "TEXT")],
    "item": [("sku", "TEXT"), ("name", "TEXT"), ("category", "TEXT"), ("unit_cost", "REAL"), ("weight_kg", "REAL")],
    "movement": [("shipped_on", "TEXT"), ("carrier", "TEXT"), ("tracking_code", "TEXT"), ("distance_km", "REAL")],
    "case": [("opened_on", "TEXT"), ("priority", "INTEGER"), ("severity", "TEXT"), ("summary", "TEXT")],
    "event": [("starts_at", "TEXT"), ("ends_at", "TEXT"), ("channel", "TEXT"), ("attendees", "INTEGER")],
    "place": [("name", "TEXT"), ("city", "TEXT"), ("country_code", "TEXT"), ("opened_on", "TEXT")],
    "group": [("name", "TEXT"), ("code", "TEXT"), ("head_count", "INTEGER"), ("cost_center", "TEXT")],
}
COMMON_COLUMNS = [("status", "TEXT"), ("created_at", "TEXT"), ("updated_at", "TEXT"), ("notes", "TEXT")]
QUALIFIER_COLUMNS = {
    "history": ("valid_from", "TEXT"),
    "archive": ("archived_on", "TEXT"),
    "daily": ("report_date", "TEXT"),
    "monthly": ("report_month", "TEXT"),
    "summary": ("row_count", "INTEGER"),
    "staging": ("loaded_at", "TEXT"),
    "audit": ("changed_by", "TEXT"),
    "snapshot": ("snapshot_date", "TEXT"),
    "backup": ("backed_up_at", "TEXT"),
}
FIRST = _words("Ana Ben Chloe David Emma Farid Grace Hiro Ines Jonas Keiko Liam Maya Noah Olga Pedro Quinn Rosa Sven")
LAST = _words("Alvarez Brown Chen Dubois Evans Fischer Garcia Haddad Ito Jensen Kowalski Lopez Muller Novak Okafor")
CITIES = _words("Lisbon Lyon Leeds Austin Osaka Porto Ghent Turin Graz Malmo Utrecht Denver Kyoto Bergen Cork")
COUNTRIES = _words("PT FR GB US JP BE IT AT SE NL NO IE DE ES")
STATUSES = ["active", "pending", "closed", "cancelled", "on hold", "approved", "rejected", "draft"]
CURRENCIES = ["EUR", "USD", "GBP", "JPY", "CHF"]
WORDS = _words("urgent late damaged renewal discount refund overdue duplicate manual imported verified flagged")


@dataclass
class PlausibleShape:
    """What a benchmark needs to know about a built database."""

    path: str
    tables: int
    seed: int
    size_mb: float
    build_s: float | None = None
    reused: bool = False


def _key(tables: int, seed: int, domains: list[str] | None) -> int:
    return zlib.crc32(f"{BUILD_VERSION}:{tables}:{seed}:{domains}".encode()) & 0x7FFFFFFF


def table_names(count: int, seed: int, domains: list[str] | None = None) -> list[tuple[str, str, str, str]]:
    """`count` (name, domain, entity, qualifier) drawn without repeats from domains (all, or those given) x
    entities x qualifiers (the qualifier "" for a base table); two thirds base tables where there are enough,
    so that most tables a qualified one echoes exist too."""
    rng = random.Random(seed)
    domains = domains or DOMAINS
    bases = [(d, e, "") for d in domains for e in ENTITIES]
    qualified = [(d, e, q) for d, e, q in itertools.product(domains, ENTITIES, QUALIFIERS)]
    rng.shuffle(bases)
    rng.shuffle(qualified)
    capacity = len(bases) + len(qualified)
    if count > capacity:
        raise SystemExit(f"at most {capacity:,} plausible tables: ask for fewer.")
    picked = bases[: min(len(bases), max(1, (2 * count) // 3))]
    picked += qualified[: count - len(picked)]
    return [("_".join(p for p in (d, e, q) if p), d, e, q) for d, e, q in picked]


def _value(column: str, sql_type: str, rng: random.Random) -> Any:
    if rng.random() < 0.04:
        return None
    if column.endswith(("_on", "_at", "_date", "_from")) or column == "report_month":
        day = date(2021, 1, 1) + timedelta(days=rng.randrange(1500))
        return day.isoformat()[:7] if column == "report_month" else day.isoformat()
    if column == "status":
        return rng.choice(STATUSES)
    if column in ("first_name", "changed_by"):
        return rng.choice(FIRST)
    if column == "last_name":
        return rng.choice(LAST)
    if column == "name":
        return f"{rng.choice(LAST)} {rng.choice(['Ltd', 'GmbH', 'SA', 'Group', 'Partners'])}"
    if column == "email":
        return f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}@example.org"
    if column == "city":
        return rng.choice(CITIES)
    if column == "country_code":
        return rng.choice(COUNTRIES)
    if column == "currency":
        return rng.choice(CURRENCIES)
    if column in ("notes", "summary"):
        return " ".join(rng.sample(WORDS, rng.randrange(1, 4)))
    if sql_type == "INTEGER":
        return rng.randrange(1, 400)
    if sql_type == "REAL":
        return round(rng.uniform(1, 5000), 2)
    return f"{rng.choice('ABCDEFGHJK')}{rng.randrange(10_000):04d}"


def _columns(domain: str, entity: str, qualifier: str, present: set[str], rng: random.Random) -> list[str]:
    """The DDL of one table's columns: id, references, attributes; 5-12 in all."""
    wanted = rng.randrange(5, 13)
    ddl = ["id INTEGER PRIMARY KEY"]
    others = [e for e in ENTITIES if e != entity]
    for target in rng.sample(others, rng.randrange(0, 4)):
        if len(ddl) >= wanted - 1:
            break
        referenced = f"{domain}_{target}"
        if referenced in present and rng.random() < 0.3:
            ddl.append(f'"{target}_id" INTEGER REFERENCES "{referenced}"(id)')
        else:
            ddl.append(f'"{target}_id" INTEGER')  # a join the schema does not declare
    attributes = KIND_COLUMNS[ENTITIES[entity]] + COMMON_COLUMNS
    extra = [QUALIFIER_COLUMNS[qualifier]] if qualifier in QUALIFIER_COLUMNS else []
    for name, sql_type in extra + rng.sample(attributes, len(attributes)):
        if len(ddl) >= wanted:
            break
        ddl.append(f'"{name}" {sql_type}')
    return ddl


def build_plausible(
    path: Path, *, tables: int = 5000, seed: int = 11, domains: list[str] | None = None, rebuild: bool = False
) -> PlausibleShape:
    """Build the database at `path` (its names drawn from `domains`, default all), or reuse it when this script
    built it with the same parameters."""
    key = _key(tables, seed, domains)
    if path.exists():
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise SystemExit(f"{path} exists and was not built by this script; give another path.")
        if version == key and not rebuild:
            return PlausibleShape(str(path), tables, seed, round(path.stat().st_size / 1e6, 1), reused=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    started = time.perf_counter()
    rng = random.Random(seed)
    names = table_names(tables, seed, domains)
    present = {name for name, *_ in names}
    conn = sqlite3.connect(partial, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    for name, domain, entity, qualifier in names:
        ddl = _columns(domain, entity, qualifier, present, rng)
        conn.execute(f'CREATE TABLE "{name}" ({", ".join(ddl)})')
        columns = [(d.split('"')[1], d.split()[1]) for d in ddl[1:]]
        rows = [
            (r + 1, *(_value(c, t, rng) if not c.endswith("_id") else rng.randrange(1, 30) for c, t in columns))
            for r in range(rng.randrange(3, 30))
        ]
        conn.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * (1 + len(columns)))})', rows)
    conn.execute("COMMIT")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {key}")
    conn.close()
    partial.replace(path)
    shape = PlausibleShape(str(path), tables, seed, round(path.stat().st_size / 1e6, 1))
    shape.build_s = round(time.perf_counter() - started, 2)
    return shape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=Path("bench-out/first_answer/plausible_5000.sqlite"))
    parser.add_argument("--tables", type=int, default=5000, help="Number of tables.")
    parser.add_argument("--seed", type=int, default=11, help="Seed of the names, columns and rows.")
    parser.add_argument("--domains", default="", help="Domains to draw from, comma-separated (default: all).")
    parser.add_argument("--rebuild", action="store_true", help="Build again even when the file matches.")
    args = parser.parse_args()
    domains = [d for d in args.domains.split(",") if d] or None
    shape = build_plausible(args.db, tables=args.tables, seed=args.seed, domains=domains, rebuild=args.rebuild)
    built = "reused" if shape.reused else f"built in {shape.build_s} s"
    print(f"{shape.path}: {shape.tables} tables, {shape.size_mb} MB, {built}")


if __name__ == "__main__":
    main()
