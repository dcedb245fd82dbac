"""Join inference: candidates from names and types, confirmed or rejected by values on the secured path,
declared keys first, shown as inferred by the tools, and followed by the directives' bridges."""

from __future__ import annotations

import gc
import sqlite3
import time
from pathlib import Path

import pytest

from sophrosyne.directives import compute_directives
from sophrosyne.directives.prepared import prepare_schema
from sophrosyne.environment import Environment
from sophrosyne.index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.schema.join_checks import infer_joins
from sophrosyne.schema.joins import candidate_joins, with_joins, without_keys
from sophrosyne.settings import Settings


def catalog(*tables: Table) -> Catalog:
    return Catalog(tables={t.name: t for t in tables})


def cols(*spec: str) -> list[Column]:
    """Columns from `name:TYPE` strings."""
    return [Column(s.split(":")[0], s.split(":")[1] if ":" in s else "INTEGER") for s in spec]


def pairs(c: Catalog) -> set[tuple[str, str, str, str]]:
    return {(j.table, j.columns[0], j.ref_table, j.ref_columns[0]) for j in candidate_joins(c)}


def test_x_id_joins_the_table_named_x_by_its_id_or_its_x_id() -> None:
    found = pairs(
        catalog(
            Table("customers", cols("id", "name:TEXT")),
            Table("orders", cols("order_id", "customer_id", "product_id", "amount:REAL")),
            Table("products", cols("product_id", "title:TEXT")),
        )
    )
    assert ("orders", "customer_id", "customers", "id") in found
    assert ("orders", "product_id", "products", "product_id") in found
    assert not [p for p in found if p[1] == "amount"]


def test_a_column_naming_many_equally_likely_tables_joins_only_those_of_its_domain_or_none() -> None:
    assets = [Table(f"{domain}_asset", cols("id", "label:TEXT")) for domain in ("sales", "hr", "ops", "legal")]
    appointment = Table("billing_appointment_eu", cols("id", "asset_id"))
    # Four `*_asset` tables, none of billing: the name does not say which one (more than MAX_TIED_TARGETS tie).
    assert not [p for p in pairs(catalog(appointment, *assets)) if p[0] == "billing_appointment_eu"]
    # With billing's own `billing_asset` among them, that one.
    billing = Table("billing_asset", cols("id", "label:TEXT"))
    found = [p for p in pairs(catalog(appointment, billing, *assets)) if p[0] == "billing_appointment_eu"]
    assert found == [("billing_appointment_eu", "asset_id", "billing_asset", "id")]
    # A schema says the domain of a qualified name; and a few candidates are all kept.
    schemas = [Table(f"{s}.asset", cols("id", "label:TEXT")) for s in ("sales", "hr", "ops", "billing")]
    found = [p for p in pairs(catalog(Table("billing.visit", cols("id", "asset_id")), *schemas)) if p[1] == "asset_id"]
    assert found == [("billing.visit", "asset_id", "billing.asset", "id")]
    assert len([p for p in pairs(catalog(appointment, *assets[:3])) if p[0] == "billing_appointment_eu"]) == 3


def test_warehouse_naming_prefixes_roles_and_camel_case() -> None:
    found = pairs(
        catalog(
            Table("SALES_CUSTOMERS", cols("CustomerID", "CustomerName:VARCHAR(100)")),
            Table("SALES_INVOICES", cols("InvoiceID", "CustomerID", "BillToCustomerID")),
            Table("users", cols("Id", "DisplayName:TEXT")),
            Table("posts", cols("Id", "OwnerUserId", "Score")),
        )
    )
    assert ("SALES_INVOICES", "CustomerID", "SALES_CUSTOMERS", "CustomerID") in found
    assert ("SALES_INVOICES", "BillToCustomerID", "SALES_CUSTOMERS", "CustomerID") in found
    assert ("posts", "OwnerUserId", "users", "Id") in found


