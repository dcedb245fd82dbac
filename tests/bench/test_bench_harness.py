"""The harness on a small shop database: prediction formats, question selection and shards, an external agent's
exploration from a real audit log, token counts, and the datasets' loaders (mini-dev, Spider 2.0-lite)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

from fixtures.datasets import shared_datasets
from sophrosyne.audit import AuditLog, AuditRecord
from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.data.registry import load_suite
from sophrosyne.bench.data.suites import parse_shard, select, suite_from_files
from sophrosyne.bench.exploration import measure
from sophrosyne.bench.predictions import read_predictions
from sophrosyne.bench.sessions import match_sessions
from sophrosyne.bench.tokens import measure_tokens
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings

QUESTIONS = [
    {"question_id": 1, "db_id": "shop", "question": "How many customers live in Lyon?", "evidence": "",
     "SQL": "SELECT COUNT(*) FROM customers WHERE city = 'Lyon'", "difficulty": "simple"},
    {"question_id": 2, "db_id": "shop", "question": "What did Ann order?", "evidence": "Ann is a customer name",
     "SQL": "SELECT o.item FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.name = 'Ann'",
     "difficulty": "moderate"},
    {"question_id": 3, "db_id": "shop", "question": "Which suppliers are there?", "evidence": "",
     "SQL": "SELECT name FROM suppliers", "difficulty": "simple"},
    {"question_id": 4, "db_id": "gone", "question": "A question on a database that is not here", "evidence": "",
     "SQL": "SELECT 1", "difficulty": "simple"},
]  # fmt: skip


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    """`<tmp>/dbs/shop/shop.sqlite` and `<tmp>/questions.jsonl`."""
    folder = tmp_path / "dbs" / "shop"
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "shop.sqlite") as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
        db.execute(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), item TEXT)"
        )
        db.execute("CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, title TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?, ?)", [(1, "Ann", "Lyon"), (2, "Bo", "Oslo")])
        db.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, 1, "tea"), (2, 1, "cup"), (3, 2, "pen")])
        db.executemany("INSERT INTO suppliers VALUES (?, ?)", [(1, "Acme"), (2, "Globex")])
        db.execute("INSERT INTO products VALUES (1, 'kettle')")
    db.close()
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    return tmp_path


def test_questions_on_an_absent_database_are_reported_and_skipped(shop: Path) -> None:
    suite = suite_from_files(shop / "questions.jsonl", databases=shop / "dbs")
    assert [q.id for q in suite.questions] == ["1", "2", "3"]
    assert [(s.question_id, s.reason) for s in suite.skipped] == [("4", "database file absent")]
    assert suite.order == ["1", "2", "3", "4"]


def test_selection_and_shards_partition_the_questions(shop: Path) -> None:
    suite = suite_from_files(shop / "questions.jsonl", databases=shop / "dbs")
    shards = [select(suite, shard=parse_shard(f"{i}/2")).questions for i in (1, 2)]
    assert [q.id for q in shards[0]] == ["1", "3"] and [q.id for q in shards[1]] == ["2"]
    assert [q.id for q in select(suite, difficulties=["moderate"]).questions] == ["2"]
    assert [q.id for q in select(suite, limit=2, shard=(2, 2)).questions] == ["2"]
    with pytest.raises(ConfigError, match="i/n"):
        parse_shard("2")
    with pytest.raises(ConfigError, match="between 1 and n"):
        parse_shard("3/2")
    with pytest.raises(ConfigError, match="nowhere"):
        select(suite, databases=["nowhere"])


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("ids.json", {"2": "SELECT 2\t----- bird -----\tshop", "4": 7}, {"2": "SELECT 2", "4": ""}),
        ("positions.json", {"0": "SELECT 1", "1": "SELECT 2"}, {"1": "SELECT 1", "2": "SELECT 2"}),
        ("list.json", ["SELECT 1", "SELECT 2"], {"1": "SELECT 1", "2": "SELECT 2"}),
        ("lines.sql", "SELECT 1\tshop\nSELECT 2\n\n", {"1": "SELECT 1", "2": "SELECT 2"}),
        ("rows.jsonl", '{"question_id": 3, "sql": "SELECT 3"}\n{"instance_id": "9", "SQL": "x"}\n', {"3": "SELECT 3"}),
    ],
)
def test_prediction_formats(tmp_path: Path, name: str, content: Any, expected: dict[str, str]) -> None:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    assert read_predictions(path, ["1", "2", "3", "4"]).sql == expected


def test_a_folder_of_sql_and_csv_files_and_malformed_predictions(tmp_path: Path) -> None:
    folder = tmp_path / "preds"
    folder.mkdir()
    (folder / "1.sql").write_text("SELECT 1")
    (folder / "2.csv").write_text("a\n1\n")
    (folder / "zz.sql").write_text("SELECT 9")
    found = read_predictions(folder, ["1", "2"])
    assert found.sql == {"1": "SELECT 1"} and list(found.csv) == ["2"] and found.unknown == ["zz.sql"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"a": "SELECT 1"}))
    with pytest.raises(ConfigError, match="neither question ids nor positions"):
        read_predictions(bad, ["1"])
    many = tmp_path / "many.sql"
    many.write_text("SELECT 1\nSELECT 2\n")
    with pytest.raises(ConfigError, match="2 predicted lines for 1 questions"):
        read_predictions(many, ["1"])


def _agent_session(env: Environment) -> None:
    """An external agent at work through the MCP server: a stray call, then two questions."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_tables", {}),
        ("list_tables", {"question": "How many customers live in  LYON?"}),  # spacing and case differ
        ("describe_table", {"table": "customers"}),
        ("describe_table", {"table": "suppliers"}),
        ("get_distinct_values", {"table": "customers", "column": "city", "search": "lyon"}),
        ("execute_sql", {"sql": "SELECT COUNT(*) FROM customers WHERE city = 'Lyon'"}),
        ("list_tables", {"question": "What did Ann order?", "knowledge": "Ann is a customer name"}),
        ("describe_table", {"table": "orders"}),
        ("find_rows", {"term": "Ann", "table": "customers"}),
        ("execute_sql", {"sql": "SELECT o.item FROM orders o JOIN customers c ON c.id = o.customer_id, products"}),
    ]

    async def go() -> None:
        async with Client(build_server(env)) as client:
            for name, arguments in calls:
                await client.call_tool(name, arguments)

    asyncio.run(go())


