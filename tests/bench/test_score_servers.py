"""BIRD mini-dev's PostgreSQL and MySQL gold, scored on servers (slow): BIRD's toxicology database loaded into
PostgreSQL and MariaDB on 127.0.0.1, as mini-dev loads every database's tables into one server database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from fixtures.datasets import shared_datasets
from fixtures.engines import MARIADB, PG_DSN, unique_name, unreachable
from sophrosyne.bench.data.registry import load_suite
from sophrosyne.bench.data.suites import select
from sophrosyne.bench.predictions import read_predictions
from sophrosyne.bench.score import score_predictions, summarize

TABLES = {
    "molecule": (["molecule_id", "label"], ["molecule_id"]),
    "atom": (["atom_id", "molecule_id", "element"], ["atom_id"]),
    "bond": (["bond_id", "molecule_id", "bond_type"], ["bond_id"]),
    "connected": (["atom_id", "atom_id2", "bond_id"], ["atom_id", "atom_id2"]),
}


def _rows() -> dict[str, list[tuple[Any, ...]]]:
    root = shared_datasets("bird_dev", "bird_mini_dev")
    path = root / "bird_dev" / "dev_databases" / "toxicology" / "toxicology.sqlite"
    with closing(sqlite3.connect(path)) as db:
        return {t: db.execute(f"SELECT {', '.join(c)} FROM {t}").fetchall() for t, (c, _) in TABLES.items()}


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    import psycopg

    rows = _rows()
    try:
        conn = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        unreachable("PostgreSQL", str(exc).strip().splitlines()[0])
    schema = unique_name("soph_minidev")
    with conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            conn.execute(f'SET search_path TO "{schema}"')
            for table, (columns, key) in TABLES.items():
                conn.execute(
                    f"CREATE TABLE {table} ({', '.join(c + ' text' for c in columns)}, PRIMARY KEY ({', '.join(key)}))"
                )
                with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows[table]:
                        copy.write_row(row)
            conn.execute("ANALYZE")
            yield f"{PG_DSN}?options=-csearch_path%3D{schema}"
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="module")
def mariadb() -> Iterator[str]:
    import pymysql

    rows = _rows()
    try:
        conn = pymysql.connect(**MARIADB, autocommit=True, connect_timeout=3, charset="utf8mb4")
    except pymysql.MySQLError as exc:
        unreachable("MariaDB", str(exc))
    name = unique_name("soph_minidev")
    with closing(conn), conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        try:
            conn.select_db(name)
            for table, (columns, key) in TABLES.items():
                fields = ", ".join(f"`{c}` varchar(64)" for c in columns)
                cur.execute(f"CREATE TABLE `{table}` ({fields}, PRIMARY KEY ({', '.join(key)}))")
                marks = ", ".join(["%s"] * len(columns))
                cur.executemany(f"INSERT INTO `{table}` VALUES ({marks})", rows[table])
            yield f"mysql://root@127.0.0.1:3306/{name}"
        finally:
            cur.execute(f"DROP DATABASE `{name}`")


def _score_gold(dataset: str, url: str, gold_file: str) -> dict[str, Any]:
    root = shared_datasets("bird_mini_dev")
    suite = select(load_suite(dataset, db_url=url), databases=["toxicology"])
    predictions = read_predictions(root / "bird_mini_dev" / gold_file, suite.order)
    verdicts = score_predictions(suite, predictions)
    summary = summarize(verdicts, "bird")
    summary["failing_gold"] = {v.question.id: v.gold_error for v in verdicts if v.gold_error}
    print(f"\n{dataset} on toxicology: {summary}")
    return summary


@pytest.mark.slow
def test_mini_dev_postgresql_gold_scores_100_percent_on_postgresql(postgres: str) -> None:
    summary = _score_gold("bird-mini-dev-postgresql", postgres, "mini_dev_postgresql_gold.sql")
    assert summary["questions"] == 40 and summary["ex"] == 1.0 and not summary["failing_gold"]


@pytest.mark.slow
def test_mini_dev_mysql_gold_on_mariadb(mariadb: str) -> None:
    summary = _score_gold("bird-mini-dev-mysql", mariadb, "mini_dev_mysql_gold.sql")
    # Every miss is a gold query MariaDB refuses (an alias written `T` for `t`: aliases are case-sensitive
    # on this server), scored 0 and reported as a gold error, never as a wrong prediction.
    assert summary["questions"] == 40 and summary["errors"] == 0
    assert summary["correct"] + len(summary["failing_gold"]) == 40
    assert all("Unknown column 'T." in error for error in summary["failing_gold"].values())