def test_a_warehouse_key_word_after_a_key_word_reads_as_the_name_before_it() -> None:
    found = pairs(
        catalog(
            Table("FACT_SETS", cols("SETS_KEY", "CODE:TEXT", "NAME:TEXT")),
            Table("FACT_SET_TRNS", cols("SET_TRNS_KEY", "SET_CODE_KEY:TEXT", "LNG:TEXT")),
            Table("DIM_CSTM", cols("CSTM_NBR_SK", "SEGMENT:TEXT")),
            Table("FACT_SALE", cols("SALE_KEY", "CSTM_NBR_SK")),
        )
    )
    # `SET_CODE_KEY` is `SET_CODE`: the set's code.
    assert ("FACT_SET_TRNS", "SET_CODE_KEY", "FACT_SETS", "CODE") in found
    assert ("FACT_SALE", "CSTM_NBR_SK", "DIM_CSTM", "CSTM_NBR_SK") in found
    # A key word after a word that is no key word stays what it was: `SET_TRNS_KEY` names no table `set`.
    assert not [p for p in found if p[1] == "SET_TRNS_KEY"]


def test_a_compact_key_joins_the_table_it_leads_and_a_column_named_as_a_table_joins_that_table() -> None:
    found = pairs(
        catalog(
            Table("Activity", cols("actid", "activity_name:TEXT")),
            Table("Participates_in", cols("stuid", "actid")),
            Table("Faculty_Participates_in", cols("FacID", "actid")),
            Table("Scientists", cols("SSN", "Name:TEXT")),
            Table("Projects", cols("Code:CHAR(4)", "Name:TEXT", "Hours")),
            Table("AssignedTo", cols("Scientist", "Project:CHAR(4)")),
            Table("posts", cols("Id", "Tags:TEXT", "Comment:TEXT")),
            Table("tags", cols("Id", "TagName:TEXT")),
            Table("comments", cols("Id", "Text:TEXT")),
            Table("invoices", cols("invoice_no", "paid")),
            Table("refunds", cols("paid", "refund_no")),
        )
    )
    # `actid` runs a word and `id` together: a key, joined to the one table it leads.
    assert ("Participates_in", "actid", "Activity", "actid") in found
    assert ("Faculty_Participates_in", "actid", "Activity", "actid") in found
    assert not [p for p in found if p[1] == "actid" and p[2] != "Activity"]
    # `Scientist` and `Project` are named as the tables are, and their types are those tables' keys' types.
    assert ("AssignedTo", "Scientist", "Scientists", "SSN") in found
    assert ("AssignedTo", "Project", "Projects", "Code") in found
    # A text named as a table is no key of its integer ids; `paid` is an English word, no key.
    assert not [p for p in found if p[1] in ("Tags", "Comment", "paid")]


def test_incompatible_types_and_generic_names_do_not_join() -> None:
    found = pairs(
        catalog(
            Table("customers", cols("customer_id:DATE", "name:TEXT")),
            Table("orders", cols("id", "customer_id:BOOLEAN", "status:TEXT")),
            Table("returns", cols("id", "status:TEXT")),
        )
    )
    assert found == set()


def test_declared_keys_win() -> None:
    orders = Table(
        "orders",
        cols("id", "customer_id", "store_id"),
        foreign_keys=[ForeignKey(["customer_id"], "customers", ["id"])],
    )
    c = catalog(Table("customers", cols("id")), Table("stores", cols("id")), orders, Table("visits", cols("store_id")))
    found = pairs(c)
    # A table that declares its keys is trusted to declare all of them; the others still get inferred joins.
    assert not [p for p in found if p[0] == "orders"]
    assert ("visits", "store_id", "stores", "id") in found
    # Dropping the keys brings the join back, inferred.
    assert ("orders", "customer_id", "customers", "id") in pairs(without_keys(c))
    keyed = with_joins(c, candidate_joins(c))
    assert [fk.inferred for fk in keyed.tables["visits"].foreign_keys] == [True]
    assert [fk.inferred for fk in keyed.tables["orders"].foreign_keys] == [False]


