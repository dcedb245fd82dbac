"""Pairs: a code/title dictionary table and its fact table are found from their names and code column, and
kept together."""

from __future__ import annotations

import pytest

from sophrosyne.directives import DirectiveSettings, compute_directives, decision, scoring
from sophrosyne.directives.pairs import dictionary_pairs, keep_pairs
from sophrosyne.index import SchemaIndex
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.schema.catalog import Catalog, Column, Table


def columns(*names: str) -> list[Column]:
    return [Column(n, "TEXT") for n in names]


def hospital() -> Catalog:
    tables = [
        Table("PATIENTS", columns("ROW_ID", "SUBJECT_ID", "GENDER", "DOB")),
        Table("ADMISSIONS", columns("ROW_ID", "SUBJECT_ID", "HADM_ID", "ADMITTIME")),
        Table("DIAGNOSES_ICD", columns("ROW_ID", "SUBJECT_ID", "HADM_ID", "ICD9_CODE")),
        Table("D_ICD_DIAGNOSES", columns("ROW_ID", "ICD9_CODE", "SHORT_TITLE", "LONG_TITLE")),
        Table("PROCEDURES_ICD", columns("ROW_ID", "SUBJECT_ID", "HADM_ID", "ICD9_CODE")),
        Table("D_ICD_PROCEDURES", columns("ROW_ID", "ICD9_CODE", "SHORT_TITLE", "LONG_TITLE")),
        # A dictionary-looking name with no code in common with `products` is no pair.
        Table("Ref_Products", columns("id", "name")),
        Table("Products", columns("id", "name", "price")),
    ]
    return Catalog(tables={t.name: t for t in tables})


def test_a_dictionary_pairs_with_the_fact_table_of_its_name_and_code() -> None:
    pairs = dictionary_pairs(lexicon_for(hospital()))
    assert sorted(pairs) == [("D_ICD_DIAGNOSES", "DIAGNOSES_ICD"), ("D_ICD_PROCEDURES", "PROCEDURES_ICD")]
    lexicon = lexicon_for(hospital())
    assert keep_pairs({"D_ICD_DIAGNOSES"}, lexicon) == {"D_ICD_DIAGNOSES", "DIAGNOSES_ICD"}
    assert keep_pairs({"PATIENTS"}, lexicon) == {"PATIENTS"}


def test_the_other_table_of_a_kept_pair_is_not_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = hospital()
    index = SchemaIndex.build(catalog)
    question = "How many rows of diagnoses_icd have an icd9_code?"
    monkeypatch.setattr(scoring, "schema_synonyms", lambda *args: {})  # the pair alone, WordNet aside
    strict = DirectiveSettings(threshold=0.999, question_threshold=0.999)
    kept = compute_directives(question, "", catalog, index, settings=strict)
    assert "DIAGNOSES_ICD" in kept.relevant and "D_ICD_DIAGNOSES" in kept.relevant
    # Without the pair rule the dictionary would be flagged.
    monkeypatch.setattr(decision, "keep_pairs", lambda relevant, lexicon: set(relevant))
    assert "D_ICD_DIAGNOSES" in compute_directives(question, "", catalog, index, settings=strict).flagged
