"""export_sql at 1,000,000 rows on SQLite, DuckDB, PostgreSQL and MariaDB, to CSV and Parquet: the file's rows
against the engine's own export of the same statement (sqlite3 -csv, DuckDB's COPY, PostgreSQL's COPY, the
mariadb client's batch output), for an unrestricted role, and for a restricted one (a row filter and a hidden
column) against the engine's export of a copy reduced to that role's rows and columns; the server's peak RSS
growth during each export (each in a fresh process, measured from just before the call) and the answer's tokens.

    PYTHONPATH=src python benchmarks/exports.py [--rows 1000000] [--engines sqlite,duckdb,postgres,mariadb]

Prints one JSON line per export and a summary; exits 1 if a file differs, or a bound is passed (RSS growth
100 MB, answer 600 tokens). tests/exports/test_export_scale.py runs it (slow-marked) at 1,000,000 rows.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
SQL = "SELECT * FROM big ORDER BY id"
FILTER, HIDDEN = "k < 5", "name"
RSS_BOUND_MB, TOKEN_BOUND = 100, 600


def build(engine: str, folder: Path, rows: int, reduced: bool) -> str:
    """Table `big` with `rows` rows (or its reduced copy: the role's rows and columns), as a target to open."""
    keep = f" WHERE {FILTER}" if reduced else ""
    name_col = "" if reduced else ", name"
    tag = "reduced" if reduced else "full"
    if engine == "sqlite":
        path = folder / f"{tag}.sqlite"
        with closing(sqlite3.connect(path)) as db:
            db.execute(
                "CREATE TABLE big AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
                "SELECT x AS id, x % 10 AS k, CASE WHEN x % 7 = 0 THEN NULL ELSE 'name-' || x END AS name, "
                "(x % 100000) / 100.0 AS amount, date('2024-01-01', '+' || (x % 365) || ' days') AS day FROM c",
                (rows,),
            )
            if reduced:
                db.execute(f"CREATE TABLE r AS SELECT id, k, amount, day FROM big{keep}")
                db.execute("DROP TABLE big")
                db.execute("ALTER TABLE r RENAME TO big")
            db.commit()
        return str(path)
    if engine == "duckdb":
        import duckdb

        path = folder / f"{tag}.duckdb"
        with closing(duckdb.connect(str(path))) as db:
            db.execute(
                f"CREATE TABLE big AS SELECT id, k{name_col}, amount, day FROM (SELECT range AS id, range % 10 AS k, "
                "CASE WHEN range % 7 = 0 THEN NULL ELSE 'name-' || range END AS name, "
                "CAST((range % 100000) / 100.0 AS DECIMAL(12, 2)) AS amount, "
                f"DATE '2024-01-01' + CAST(range % 365 AS INTEGER) AS day FROM range(1, {rows + 1})){keep}"
            )
        return str(path)
    if engine == "postgres":
        import psycopg

        schema = f"soph_export_{tag}_{os.getpid()}"
        with psycopg.connect(PG_DSN, autocommit=True) as pg:
            pg.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            pg.execute(f"CREATE SCHEMA {schema}")
            pg.execute(
                f"CREATE TABLE {schema}.big AS SELECT id, k{name_col}, amount, day FROM (SELECT g AS id, g % 10 AS k, "
                "CASE WHEN g % 7 = 0 THEN NULL ELSE 'name-' || g END AS name, "
                "((g % 100000) / 100.0)::numeric(12, 2) AS amount, DATE '2024-01-01' + (g % 365) AS day "
                f"FROM generate_series(1, {rows}) g) s{keep}"
            )
        return f"{PG_DSN}?options=-csearch_path%3D{schema}"
    import pymysql

    name = f"soph_export_{tag}_{os.getpid()}"
    with closing(pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)) as db:
        cursor = db.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {name}")
        cursor.execute(
            f"CREATE TABLE {name}.big AS SELECT id, k{name_col}, amount, day FROM (SELECT seq AS id, seq % 10 AS k, "
            "CASE WHEN seq % 7 = 0 THEN NULL ELSE CONCAT('name-', seq) END AS name, "
            "CAST((seq % 100000) / 100 AS DECIMAL(12, 2)) AS amount, DATE_ADD('2024-01-01', INTERVAL seq % 365 DAY) "
            f"AS day FROM {name}.seq_1_to_{rows}) s{keep}"
        )
    return f"mysql://root@127.0.0.1:3306/{name}"


