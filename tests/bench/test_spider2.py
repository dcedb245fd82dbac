"""Spider 2.0 for directives: DDL to catalogs (STRUCT fields as columns, descriptions), gold SQL to gold tables
(qualified names, wildcard tables), and the bench's --drop-keys."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.files import load_custom
from sophrosyne.bench.data.spider2 import parse_ddl, read_catalog
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.bench.directives_bench import run_directives_bench
from sophrosyne.directives import gold_tables
from sophrosyne.schema.catalog import Catalog, Table

BIGQUERY = """CREATE TABLE `proj.shop.sessions_20170801`
(
  visitId INT64 OPTIONS(description="One visit, (unique) per day"),
  totals STRUCT<hits INT64, revenue INT64>,
  hits ARRAY<STRUCT<page STRUCT<path STRING, title STRING>, `time` INT64>>,
  note STRING OPTIONS(description="a, b; and <c>")
)
PARTITION BY DATE(_PARTITIONTIME)
OPTIONS(description="Sessions of one day");"""

SNOWFLAKE = """create or replace TABLE SALES_ORDERS (
\t"OrderID" NUMBER(38,0),
\t"CustomerID" NUMBER(38,0) COMMENT 'who, ordered',
\t"Payload" VARIANT
);"""


def test_bigquery_ddl_gives_nested_fields_as_columns_with_descriptions() -> None:
    parsed = parse_ddl(BIGQUERY)
    columns = {c.name: c for c in parsed.columns}
    assert list(columns) == [
        "visitId",
        "totals",
        "totals.hits",
        "totals.revenue",
        "hits",
        "hits.page",
        "hits.page.path",
        "hits.page.title",
        "hits.time",
        "note",
    ]
    assert columns["visitId"].description == "One visit, (unique) per day"
    assert columns["note"].description == "a, b; and <c>"
    assert columns["hits"].type == "ARRAY<STRUCT>" and columns["totals.hits"].type == "INT64"
    assert parsed.description == "Sessions of one day"


def test_snowflake_ddl_gives_quoted_columns_and_comments() -> None:
    parsed = parse_ddl(SNOWFLAKE)
    assert [(c.name, c.type) for c in parsed.columns] == [
        ("OrderID", "NUMBER(38,0)"),
        ("CustomerID", "NUMBER(38,0)"),
        ("Payload", "VARIANT"),
    ]
    assert parsed.columns[1].description == "who, ordered"


def test_gold_tables_resolve_qualified_and_wildcard_names() -> None:
    names = [f"proj.shop.sessions_2017080{d}" for d in (1, 2, 3)] + ["proj.shop.products", "DB.SALES.ORDERS"]
    catalog = Catalog(tables={n: Table(n, []) for n in names}, dialect="bigquery")
    sql = """DECLARE d STRING DEFAULT '20170801';
    WITH s AS (SELECT * FROM `proj.shop.sessions_*` WHERE _TABLE_SUFFIX = d)
    SELECT * FROM s JOIN `proj.shop.products` USING (sku)"""
    assert gold_tables(sql, catalog, "bigquery") == set(names[:4])
    assert gold_tables("SELECT * FROM db.sales.orders", catalog, "snowflake") == {"DB.SALES.ORDERS"}
    recursive = "WITH r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r"
    assert gold_tables(recursive, catalog, "snowflake") == set()


def test_a_shared_warehouse_reads_into_one_catalog_per_database() -> None:
    root = shared_datasets("spider2_lite")
    chembl = read_catalog(root / "spider2_lite" / "databases" / "bigquery" / "ebi_chembl", "bigquery")
    assert len(chembl.tables) == 785 and chembl.dialect == "bigquery"
    assert all(name.startswith("bigquery-public-data.ebi_chembl.") for name in chembl.tables)
    assert not [t for t in chembl.tables.values() if t.foreign_keys or t.primary_key]
    ga4 = read_catalog(root / "spider2_lite" / "databases" / "bigquery" / "ga4", "bigquery")
    events = next(iter(ga4.tables.values()))
    assert events.column("event_params.value.string_value") is not None


def test_drop_keys_removes_every_declared_key_and_joins_are_inferred(tmp_path: Path) -> None:
    tables = [
        {
            "db_id": "shop",
            "table_names_original": ["customers", "orders", "items", "stores", "staff", "ads"],
            "column_names_original": [
                [-1, "*"],
                [0, "customer_id"],
                [0, "customer_name"],
                [1, "order_id"],
                [1, "customer_id"],
                [1, "store_id"],
                [2, "item_id"],
                [2, "order_id"],
                [2, "item_price"],
                [3, "store_id"],
                [3, "store_city"],
                [4, "staff_name"],
                [5, "ad_text"],
            ],
            "column_types": ["text", "number", "text", *["number"] * 7, "text", "text", "text"],
            "primary_keys": [1, 3, 6, 9],
            "foreign_keys": [[4, 1], [5, 9], [7, 3]],
        }
    ]
    questions = [
        {"db_id": "shop", "question": "Which customer names bought items priced over 10?", "SQL": "SELECT 1 FROM "
         "customers JOIN orders USING (customer_id) JOIN items USING (order_id) WHERE item_price > 10"},
    ]  # fmt: skip
    (tmp_path / "tables.json").write_text(json.dumps(tables))
    (tmp_path / "q.json").write_text(json.dumps(questions))
    data = load_custom(tmp_path / "q.json", tmp_path / "tables.json")
    keyed = run_directives_bench(data)
    dropped = run_directives_bench(data, drop_keys=True)
    assert keyed.settings["drop_keys"] is False and dropped.settings["drop_keys"] is True
    assert keyed.settings["join_inference"]["inferred"] == 0
    assert dropped.settings["join_inference"]["inferred"] >= 3
    assert "names and types only" in dropped.settings["join_inference"]["evidence"]
    outcome = next(o for o in dropped.outcomes if o.system == "directives")
    assert outcome.gold == {"customers", "orders", "items"} and not outcome.gold & outcome.flagged


def test_loader_gold_overrides_parsing_and_units_count_once() -> None:
    shards = {f"ds.events_2020110{d}": Table(f"ds.events_2020110{d}", []) for d in (1, 2, 3)}
    catalog = Catalog(tables={**shards, "ds.users": Table("ds.users", [])})
    question = Question("q1", "db", "How many events?", "", "SELECT 1 FROM `ds.events_*`")
    data = Dataset("custom", [question], {"db": catalog}, gold={"q1": frozenset(["ds.events_20201102"])})
    run = run_directives_bench(data)
    oracle = next(o for o in run.outcomes if o.system == "oracle")
    assert oracle.tables == ["ds.events_* (3 tables)", "ds.users"]
    assert oracle.gold == {"ds.events_* (3 tables)"} and oracle.flagged == {"ds.users"}
