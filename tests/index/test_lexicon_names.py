"""Warehouse names in the lexicon and the schema index: a question's "department" finds `DIM_DEPT`, over the
university warehouse of tests/fixtures/warehouse (upper-case abbreviated names, no keys, no descriptions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sophrosyne.bench.data.files import catalog_from_spider
from sophrosyne.index.lexicon import catalog_abbreviations, lexicon_for
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, Table

WAREHOUSE = Path(__file__).parents[1] / "fixtures" / "warehouse" / "tables.json"


@pytest.fixture(scope="module")
def warehouse() -> Catalog:
    return catalog_from_spider(json.loads(WAREHOUSE.read_text())[0])


@pytest.mark.parametrize(
    ("spelling", "table"),
    [
        ("department", "DIM_DEPT"),
        ("building", "DIM_BLDG"),
        ("employee", "DIM_EMPL"),
        ("facility", "DIM_FCLT"),
        ("student", "DIM_STDNT"),
        ("course", "DIM_CRSE"),
        ("enrollment", "FACT_ENRL"),
        ("organization unit hierarchy", "ORG_UNIT_HIER"),
        ("space allocation", "SPACE_ALLOC"),
        ("academic program", "DIM_ACAD_PGM"),
        ("purchase order", "FACT_PURCH_ORDER"),
        ("research grant", "STG_RESEARCH_GRANT"),
        ("dim dept", "DIM_DEPT"),  # the name as written still names it
    ],
)
def test_a_warehouse_table_is_named_as_a_question_says_it(warehouse: Catalog, spelling: str, table: str) -> None:
    assert lexicon_for(warehouse).phrase_tables[spelling] == [table]


def test_spelled_words_are_table_words_and_column_spellings(warehouse: Catalog) -> None:
    lexicon = lexicon_for(warehouse)
    assert {"department", "college", "employee"} <= lexicon.table_words["DIM_DEPT"]
    assert {"building", "facility", "labor", "hour", "material", "cost"} <= lexicon.table_words["FACT_WORK_ORDER"]
    assert {"department", "building", "employee", "hierarchy", "allocation"} <= lexicon.name_words
    assert ("DIM_EMPL", "EMPL_KEY") in lexicon.columns["employee"]
    assert ("FACT_GL_TXN", "TXN_AMT") in lexicon.columns["transaction amount"]
    assert ("FACT_DEGR_AWARD", "HONORS_FLG") in lexicon.columns["honor flag"]  # stemmed, as spellings are


def test_the_schema_index_searches_the_spelled_names(warehouse: Catalog) -> None:
    index = SchemaIndex.build(warehouse)
    assert (index.search("facility code", k=1)[0].table, index.search("facility code", k=1)[0].column) == (
        "DIM_FCLT",
        "FCLT_CD",
    )
    doc = next(d for d in index.docs if d.column == "DEPT_HEAD_EMPL_KEY")
    assert doc.name_text == "dim dept (department) dept head empl key (department employee)"


def test_what_the_schema_teaches_reaches_the_lexicon() -> None:
    """A form the list lacks, spelled out by a column of its own table (`SPCL` beside `SPECIAL_NAME`)."""
    c = Catalog(
        tables={
            "SPCL_PROJ": Table("SPCL_PROJ", [Column("SPCL_KEY", "INTEGER"), Column("SPECIAL_NAME", "TEXT")]),
            "STAFF": Table("STAFF", [Column("STAFF_ID", "INTEGER"), Column("SPCL_KEY", "INTEGER")]),
        }
    )
    assert catalog_abbreviations(c) == {"spcl": "special"}
    lexicon = lexicon_for(c)
    assert lexicon.phrase_tables["special project"] == ["SPCL_PROJ"]
    assert "special" in lexicon.table_words["STAFF"]
