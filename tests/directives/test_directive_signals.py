"""Signals of directives on warehouse-like schemas: a shard named by the question's date or release, a table
named in another spelling of its words; a long question held to a lower threshold; a question answered
within the schema of its best table or the schemas it names."""

from __future__ import annotations

import pytest

from sophrosyne.directives import (
    DirectiveSettings,
    TableScores,
    compute_directives,
    decide_directives,
    keep_threshold,
    score_tables,
)
from sophrosyne.directives.knowledge import capitalised_phrases, listed_names
from sophrosyne.directives.prepared import prepare_schema
from sophrosyne.directives.units import fold_units, question_numbers, shards_named, varying_digits
from sophrosyne.index import SchemaIndex
from sophrosyne.index.values import ValueIndex
from sophrosyne.schema.catalog import Catalog, Column, Table


def catalog(*tables: Table) -> Catalog:
    return Catalog(tables={t.name: t for t in tables})


def text_columns(*names: str) -> list[Column]:
    return [Column(n, "TEXT") for n in names]


def test_the_digits_that_tell_shards_apart_and_the_numbers_a_question_writes() -> None:
    assert varying_digits("ds.events_202204") == {"202204"}
    assert varying_digits("gsod2015") == {"2015"}
    assert varying_digits("zip_codes_2015_5yr") == {"2015"}  # `5yr` is no shard number
    assert varying_digits("rnaseq_2017_02") == {"2017", "2", "201702"}
    assert varying_digits("clinical_r39") == {"39"}
    assert question_numbers("Which repos in April 2022, on July 15, 2015, in Release 23?") == {
        "2022",
        "202204",
        "15",
        "2015",
        "201507",
        "23",
    }
    assert question_numbers("the 3 largest") == set()  # one digit names no shard


def test_a_question_date_names_the_shard_group_holding_it() -> None:
    weather = [Table(f"gsod{y}", text_columns("stn", "temp", "prcp")) for y in (2014, 2015, 2016)]
    trips = [Table(f"trips_{y}", text_columns("trip_id", "duration")) for y in (2019, 2020, 2021)]
    c = catalog(*weather, *trips, Table("stations", text_columns("usaf", "name")))
    units = fold_units(c)
    assert shards_named(question_numbers("What was the hottest day of 2015?"), units) == [
        "gsod2016"
    ]  # the widest stands for all
    assert shards_named(question_numbers("How many in 2020 and in 2015?"), units) == ["gsod2016", "trips_2021"]
    assert shards_named(question_numbers("How many stations?"), units) == []
    prepared = prepare_schema(c)
    index = SchemaIndex.build(prepared.catalog)
    scored = score_tables("Which day of 2015 was hottest?", None, prepared.catalog, index, units=prepared.units)
    assert scored.board["gsod2016"].features["value_mention"] == 1.0
    assert "value_mention" not in scored.board["trips_2021"].features
    unscored = score_tables("Which day of 2015 was hottest?", None, prepared.catalog, index)
    assert "value_mention" not in unscored.board["gsod2016"].features
    # The date is a value of the question the group holds: never flagged, whatever the model says of it.
    assert scored.board["gsod2016"].values == ["2015"]
    scored.board["gsod2016"].score = 0.0
    strict = DirectiveSettings(threshold=0.99, question_threshold=0.99)
    assert "gsod2016" in decide_directives(scored, strict, prepared.units).relevant


def test_a_capitalised_title_is_read_whole_across_its_small_words() -> None:
    question = "How many awards did Gone with the Wind win, and who wrote Of Mice and Men?"
    assert capitalised_phrases(question) == ["Gone with the Wind", "Of Mice and Men"]
    assert listed_names("Gone with the Wind") == []
    assert listed_names("Masters and Bachelors") == ["Masters", "Bachelors"]