def drop(engine: str, target: str) -> None:
    if engine == "postgres":
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as pg:
            pg.execute(f"DROP SCHEMA IF EXISTS {target.rsplit('%3D', 1)[1]} CASCADE")
    elif engine == "mariadb":
        import pymysql

        with closing(pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)) as db:
            db.cursor().execute(f"DROP DATABASE IF EXISTS {target.rsplit('/', 1)[1]}")


def engine_export(engine: str, target: str, folder: Path) -> list[tuple[str, ...]]:
    """The engine's own export of SQL, as CSV rows (its header first)."""
    if engine == "sqlite":
        out = subprocess.run(["sqlite3", "-csv", "-header", target, SQL], capture_output=True, check=True).stdout
        return [tuple(r) for r in csv.reader(io.StringIO(out.decode()))]
    if engine == "duckdb":
        import duckdb

        path = folder / "duckdb_copy.csv"
        with closing(duckdb.connect(target, read_only=True)) as db:
            db.execute(f"COPY ({SQL}) TO '{path}' (HEADER)")
        with path.open(newline="") as file:
            return [tuple(r) for r in csv.reader(file)]
    if engine == "postgres":
        import psycopg

        buffer = io.BytesIO()
        schema = target.rsplit("%3D", 1)[1]
        with psycopg.connect(PG_DSN) as pg, pg.cursor() as cursor:
            cursor.execute(f"SET search_path TO {schema}")
            with cursor.copy(f"COPY ({SQL}) TO STDOUT WITH (FORMAT csv, HEADER)") as copy:
                for chunk in copy:
                    buffer.write(chunk)
        return [tuple(r) for r in csv.reader(io.StringIO(buffer.getvalue().decode()))]
    database = target.rsplit("/", 1)[1]
    out = subprocess.run(
        ["mariadb", "-h127.0.0.1", "-uroot", "-D", database, "--batch", "--raw", "-e", SQL],
        capture_output=True,
        check=True,
    ).stdout.decode()
    rows = [tuple(line.split("\t")) for line in out.splitlines()]
    return [tuple("" if v == "NULL" else v for v in r) for r in rows]


def normal(value: str) -> str:
    """A field as compared: a number by its value (12.3 and 12.30 alike), anything else as written."""
    try:
        return str(Decimal(value).normalize()) if value else value
    except InvalidOperation:
        return value


