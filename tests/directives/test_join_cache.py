"""The inferred joins saved beside the indexes: reused on the same schema, inferred again on a changed one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sophrosyne.directives.prepared import complete_joins, prepare_schema
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.schema.join_checks import JoinInference


class Data:
    """Sample and probe over fixed columns, counting the reads (a reused inference reads nothing)."""

    def __init__(self) -> None:
        self.reads = 0
        self.columns: dict[tuple[str, str], list[Any]] = {
            ("orders", "customer_id"): [1, 2, 3],
            ("orders", "product_id"): [7, 8],
            ("customers", "id"): [1, 2, 3, 4],
            ("products", "id"): [7, 8, 9],
        }

    def sample(self, table: str, column: str, limit: int) -> list[Any]:
        self.reads += 1
        return self.columns.get((table, column), [])[:limit]

    def probe(self, table: str, column: str, values: list[Any]) -> set[Any]:
        self.reads += 1
        return set(values) & set(self.columns.get((table, column), []))


def shop(*extra: Table, declared: bool = False, order_type: str = "INTEGER") -> Catalog:
    keys = [ForeignKey(["customer_id"], "customers", ["id"])] if declared else []
    orders = Table(
        "orders",
        [Column("order_id", "INTEGER"), Column("customer_id", order_type), Column("amount", "REAL")],
        foreign_keys=keys,
    )
    customers = Table("customers", [Column("id", "INTEGER", primary_key=True), Column("name", "TEXT")])
    return Catalog(tables={t.name: t for t in (orders, customers, *extra)})


def joined(joins: JoinInference) -> set[tuple[str, str, str]]:
    return {(j.table, j.columns[0], j.ref_table) for j in joins.joins}


def prepare(catalog: Catalog, data: Data, cache: Path) -> JoinInference:
    return prepare_schema(catalog, data.sample, data.probe, cache_dir=cache).joins


def test_the_same_schema_reuses_the_saved_joins_without_reading_values(tmp_path: Path) -> None:
    data = Data()
    first = prepare(shop(), data, tmp_path)
    assert joined(first) == {("orders", "customer_id", "customers")} and first.confirmed == 1
    assert data.reads > 0
    data.reads = 0
    again = prepare(shop(), data, tmp_path)
    assert data.reads == 0
    assert again == first
    assert prepare_schema(shop(), data.sample, data.probe, cache_dir=tmp_path).catalog.tables["orders"].foreign_keys


def test_a_changed_schema_never_reuses_stale_joins(tmp_path: Path) -> None:
    data = Data()
    prepare(shop(), data, tmp_path)
    products = Table("products", [Column("id", "INTEGER", primary_key=True), Column("title", "TEXT")])
    # A table added: orders.product_id now has a table to point at (and the column was added too).
    with_column = shop()
    with_column.tables["orders"].columns.append(Column("product_id", "INTEGER"))
    assert ("orders", "product_id", "products") not in joined(prepare(with_column, data, tmp_path))
    grown = shop(products)
    grown.tables["orders"].columns.append(Column("product_id", "INTEGER"))
    assert ("orders", "product_id", "products") in joined(prepare(grown, data, tmp_path))
    # A key declared: the pair it joins is no longer guessed.
    assert joined(prepare(shop(declared=True), data, tmp_path)) == set()
    # A type changed so that the columns no longer fit a join.
    assert joined(prepare(shop(order_type="DATE"), data, tmp_path)) == set()
    # And the first schema still finds its own entry.
    data.reads = 0
    assert joined(prepare(shop(), data, tmp_path)) == {("orders", "customer_id", "customers")}
    assert data.reads == 0


def test_names_only_and_checked_inference_are_kept_apart(tmp_path: Path) -> None:
    data = Data()
    names_only = prepare_schema(shop(), cache_dir=tmp_path).joins
    assert names_only.unchecked == 1 and names_only.confirmed == 0
    checked = prepare(shop(), data, tmp_path)
    assert checked.confirmed == 1 and data.reads > 0


def test_an_inference_cut_by_its_budget_is_saved_and_completed_later_not_redone(tmp_path: Path) -> None:
    data = Data()
    cut = prepare_schema(shop(), data.sample, data.probe, budget_s=-1.0, cache_dir=tmp_path).joins
    assert not cut.complete and cut.unchecked == 1 and cut.pending == [0] and data.reads == 0
    # The next start reads the cut inference as it was saved: no candidate found again, no value read.
    again = prepare(shop(), data, tmp_path)
    assert again == cut and data.reads == 0
    # Completed later (after a first answer, or by `sophrosyne index`), and saved for the start after.
    done = complete_joins(shop(), data.sample, data.probe, tmp_path)
    assert done.complete and done.confirmed == 1 and data.reads == 2
    data.reads = 0
    assert prepare(shop(), data, tmp_path) == done and data.reads == 0


def test_a_completion_the_database_stopped_saves_nothing_it_did_not_check(tmp_path: Path) -> None:
    data = Data()
    prepare_schema(shop(), data.sample, data.probe, budget_s=-1.0, cache_dir=tmp_path)
    stopped = complete_joins(shop(), data.sample, data.probe, tmp_path, stop=lambda: True)
    assert not stopped.complete and data.reads == 0
    assert prepare(shop(), data, tmp_path).pending == [0]


def test_a_damaged_entry_is_redone(tmp_path: Path) -> None:
    data = Data()
    prepare(shop(), data, tmp_path)
    (entry,) = (tmp_path / "joins").glob("*.json")
    saved = json.loads(entry.read_text())
    assert saved["confirmed"] == 1 and saved["pending"] == []
    # Not JSON; JSON of another shape; a pending candidate that is not one of the saved joins.
    for damaged in ("{not json", "[1, 2]", json.dumps({**saved, "pending": [5]}), json.dumps({**saved, "joins": 1})):
        entry.write_text(damaged)
        data.reads = 0
        assert joined(prepare(shop(), data, tmp_path)) == {("orders", "customer_id", "customers")}
        assert data.reads > 0
        assert json.loads(entry.read_text())["confirmed"] == 1
