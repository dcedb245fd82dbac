"""Names as warehouses write them: each function of `base/names.py` over its fixture file of cases
(tests/fixtures/names/), and the rules of the abbreviation list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sophrosyne.base.names import (
    ABBREVIATIONS,
    ENGLISH_WORDS,
    abbreviates,
    added_words,
    schema_abbreviations,
    shortens,
    spelled_out,
)

CASES = Path(__file__).parents[1] / "fixtures" / "names"


def rows(name: str) -> list[list[str]]:
    lines = (CASES / name).read_text().splitlines()
    return [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize(("name", "expected"), rows("spelled.tsv"), ids=lambda v: v or "-")
def test_spelled_out(name: str, expected: str) -> None:
    assert spelled_out(name) == expected


@pytest.mark.parametrize(("form", "word", "expected"), rows("abbreviates.tsv"))
def test_abbreviates(form: str, word: str, expected: str) -> None:
    assert abbreviates(form, word) is (expected == "yes")


@pytest.mark.parametrize(("form", "word", "expected"), rows("shortens.tsv"))
def test_shortens(form: str, word: str, expected: str) -> None:
    assert shortens(form, word) is (expected == "yes")


TAUGHT = json.loads((CASES / "taught.json").read_text())


@pytest.mark.parametrize("case", TAUGHT, ids=[c["why"][:60] for c in TAUGHT])
def test_schema_abbreviations(case: dict[str, object]) -> None:
    tables = [(names, text) for names, text in case["tables"]]  # type: ignore[attr-defined]
    assert schema_abbreviations(tables) == case["expected"]


def test_taught_abbreviations_are_spelled_out_over_the_list() -> None:
    taught = {"spcl": "special", "dept": "depot"}
    assert spelled_out("SPCL_PROJ_KEY", taught) == "special project"
    assert spelled_out("DEPT_NAME", taught) == "depot name"  # the schema's word wins over the list's
    assert spelled_out("CUSTOMER", taught) == ""


def test_added_words_are_only_the_new_ones() -> None:
    assert added_words("DIM_DEPT") == "department"
    assert added_words("order_qty") == "quantity"
    assert added_words("ORDER_KEY") == ""  # setting `key` aside adds no word
    assert added_words("customers") == ""


def test_the_list_follows_its_rules() -> None:
    """Lower-case forms made of their expansion's letters in order from its first (`x` stands for "ans" of "trans"),
    none spelled as its own expansion."""
    assert len(ABBREVIATIONS) >= 150
    for form, expansion in ABBREVIATIONS.items():
        assert form.isalpha() and form.islower(), form
        plain = expansion.replace(" ", "")
        spellings = {plain, plain.replace("trans", "tx"), plain.replace("trans", "trx")}
        assert any(in_order(form, letters) for letters in spellings), (form, expansion)
        assert form != expansion


def in_order(form: str, letters: str) -> bool:
    rest = iter(letters[1:])
    return form[0] == letters[0] and all(c in rest for c in form[1:])


def test_english_words_come_with_the_package() -> None:
    """WordNet's words of 3 to 5 letters, shipped: the same on every install, with or without WordNet."""
    assert {"count", "organ", "north", "cat"} <= ENGLISH_WORDS
    assert not {"dept", "empl", "bldg", "fclt", "hier", "alloc"} & ENGLISH_WORDS
    assert len(ENGLISH_WORDS) > 9000