def file_rows(path: str) -> list[tuple[str, ...]]:
    """An export's rows as CSV text, its header first."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        from sophrosyne.exports.writers import text

        table = pq.read_table(path)
        rows = [tuple(table.column_names)]
        for batch in table.to_batches(100_000):
            rows.extend(tuple(text(v) for v in r.values()) for r in batch.to_pylist())
        return rows
    with open(path, newline="", encoding="utf-8") as file:
        return [tuple(r) for r in csv.reader(file)]


def same(a: list[tuple[str, ...]], b: list[tuple[str, ...]]) -> bool:
    return len(a) == len(b) and all(tuple(map(normal, x)) == tuple(map(normal, y)) for x, y in zip(a, b, strict=True))


def one(target: str, format: str, restricted: bool, folder: str, warm: bool = False) -> dict[str, Any]:
    """In a fresh process: open the source, then export, measuring the peak RSS from just before the call. With
    `warm`, pyarrow has made one array before (its first costs ~51 MB, once per process: a server that made a
    Parquet export before has paid it)."""
    import pyarrow as pa
    import pyarrow.parquet  # loaded before the baseline: a server has it after its first export

    if warm:
        pa.array([0])

    from sophrosyne.base.text import estimate_tokens
    from sophrosyne.environment import Environment
    from sophrosyne.settings import Settings
    from sophrosyne.sql.policy import Role, TableRule
    from sophrosyne.tools.base import render

    settings = Settings(export_dir=Path(folder) / "exports", directives="none", export_timeout_s=600)
    role = Role("analyst", tables={"big": TableRule(row_filter=FILTER, hidden=[HIDDEN])}) if restricted else None
    env = Environment.open(target, settings=settings, role=role)
    env.execute_sql("SELECT id FROM big WHERE id = 1")
    # The peak from here on: the kernel's high-water mark of the process, reset (clear_refs 5) just before.
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kb("VmRSS")
    started = time.perf_counter()
    output = env.export_sql(SQL, format=format)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    peak = _status_kb("VmHWM")
    env.close()
    text = render(output)
    return {
        "rows": output.rows,
        "bytes": output.bytes,
        "seconds": round(seconds, 2),
        "rss_before_mb": round(before / 1024, 1),
        "rss_growth_mb": round((peak - before) / 1024, 1),
        "answer_tokens": estimate_tokens(text),
        "path": output.path,
    }


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


@contextmanager
def sources(engine: str, folder: Path, rows: int) -> Iterator[tuple[str, str]]:
    full, reduced = build(engine, folder, rows, False), build(engine, folder, rows, True)
    try:
        yield full, reduced
    finally:
        drop(engine, full)
        drop(engine, reduced)


def run(engines: list[str], rows: int) -> list[dict[str, Any]]:
    results = []
    folder = Path(tempfile.mkdtemp(prefix="sophrosyne-exports-"))
    try:
        for engine in engines:
            started = time.perf_counter()
            with sources(engine, folder, rows) as (full, reduced):
                built = time.perf_counter() - started
                own = {"full": engine_export(engine, full, folder), "reduced": engine_export(engine, reduced, folder)}
                for format in ("csv", "parquet"):
                    for restricted in (False, True):
                        measured = _in_child(full, format, restricted, folder)
                        if format == "parquet":
                            warmed = _in_child(full, format, restricted, folder, warm=True)
                            measured["rss_growth_warm_mb"] = warmed["rss_growth_mb"]
                        want = own["reduced" if restricted else "full"]
                        got = file_rows(measured.pop("path"))
                        result = {
                            "engine": engine,
                            "format": format,
                            "role": "restricted" if restricted else "unrestricted",
                            "compared_with": "engine export of the reduced copy" if restricted else "engine export",
                            "engine_rows": len(want) - 1,
                            "equal": same(got, want),
                            **measured,
                            "build_s": round(built, 1),
                        }
                        results.append(result)
                        print(json.dumps(result), flush=True)
                        shutil.rmtree(folder / "exports", ignore_errors=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


def _in_child(target: str, format: str, restricted: bool, folder: Path, warm: bool = False) -> dict[str, Any]:
    code = (
        "import json, sys; sys.path.insert(0, 'benchmarks'); from exports import one; "
        f"print(json.dumps(one({target!r}, {format!r}, {restricted!r}, {str(folder)!r}, {warm!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True)
    measured: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--engines", default="sqlite,duckdb,postgres,mariadb")
    args = parser.parse_args()
    # Stopped, it still drops the schemas and databases it made (the finally blocks run on SystemExit).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(1))
    results = run(args.engines.split(","), args.rows)
    bad = [
        r for r in results if not r["equal"] or r["rss_growth_mb"] >= RSS_BOUND_MB or r["answer_tokens"] >= TOKEN_BOUND
    ]
    summary = {
        "exports": len(results),
        "all_equal": all(r["equal"] for r in results),
        "max_rss_growth_mb": max(r["rss_growth_mb"] for r in results),
        "max_answer_tokens": max(r["answer_tokens"] for r in results),
        "failed": len(bad),
    }
    print(json.dumps({"summary": summary}), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