def test_a_list_of_names_that_is_no_value_is_looked_up_name_by_name() -> None:
    c = catalog(
        Table("degree_programs", text_columns("degree_program_id", "degree_summary_name")),
        Table("enrolment", text_columns("student_id", "degree_program_id", "semester_id")),
        Table("semesters", text_columns("semester_id", "semester_name")),
    )
    rows = {"degree_programs": {"degree_summary_name": ["Master", "Bachelor", "PHD"]}}
    values = ValueIndex.build(c, lambda t, col, limit: rows.get(t, {}).get(col, []))
    question = "Which semester had both Masters and Bachelors students enrolled?"
    scored = score_tables(question, None, c, SchemaIndex.build(c), values)
    assert scored.board["degree_programs"].values == ["Masters", "Bachelors"]
    strict = DirectiveSettings(threshold=0.99, question_threshold=0.99)
    assert "degree_programs" in decide_directives(scored, strict).relevant


def test_a_table_is_named_whatever_the_spacing_of_its_words() -> None:
    c = catalog(
        Table("PROD.CYTOBANDS_HG38", text_columns("chromosome", "cytoband_name", "hg38_start")),
        Table("PROD.GENES", text_columns("gene_name", "chromosome")),
        Table("PROD.SAMPLES", text_columns("sample_id", "tissue")),
        Table("PROD.DRUGS", text_columns("drug_name", "target")),
    )
    index = SchemaIndex.build(c)
    scored = score_tables("Merge the segments with the bands in 'CytoBands_hg38'.", None, c, index)
    assert scored.board["PROD.CYTOBANDS_HG38"].features.get("table_named") == 1.0
    assert not scored.board["PROD.GENES"].features.get("table_named")
    directives = compute_directives("Merge the segments with the bands in 'CytoBands_hg38'.", None, c, index)
    assert "PROD.CYTOBANDS_HG38" in directives.relevant


def test_a_long_question_is_held_to_a_lower_threshold() -> None:
    c = catalog(*(Table(f"t{i}", text_columns(f"col{i}", "name")) for i in range(4)))
    index = SchemaIndex.build(c)
    settings = DirectiveSettings(threshold=0.2, question_threshold=0.2, long_question_words=12)
    usual = score_tables("Which name is longest?", "longest refers to max(length(name))", c, index)
    assert keep_threshold(usual, settings) == 0.2
    words = " ".join(f"alpha{i} beta{i} gamma{i}" for i in range(8))  # 24 content words
    long = score_tables(f"Which name matches {words}?", None, c, index)
    assert long.question_words >= 24
    assert keep_threshold(long, settings) == pytest.approx(0.2 * 12 / long.question_words)


def scores_over(c: Catalog, question: str, scores: dict[str, float]) -> TableScores:
    scored = score_tables(question, None, c, SchemaIndex.build(c))
    for table, entry in scored.board.items():
        entry.score = scores[table]
    return scored


def test_tables_of_the_best_tables_schema_or_of_a_schema_the_question_names_are_kept_lower() -> None:
    c = Catalog(
        tables={
            name: Table(name, text_columns("id", "label"), schema=name.rsplit(".", 1)[0])
            for name in ("sales.orders", "sales.customers", "human_resources.staff", "human_resources.shifts")
        }
    )
    scores = {
        "sales.orders": 0.9,
        "sales.customers": 0.12,
        "human_resources.staff": 0.12,
        "human_resources.shifts": 0.01,
    }
    settings = DirectiveSettings(threshold=0.2, question_threshold=0.2, home_schema_share=0.5)
    plain = decide_directives(scores_over(c, "Which orders are late?", scores), settings)
    assert plain.relevant == ["sales.customers", "sales.orders"]
    named = scores_over(c, "Which orders did human resources staff place?", scores)
    assert named.named_schemas == {"human_resources"}
    assert decide_directives(named, settings).relevant == ["human_resources.staff", "sales.customers", "sales.orders"]
    one_schema = catalog(*(Table(n.split(".")[1], text_columns("id", "label")) for n in scores))
    assert not score_tables("Which orders?", None, one_schema, SchemaIndex.build(one_schema)).schemas
