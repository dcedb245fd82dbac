"""Directives: anchors are never flagged, FK closure adds bridges, the oracle is exact, roles hide tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.openai_server import chat_reply, scripted_server
from sophrosyne.bench.baselines import paper_rules_top1
from sophrosyne.bench.data.files import load_catalogs
from sophrosyne.directives import (
    DirectiveSettings,
    LLMColumnInference,
    compute_directives,
    gold_tables,
    infer_identifiers,
    knowledge_units,
    oracle_directives,
)
from sophrosyne.index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.policy import Role, restrict

FIXTURES = Path(__file__).parents[1] / "fixtures" / "directives"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalogs(FIXTURES / "tables.json")["shop"]


@pytest.fixture(scope="module")
def index(catalog: Catalog) -> SchemaIndex:
    return SchemaIndex.build(catalog)


def test_infer_identifiers_from_knowledge() -> None:
    strong, weak = infer_identifiers("named Tea refers to `productName` = 'Tea'; North is region_name = 'North'")
    assert "productName" in strong and "region_name" in strong
    assert "Tea" not in strong and "to" not in strong and "North" not in strong  # values and prose are not
    assert "refers" in weak
    assert knowledge_units("A refers to city = 'Lyon'; B")[:3] == ["A refers to city = 'Lyon'", "A", "city = 'Lyon'"]


@pytest.mark.parametrize(
    ("knowledge", "table"),
    [
        ("`loyalty_tier` = 'gold'", "customers"),
        ("hire_date LIKE '2020%'", "employees"),
        ("SUM(unit_price)", "order_items"),
        ("suppliers.country = 'France'", "suppliers"),
        ("region_name = 'North'", "regions"),
    ],
)
def test_a_table_whose_column_the_knowledge_names_is_never_flagged(
    knowledge: str, table: str, catalog: Catalog, index: SchemaIndex
) -> None:
    for question in ("How many are there?", "List the stores.", "What is the average price of products?"):
        directives = compute_directives(question, knowledge, catalog, index, settings=DirectiveSettings(threshold=0.9))
        assert table not in directives.flagged, (question, knowledge, directives.render())


def test_a_column_several_tables_share_keeps_at_least_one_of_them(catalog: Catalog, index: SchemaIndex) -> None:
    settings = DirectiveSettings(threshold=0.99)
    directives = compute_directives("Count them.", "`store_id` = 3", catalog, index, settings=settings)
    assert {"orders", "employees", "stores"} & set(directives.relevant)


def test_fk_closure_adds_the_bridge_tables(catalog: Catalog, index: SchemaIndex) -> None:
    directives = compute_directives(
        "Which regions sold products of category Drinks?",
        "category = 'Drinks'; region_name",
        catalog,
        index,
    )
    assert {"products", "regions"} <= set(directives.relevant)
    # products -> order_items -> orders -> stores -> regions: the three tables between are kept
    assert {"order_items", "orders", "stores"} <= set(directives.relevant)
    assert "employees" in directives.flagged
    flagged = {d.table: d for d in directives.irrelevant}
    assert all(d.reason and d.tier in ("high", "medium") and 0 <= d.confidence <= 1 for d in flagged.values())
    assert "likely irrelevant" in directives.render()


def test_gold_tables_ignore_cte_names_and_see_subqueries(catalog: Catalog) -> None:
    sql = (
        "WITH orders AS (SELECT * FROM customers) SELECT * FROM orders o "
        "WHERE o.city IN (SELECT city FROM stores JOIN regions USING (region_id))"
    )
    assert gold_tables(sql, catalog) == {"customers", "stores", "regions"}
    assert gold_tables('SELECT * FROM "Order_Items"', catalog) == {"order_items"}


def test_oracle_is_exact(catalog: Catalog) -> None:
    directives = oracle_directives("SELECT COUNT(*) FROM orders JOIN customers USING (customer_id)", catalog)
    assert set(directives.relevant) == {"orders", "customers"}
    assert set(directives.flagged) == set(catalog.tables) - {"orders", "customers"}
    assert directives.mode == "oracle"


def test_hidden_tables_never_appear(catalog: Catalog, index: SchemaIndex) -> None:
    role = Role(name="clerk", denied=["employees", "suppliers"])
    visible = restrict(role, catalog)
    directives = compute_directives("Who was hired in 2020?", "hire_date LIKE '2020%'", visible, index)
    named = set(directives.flagged) | set(directives.relevant)
    assert named <= set(visible.tables)
    assert not {"employees", "suppliers"} & named


def test_abstains_on_tiny_schemas_and_without_any_match(index: SchemaIndex) -> None:
    tiny = Catalog(tables={"t": Table("t", [Column("a", "INT")]), "u": Table("u", [Column("b", "INT")])})
    directives = compute_directives("How many a?", None, tiny, index)
    assert directives.abstained and not directives.flagged
    assert "No directives" in directives.render()


def test_paper_baseline_keeps_the_top_table_of_each_inferred_column(catalog: Catalog, index: SchemaIndex) -> None:
    directives = paper_rules_top1("Which supplier makes Tea?", "`productName` = 'Tea'; supplier_name", catalog, index)
    assert {"products", "suppliers"} <= set(directives.relevant)
    assert directives.mode == "paper_rules_top1"


ANSWERS: list[str] = []


@pytest.fixture()
def chat_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with scripted_server(lambda path, body: chat_reply(ANSWERS.pop(0) if ANSWERS else "")) as served:
        yield served


def test_llm_inferred_columns_become_anchors(
    chat_server: tuple[str, list[dict[str, Any]]], catalog: Catalog, index: SchemaIndex
) -> None:
    url, received = chat_server
    ANSWERS[:] = ["- suppliers.country\n- products.category\nnot a column name!"]
    inference = LLMColumnInference(url, "small-model", api_key="k")
    settings = DirectiveSettings(threshold=0.99)
    directives = compute_directives(
        "Where do the drinks come from?", None, catalog, index, settings=settings, inference=inference
    )
    assert {"suppliers", "products"} <= set(directives.relevant)
    prompt = received[-1]["messages"][0]["content"]
    assert "Where do the drinks come from?" in prompt and "suppliers(" in prompt


def test_llm_failure_means_no_inferred_names(catalog: Catalog) -> None:
    assert LLMColumnInference("http://127.0.0.1:9", "m", timeout_s=0.5).infer("q", "", catalog) == []