def test_values_confirm_or_reject_a_candidate_within_the_budget() -> None:
    c = catalog(
        Table("customers", cols("id")),
        Table("batches", cols("id")),
        Table("orders", cols("id", "customer_id", "batch_id")),
    )
    data = {("orders", "customer_id"): [1, 2, 3], ("orders", "batch_id"): [70, 80, 90], ("customers", "id"): [1, 2, 3]}

    def sample(table: str, column: str, limit: int) -> list[object]:
        return data.get((table, column), [])[:limit]

    def probe(table: str, column: str, values: list[object]) -> set[object]:
        return {v for v in values if v in data.get((table, column), [])}

    result = infer_joins(c, sample, probe)
    by_column = {j.columns[0]: j for j in result.joins}
    assert by_column["customer_id"].confidence >= 0.95 and "3 of 3" in by_column["customer_id"].evidence
    assert "batch_id" not in by_column and result.rejected == 1
    names_only = infer_joins(c)
    assert {j.columns[0] for j in names_only.joins} == {"customer_id", "batch_id"}
    assert "names and types only" in names_only.note
    out_of_time = infer_joins(c, sample, probe, budget_s=0.0)
    assert out_of_time.unchecked == 2 and "time budget" in out_of_time.note


@pytest.fixture
def shop_without_keys(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE customers (id INTEGER, name TEXT);
        CREATE TABLE batches (id INTEGER, label TEXT);
        CREATE TABLE orders (id INTEGER, customer_id INTEGER, batch_id INTEGER, amount REAL);
        INSERT INTO customers VALUES (1, 'Ada'), (2, 'Bo'), (3, 'Cy');
        INSERT INTO batches VALUES (1, 'a'), (2, 'b');
        INSERT INTO orders VALUES (10, 1, 501, 9.5), (11, 2, 502, 3.0), (12, 3, 503, 1.0);
        """
    )
    connection.commit()
    connection.close()
    return path


def test_tools_show_inferred_joins_confirmed_through_the_secured_path(shop_without_keys: Path, tmp_path: Path) -> None:
    env = Environment.open(shop_without_keys, settings=Settings(cache_dir=tmp_path / "cache"))
    orders = env.describe_table("orders")
    keys = {c.name: c.key for c in orders.columns}
    assert keys["customer_id"] == "FK -> customers.id (inferred, 0.95)"
    assert keys["batch_id"] is None  # batch_id values are not batches.id values: rejected
    assert orders.references == ["customer_id -> customers.id (inferred, 0.95)"]
    assert env.describe_table("customers").referenced_by == ["orders.customer_id -> id (inferred, 0.95)"]
    listed = {t.name: t.join_keys for t in env.list_tables().tables}
    assert listed["orders"] == ["customer_id -> customers.id (inferred, 0.95)"]
    joins = env.moderator.prepared.joins
    assert (joins.confirmed, joins.rejected) == (1, 1)


def test_joins_a_budget_cut_are_checked_after_a_first_answer_and_read_so_by_the_next_start(
    shop_without_keys: Path, tmp_path: Path
) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", join_inference_s=1e-9)  # no time to check any
    env = Environment.open(shop_without_keys, settings=settings)
    try:
        env.list_tables(question="Which customers ordered the most?")
        first = env.moderator.prepared.joins
        assert not first.complete and first.confirmed == 0
        done = env.moderator._more_joins.wait(30.0)  # started after the answer, in the background
        assert done is not None and done.complete and (done.confirmed, done.rejected) == (1, 1)
    finally:
        env.close()
    again = Environment.open(shop_without_keys, settings=settings)
    try:
        assert again.moderator.prepared.joins == done  # read, not inferred again within its 1e-9 s
    finally:
        again.close()


def test_directives_bridge_through_inferred_joins() -> None:
    c = catalog(
        Table("customers", cols("customer_id", "customer_name:TEXT", "city:TEXT")),
        Table("orders", cols("order_id", "customer_id", "order_date:TEXT")),
        Table("order_lines", cols("line_id", "order_id", "product_id", "quantity")),
        Table("products", cols("product_id", "product_name:TEXT", "colour:TEXT")),
        Table("suppliers", cols("supplier_id", "supplier_name:TEXT", "country:TEXT")),
        Table("warehouses", cols("warehouse_id", "warehouse_name:TEXT", "capacity")),
    )
    knowledge = "customer name refers to `customer_name`; product name refers to `product_name`"
    question = "Which customers bought products named Widget?"
    prepared = prepare_schema(c)
    index = SchemaIndex.build(prepared.catalog)
    with_bridges = compute_directives(question, knowledge, prepared.catalog, index, units=prepared.units)
    assert {"orders", "order_lines"} <= set(with_bridges.relevant)
    assert "warehouses" in with_bridges.flagged
    plain = compute_directives(question, knowledge, c, SchemaIndex.build(c))
    assert "orders" in plain.flagged or "order_lines" in plain.flagged  # without the joins, no bridge


def test_an_entity_ending_a_one_word_table_name_and_a_role_before_a_key_still_join() -> None:
    found = pairs(
        catalog(
            Table("superhero", cols("id", "superhero_name:TEXT")),
            Table("superpower", cols("id", "power_name:TEXT")),
            Table("hero_power", cols("hero_id", "power_id")),
            Table("bikeshare_station_info", cols("station_id", "name:TEXT")),
            Table("bikeshare_status", cols("station_id", "bikes_available")),
            Table("bikeshare_trips", cols("trip_id", "start_station_id", "end_station_id")),
        )
    )
    assert ("hero_power", "hero_id", "superhero", "id") in found
    assert ("hero_power", "power_id", "superpower", "id") in found
    assert ("bikeshare_trips", "start_station_id", "bikeshare_station_info", "station_id") in found
    assert ("bikeshare_trips", "end_station_id", "bikeshare_station_info", "station_id") in found
    # The role rule needs a role: two tables holding the same plain key are left to the shared-name rule.
    assert ("bikeshare_status", "station_id", "bikeshare_trips", "station_id") not in found
    ambiguous = pairs(
        catalog(
            Table("superhero", cols("id")), Table("antihero", cols("id")), Table("hero_power", cols("hero_id", "x"))
        )
    )
    assert not [p for p in ambiguous if p[1] == "hero_id"]  # two tables end in `hero`: neither is guessed


def _numbered(count: int) -> Catalog:
    """`part_0001` ... with a declared key to the next one: thousands of tables named after one entity."""
    tables = []
    for i in range(count):
        columns = cols("id:INTEGER", f"part_{(i + 1) % count:04d}_id:INTEGER", "label:TEXT")
        keys = [ForeignKey([columns[1].name], f"part_{(i + 1) % count:04d}", ["id"])]
        tables.append(Table(f"part_{i:04d}", columns, primary_key=["id"], foreign_keys=keys))
    return catalog(*tables)


@pytest.mark.slow  # a timing ratio at 500 and 2,000 tables: CI runs it on its own (.ci/run), beside fewer tests
def test_candidate_joins_stay_linear_when_thousands_of_tables_share_an_entity() -> None:
    # Every `part_NNNN_id` names the entity `part` that all tables share: each declared column was once matched
    # against every table (2.6 s at 5,000 tables, most of a cached start). Declared columns are no guess's
    # source, so the work is linear; a ratio measured in the same run holds on a busy machine.
    # The garbage collector is kept out of the timing: a worker that holds other tests' large objects spends
    # tenths of a second in one full collection (seen: 0.42 s against 0.012 s), and the best of three is taken.
    small, large = _numbered(500), _numbered(2000)
    timings = []
    for c in (small, large):
        best = float("inf")
        for _ in range(3):
            gc.collect()
            gc.disable()
            try:
                started = time.thread_time()  # this thread's CPU: a worker's background threads are not counted
                assert candidate_joins(c) == []  # the declared keys are the joins
                best = min(best, time.thread_time() - started)
            finally:
                gc.enable()
        timings.append(best)
    assert timings[1] < 8 * max(timings[0], 0.005)