def test_bench_score_with_an_audit_log_measures_an_external_agents_exploration(shop: Path) -> None:
    log = shop / "audit.jsonl"
    settings = Settings.load(None, audit_log=log, cache_dir=shop / "cache")
    _agent_session(Environment.open(shop / "dbs" / "shop" / "shop.sqlite", settings=settings))
    predictions = shop / "predictions.jsonl"
    rows = [
        {"question_id": 1, "sql": "SELECT COUNT(*) FROM customers WHERE city = 'Lyon'"},
        {"question_id": 2, "sql": "SELECT o.item FROM orders o JOIN customers c ON c.id = o.customer_id, products"},
    ]
    predictions.write_text("\n".join(json.dumps(r) for r in rows))
    out = shop / "score.json"
    args = ["score", "--questions", str(shop / "questions.jsonl"), "--databases", str(shop / "dbs")]
    args += ["--predictions", str(predictions), "--audit", str(log), "--json", str(out), "--quiet"]
    result = CliRunner().invoke(bench_app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["summary"]["questions"] == 3 and report["summary"]["ex"] == pytest.approx(1 / 3, abs=1e-4)
    by_id = {q["question_id"]: q for q in report["questions"]}
    first, second = by_id["1"]["exploration"], by_id["2"]["exploration"]
    assert first["explored"] == ["customers", "suppliers"] and first["over_explored"] == ["suppliers"]
    assert first["tool_calls"] == 5 and first["extra_final"] == [] and first["response_tokens"] > 0
    assert second["explored"] == ["customers", "orders", "products"] and second["over_explored"] == ["products"]
    assert second["extra_final"] == ["products"] and second["tool_calls"] == 4
    assert "exploration" not in by_id["3"]  # the log never reached it
    assert report["summary"]["exploration"]["questions"] == 2
    assert report["summary"]["exploration"]["over_exploration"] == 1.0
    assert "1 call(s) in 0 session(s) unmatched" in result.output
    assert report["skipped"] == [{"question_id": "4", "db_id": "gone", "reason": "database file absent"}]


def test_sessions_can_be_assigned_by_a_map(shop: Path) -> None:
    log = shop / "audit.jsonl"
    with AuditLog(log) as audit:
        for session, table in (("s1", "suppliers"), ("s2", "orders"), ("s3", "customers")):
            audit.write(AuditRecord(session=session, role="default", tool="describe_table", arguments={"table": table}))
    mapping = shop / "sessions.json"
    mapping.write_text(json.dumps({"3": "s1", "2": "s2"}))
    suite = suite_from_files(shop / "questions.jsonl", databases=shop / "dbs")
    matched = match_sessions(log, suite.questions, mapping)
    assert [c for c, _ in matched.work["3"].calls] == ["describe_table"]
    assert matched.work["2"].records[0].arguments == {"table": "orders"}
    assert matched.unmatched_sessions == ["s3"] and matched.unmatched_calls == 1
    mapping.write_text(json.dumps({"99": "s1"}))
    with pytest.raises(ConfigError, match="'99'"):
        match_sessions(log, suite.questions, mapping)


def test_exploration_counts_tables_named_or_queried_not_listed() -> None:
    calls = [
        ("list_tables", {"question": "q"}),
        ("search_schema", {"query": "city"}),
        ("find_rows", {"term": "Ann"}),  # no table named: the environment chose where to look
        ("describe_table", {"table": "Customers"}),
        ("execute_sql", {"sql": "WITH t AS (SELECT * FROM orders) SELECT * FROM t JOIN main.products p ON 1"}),
        ("execute_sql", {"sql": "not sql at all ((("}),
    ]
    x = measure(calls, gold={"orders"}, final_sql="SELECT * FROM orders, suppliers", catalog=None)
    assert x.explored == ["Customers", "orders", "products"] and x.over_explored == ["Customers", "products"]
    assert x.extra_final == ["suppliers"] and x.missing_final == [] and x.tool_calls == 6


def test_tokens_compare_the_whole_schema_with_what_a_question_needs(shop: Path) -> None:
    suite = suite_from_files(shop / "questions.jsonl", databases=shop / "dbs")
    (entry,) = measure_tokens(suite)
    data = entry.to_json()
    assert data["db_id"] == "shop" and data["questions"] == 3 and data["tables"] == 4 and data["with_values"]
    assert data["coarse_tokens"] > data["fine_tokens_median"] > 0 and data["ratio"] > 1


def test_mini_dev_suites_and_server_dialects() -> None:
    shared_datasets("bird_mini_dev", "bird_dev")
    sqlite = load_suite("bird-mini-dev")
    assert len(sqlite.questions) == 140 and len(sqlite.skipped) == 360 and sqlite.metric == "bird"
    mysql = load_suite("bird-mini-dev-mysql")
    assert not mysql.questions and {s.reason for s in mysql.skipped} == {"no mysql server given (--db-url)"}
    postgres = load_suite("bird-mini-dev-postgresql", db_url="postgresql://postgres@127.0.0.1/{db_id}")
    assert len(postgres.questions) == 500 and postgres.dialect == "postgres"
    assert postgres.targets["superhero"] == "postgresql://postgres@127.0.0.1/superhero"


def test_spider2_lite_scores_result_csvs_and_refuses_sql(tmp_path: Path) -> None:
    root = shared_datasets("spider2_lite")
    suite = load_suite("spider2-lite")
    assert len(suite.questions) == 28 and suite.skipped_by_reason() == {"no gold result here": 384}
    folder = tmp_path / "submission"
    folder.mkdir()
    gold = root / "spider2_lite" / "gold_exec_result"
    shutil.copy(gold / "bq001_b.csv", folder / "bq001.csv")  # a second variant is accepted too
    shutil.copy(gold / "bq006_a.csv", folder / "bq010.csv")  # another instance's table is wrong
    out = tmp_path / "score.json"
    args = ["score", "--dataset", "spider2-lite", "--predictions", str(folder), "--json", str(out), "--quiet"]
    result = CliRunner().invoke(bench_app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    by_id = {q["question_id"]: q for q in report["questions"]}
    assert by_id["bq001"]["ex"] == 1 and by_id["bq010"]["ex"] == 0 and by_id["bq002"]["error"] == "no prediction"
    assert report["summary"] == report["summary"] | {"questions": 28, "ex": round(1 / 28, 4), "predicted": 2}
    (folder / "bq001.csv").unlink()
    (folder / "bq010.csv").unlink()
    (folder / "bq001.sql").write_text("SELECT 1")
    refused = CliRunner().invoke(bench_app, args)
    assert refused.exit_code == 1 and "not reachable" in refused.output
