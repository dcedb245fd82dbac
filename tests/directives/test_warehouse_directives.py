"""Directives on warehouse-like schemas: literals in any form, abbreviations and synonyms, twins and shards as
units, long knowledge documents read by passage, and a bounded rendering surest first."""

from __future__ import annotations

import json
from pathlib import Path

from sophrosyne.base.names import spelled_out
from sophrosyne.bench.data.files import catalog_from_spider
from sophrosyne.directives import Directives, DirectiveSettings, TableDirective, compute_directives, decide_directives
from sophrosyne.directives.knowledge import passages, relevant_passages
from sophrosyne.directives.prepared import prepare_schema
from sophrosyne.directives.question import Question
from sophrosyne.directives.scoring import score_tables, synonyms
from sophrosyne.directives.units import fold_units, shard_skeleton, tie_twins, twin_key
from sophrosyne.index import SchemaIndex, ValueIndex
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.index.values import value_form
from sophrosyne.schema.catalog import Catalog, Column, Table


def catalog(*tables: Table) -> Catalog:
    return Catalog(tables={t.name: t for t in tables})


def text_columns(*names: str) -> list[Column]:
    return [Column(n, "TEXT") for n in names]


# -- item 2: literals robust to form ---------------------------------------------------------------------------


def test_value_forms_fold_case_plurals_punctuation_numbers_and_dates() -> None:
    assert value_form("Labradors") == value_form("labrador")
    assert value_form("New-York") == value_form("new  york") == value_form("NewYork")
    assert value_form("1,000.0") == value_form("1000")
    dates = ("January 7, 2021", "7 Jan 2021", "01/07/2021", "2021/1/7", "2021-01-07 00:00:00")
    assert {value_form(d) for d in dates} == {"2021-01-07"}
    assert value_form("Labrador") != value_form("Poodle")


def test_a_literal_in_another_form_is_grounded_in_its_table() -> None:
    c = catalog(
        Table("breeds", text_columns("breed_name", "origin")),
        Table("owners", text_columns("owner_name", "city")),
        Table("visits", text_columns("visit_date", "reason")),
        Table("invoices", text_columns("invoice_total", "paid_on")),
        Table("staff", text_columns("staff_name", "shift")),
        Table("rooms", text_columns("room_label", "floor")),
    )
    data = {("breeds", "breed_name"): ["Labrador", "Poodle"], ("visits", "visit_date"): ["2021-01-07"]}
    values = ValueIndex.build(c, lambda t, col, n: data.get((t, col), []))
    assert values.lookup("Labradors") == [("breeds", "breed_name")]
    assert values.lookup("Jan 7, 2021") == [("visits", "visit_date")]
    assert values.lookup("Labradors", forms=False) == []
    scores = score_tables("How many 'Labradors' are there?", None, c, SchemaIndex.build(c), values)
    assert [t for t, e in scores.board.items() if e.features.get("value")] == ["breeds"]
    assert scores.board["breeds"].values == ["Labradors"]
    assert scores.board["breeds"].reasons["value"] == "holds the value 'Labradors'"
    assert (
        "breeds"
        not in compute_directives("How many 'Labradors' are there?", None, c, SchemaIndex.build(c), values).flagged
    )


# -- item 3: vocabulary gaps ---------------------------------------------------------------------------------------


def test_abbreviations_are_spelled_out_for_search_and_names() -> None:
    assert spelled_out("order_qty") == "order quantity"
    assert spelled_out("ship_dt") == "ship date"
    assert spelled_out("customer_name") == ""
    c = catalog(
        Table("sales", [Column("sale_id", "INTEGER"), Column("order_qty", "INTEGER"), Column("unit_amt", "REAL")]),
        Table("staff", text_columns("staff_name", "role")),
        Table("stores", text_columns("store_name", "region")),
        Table("shifts", text_columns("shift_start", "shift_end")),
        Table("holidays", text_columns("holiday_name", "holiday_date")),
    )
    assert ("sales", "order_qty") in lexicon_for(c).columns["order quantity"]
    directives = compute_directives("What is the total order quantity?", None, c, SchemaIndex.build(c))
    assert "sales" in directives.relevant and "holidays" in directives.flagged


def test_question_words_the_schema_lacks_find_their_nearest_schema_word() -> None:
    c = catalog(
        Table("employees", text_columns("employee_name", "manager", "hire_date")),
        Table("movies", text_columns("movie_title", "release_year")),
        Table("venues", text_columns("venue_name", "capacity")),
    )
    index = SchemaIndex.build(c)
    # "films" -> movie; "released" (not stemmed to the schema's "release") -> release.
    assert synonyms(Question.read("Which films were released in 1999?"), lexicon_for(c), index, 0.45) == {
        "film": "movie",
        "released": "release",
    }
    assert (
        synonyms(Question.read("Which venue is largest?"), lexicon_for(c), index, 0.45) == {}
    )  # its words are the schema's
    assert "movie" not in synonyms(Question.read("Who is the supervisor of Ann?"), lexicon_for(c), index, 0.45)


# -- item 4: twins and shards ---------------------------------------------------------------------------------------


def test_date_shards_fold_into_one_unit_named_by_its_pattern() -> None:
    assert shard_skeleton("ds.ga_sessions_20170801") == "ds.ga_sessions_#"
    assert shard_skeleton("bls_qcew.2000_q1") == "bls_qcew.#_q#"
    assert shard_skeleton("census_2018_5yr") == "census_#_5yr"  # 5yr and 1yr are different data
    assert shard_skeleton("customers") is None
    shards = [Table(f"ga_sessions_2017080{d}", text_columns("visitId", "date", "totals.hits")) for d in (1, 2, 3)]
    c = catalog(*shards, Table("products", text_columns("sku", "name")), Table("team1", text_columns("a")))
    units = fold_units(c)
    assert len(units.catalog.tables) == 3  # the group, products, team1 (one numbered table is no group)
    (rep,) = [r for r in units.labels]
    assert units.labels[rep] == "ga_sessions_* (3 tables)"
    assert units.members[rep] == sorted(t.name for t in shards)
    assert units.unit_of()["ga_sessions_20170802"] == "ga_sessions_* (3 tables)"


