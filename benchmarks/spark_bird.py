"""BIRD mini-dev gold SQL on Apache Spark: the questions of its 3 shipped databases (student_club, superhero,
toxicology), each database copied into a Spark Thrift server as Parquet, each gold query transpiled from SQLite
by sqlglot, run directly and through Sophrosyne (unrestricted, and as a transparent role whose rules keep every
row and column), in one run. Counts how many transpile and run, and of those, how many Sophrosyne refuses or
answers with other rows than Spark itself. Writes JSON.

Needs a Thrift server on 127.0.0.1:10000 (scripts/spark_ci.sh shows how to start one) and the shared data:
    .venv/bin/python benchmarks/spark_bird.py --out bench-out/spark_bird.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlglot

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the Spark loader of the tests: SQLite tables as Parquet, analyzed

from fixtures.spark import HOST, PORT, connect, load_sqlite, quote  # noqa: E402
from sophrosyne.bench.data.folders import datasets_root  # noqa: E402
from sophrosyne.environment import Environment  # noqa: E402
from sophrosyne.errors import RejectedSQL, SophrosyneError  # noqa: E402
from sophrosyne.settings import Settings  # noqa: E402
from sophrosyne.sql.policy import Role, TableRule  # noqa: E402

DATABASES = ("student_club", "superhero", "toxicology")
WAYS = ("unrestricted", "transparent")
OUTCOMES = ("refused", "failed", "mismatched", "limit_ties")
ROWS = 100_000  # far more than any gold result here: a cap never hides a difference


def normalized(rows: Any) -> list[str]:
    """Rows as a sorted list of their reprs, floats to 10 significant digits (sums over partitions may
    add in another order)."""

    def value(v: Any) -> Any:
        if isinstance(v, float) and math.isfinite(v):
            return float(f"{v:.10g}")
        return v

    return sorted(repr(tuple(value(v) for v in row)) for row in rows)


def _same_without_limits(sql: str, cursor: Any, env: Environment) -> bool:
    """Whether the statement with every LIMIT taken out gives the same rows directly and through Sophrosyne:
    then a difference with the LIMITs is only which of the rows tied on the ORDER BY keys were kept."""
    tree = sqlglot.parse_one(sql, read="spark")
    limits = list(tree.find_all(sqlglot.exp.Limit))
    if not limits:
        return False
    for limit in limits:
        limit.pop()
    unlimited = tree.sql(dialect="spark")
    cursor.execute(unlimited)
    return normalized(cursor.fetchall()) == normalized(env.secure.run(unlimited, limit=ROWS).result.rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "spark_bird.json")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per statement")
    args = parser.parse_args()
    data = datasets_root()
    questions = [
        q
        for q in json.loads((data / "bird_mini_dev" / "mini_dev_sqlite.json").read_text(encoding="utf-8"))
        if q["db_id"] in DATABASES
    ]
    conn, cursor = connect()
    folder = Path(tempfile.mkdtemp(prefix="spark_bird_"))
    started = time.perf_counter()
    for db in DATABASES:
        load_sqlite(cursor, data / "bird_dev" / "dev_databases" / db / f"{db}.sqlite", f"bird_{db}", folder / db)
    load_s = time.perf_counter() - started
    settings = Settings(timeout_s=args.timeout)
    envs = {db: Environment.open(f"hive://{HOST}:{PORT}/bird_{db}", settings=settings) for db in DATABASES}
    roles = {
        db: env.for_role(
            Role("transparent", tables={t: TableRule(row_filter="1 = 1") for t in env.full_catalog.tables})
        )
        for db, env in envs.items()
    }
    counts: Counter[str] = Counter()
    cases: list[dict[str, Any]] = []
    for q in questions:
        db = q["db_id"]
        case: dict[str, Any] = {"question_id": q["question_id"], "db_id": db}
        cases.append(case)
        counts["questions"] += 1
        try:
            (sql,) = sqlglot.transpile(q["SQL"], read="sqlite", write="spark")
        except (sqlglot.errors.ParseError, ValueError) as exc:
            case["transpile_error"] = str(exc).splitlines()[0]
            continue
        counts["transpiled"] += 1
        case["sql"] = sql
        try:
            cursor.execute(f"USE {quote(f'bird_{db}')}")
            cursor.execute(sql)
            direct = normalized(cursor.fetchall())
        except Exception as exc:  # Spark's own failure of a transpiled query: counted, not ours
            case["spark_error"] = str(exc).strip().splitlines()[0][:300]
            continue
        counts["ran"] += 1
        for way, env in zip(WAYS, (envs[db], roles[db]), strict=True):
            try:
                rows = env.secure.run(sql, limit=ROWS).result.rows
            except RejectedSQL as exc:
                counts[f"{way}_refused"] += 1
                case[f"{way}_refused"] = exc.message
                continue
            except SophrosyneError as exc:
                counts[f"{way}_failed"] += 1
                case[f"{way}_failed"] = str(exc)[:300]
                continue
            if normalized(rows) == direct:
                continue
            if _same_without_limits(sql, cursor, env):
                # A LIMIT over rows that tie on its ORDER BY keeps any of them: both answers are right.
                counts[f"{way}_limit_ties"] += 1
                case[f"{way}_limit_ties"] = True
            else:
                counts[f"{way}_mismatched"] += 1
                case[f"{way}_mismatched"] = True
    for env in envs.values():
        env.db.close()
    cursor.close()
    conn.close()
    report = {
        "benchmark": "spark_bird",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "sqlglot": sqlglot.__version__,
        "databases": list(DATABASES),
        "load_s": round(load_s, 1),
        "total_s": round(time.perf_counter() - started, 1),
        "counts": {k: counts.get(k, 0) for k in ("questions", "transpiled", "ran")}
        | {f"{way}_{what}": counts.get(f"{way}_{what}", 0) for way in WAYS for what in OUTCOMES},
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("load_s", "total_s", "counts")}))


if __name__ == "__main__":
    main()