def test_twins_are_kept_together_unless_the_question_tells_them_apart() -> None:
    assert twin_key("sales.all_sessions_raw") == ("sales.all_sessions", "raw")
    assert twin_key("orders_v2") == ("orders", "v2")
    assert twin_key("order_items") is None
    c = catalog(
        Table("orders", text_columns("id", "total", "placed_at")),
        Table("orders_clean", text_columns("id", "total", "placed_at")),
        Table("orders_v2", text_columns("id", "total", "placed_at", "channel")),
        Table("customers", text_columns("id", "name")),
    )
    units = fold_units(c)
    assert units.twins == [["orders", "orders_clean", "orders_v2"]]
    assert tie_twins({"orders"}, units, "total of orders") == {"orders", "orders_clean", "orders_v2"}
    assert tie_twins({"orders"}, units, "total of the clean orders") == {"orders", "orders_clean"}
    assert tie_twins({"customers"}, units, "names") == {"customers"}  # flagged together


def test_a_flagged_shard_group_is_one_directive_that_covers_every_member() -> None:
    shards = [Table(f"events_2020110{d}", text_columns("event_name", "user_id")) for d in (1, 2, 3, 4)]
    c = catalog(*shards, Table("customers", text_columns("customer_name", "city", "email")))
    c.tables["orders"] = Table("orders", text_columns("order_total", "customer_name"))
    prepared = prepare_schema(c)
    index = SchemaIndex.build(prepared.catalog)
    directives = compute_directives(
        "Which city has customers with the largest order total?", None, prepared.catalog, index, units=prepared.units
    )
    (group,) = [d for d in directives.irrelevant if d.members]
    assert group.table == "events_* (4 tables)" and set(group.members) == {t.name for t in shards}
    assert {t.name for t in shards} <= set(directives.flagged)


# -- item 5: long knowledge documents ------------------------------------------------------------------------------


def test_a_long_document_is_cut_into_passages_led_by_their_heading() -> None:
    filler = "\n\n".join(
        f"Paragraph {i} explains unrelated matters of style and spelling at length." for i in range(30)
    )
    document = f"# Guide\n\n{filler}\n\n## Shipping\n\nThe shipping fee is stored in `ship_fee_amt` per parcel.\n"
    parts = passages(document)
    assert len(parts) > 3 and all(len(p) <= 700 for p in parts)
    assert any(p.startswith("Shipping\n") and "ship_fee_amt" in p for p in parts)
    chosen = relevant_passages(Question.read("What was the average shipping fee per parcel?").content, document, keep=1)
    assert chosen == [next(p for p in parts if "ship_fee_amt" in p)]


def test_only_the_relevant_passages_of_a_long_document_name_tables() -> None:
    c = catalog(
        Table("parcels", [Column("parcel_id", "INTEGER"), Column("ship_fee_amt", "REAL")]),
        Table("couriers", text_columns("courier_name", "depot")),
        Table("complaints", text_columns("complaint_text", "opened_on")),
        Table("depots", text_columns("depot_name", "address")),
    )
    sections = [
        f"## Report {i}\n\nThe `courier_name` and `depot_name` columns appear in report {i}, which lists every "
        "courier by depot, with the opening hours of each depot and the name of its manager."
        for i in range(12)
    ]
    document = "# Manual\n\n" + "\n\n".join(sections) + "\n\n## Fees\n\nShipping fees are `ship_fee_amt`.\n"
    assert len(document) > 1500
    index = SchemaIndex.build(c)
    focused = compute_directives("What is the average shipping fee?", document, c, index)
    assert "parcels" in focused.relevant and "complaints" in focused.flagged


# -- item 7: what the agent is shown ----------------------------------------------------------------------------


def test_rendering_is_bounded_and_surest_first() -> None:
    irrelevant = [TableDirective(f"table_{i:03}", "nothing points to it", "high", 0.9 - i / 1000) for i in range(400)]
    text = Directives(irrelevant, ["kept"]).render(max_chars=2000)
    lines = text.splitlines()
    assert len(text) <= 2000 and lines[1].startswith("- table_000")
    assert lines[-1].startswith("(") and "more likely irrelevant tables" in lines[-1]


def test_a_name_the_question_writes_is_not_explained_by_a_word_related_to_it() -> None:
    """ "Data Structures" is a course's title: WordNet relates "structures" to buildings and organisations, and
    that must not make the title a word the schema explains, so the course table (whose rows the index could not
    read: schema only) stays a home for it."""
    tables = Path(__file__).parents[1] / "fixtures" / "warehouse" / "tables.json"
    catalog = catalog_from_spider(json.loads(tables.read_text())[0])
    index = SchemaIndex.build(catalog)
    settings = DirectiveSettings()
    scored = score_tables("How many students received an A in Data Structures?", "", catalog, index, None, settings)
    assert "Data Structures" in scored.account.unexplained_names or "structures" in scored.account.unexplained
    assert "DIM_CRSE" not in decide_directives(scored, settings).flagged
    # Written in lower case, "structures" is a word related to the schema's as before.
    plain = score_tables("how many buildings are structures", "", catalog, index, None, settings)
    assert "structures" not in plain.account.unexplained
