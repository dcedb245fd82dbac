"""The thesaurus: WordNet's nouns from the package's own data file (the same on every install), the table-name
words it relates to a question's words, and tables it may keep but never flag; words of a table name's family,
found by their stem."""

from __future__ import annotations

import gzip
import runpy
import tomllib
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path

import pytest

from fixtures.wordnet import debian_wordnet
from sophrosyne.directives import DirectiveSettings, Question, decide_directives, score_tables, scoring
from sophrosyne.directives.thesaurus import (
    DATA_FILE,
    SECTION,
    homeless_kin,
    in_schema_words,
    load_thesaurus,
    schema_synonyms,
    word_families,
)
from sophrosyne.index import SchemaIndex
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.schema.catalog import Catalog, Column, Table

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = resources.files("sophrosyne.directives").joinpath(DATA_FILE)


def makers() -> Catalog:
    tables = [
        Table("maker", [Column("Maker_ID", "INTEGER"), Column("Name", "TEXT"), Column("Country", "TEXT")]),
        Table("dealer", [Column("Dealer_ID", "INTEGER"), Column("Maker_ID", "INTEGER"), Column("City", "TEXT")]),
        Table("engine", [Column("Engine_ID", "INTEGER"), Column("Power", "REAL")]),
        Table("warehouse", [Column("Warehouse_ID", "INTEGER"), Column("Capacity", "REAL")]),
    ]
    return Catalog(tables={t.name: t for t in tables})


def test_every_noun_of_wordnet_has_its_senses_in_the_shipped_data() -> None:
    thesaurus = load_thesaurus()
    lines = (debian_wordnet() / "index.noun").read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if not line.startswith(" ")]
    assert len(entries) > 100_000
    # index.noun: lemma, pos, synset count, ...; each lemma is found by bisection with as many senses.
    sample = [line.split() for line in entries[::37]]
    assert [e[0] for e in sample if thesaurus.senses(e[0]) != int(e[2])] == []
    assert thesaurus.senses("xqzvnotaword") == 0


@pytest.mark.slow
def test_the_shipped_data_is_what_the_script_builds_from_wordnet() -> None:
    # About a second: the whole of WordNet's noun files parsed again (.ci/run runs it with `-m slow`).
    build = runpy.run_path(str(ROOT / "scripts" / "build_lexicon_data.py"))["build"]
    rebuilt = build(debian_wordnet())
    assert rebuilt == gzip.decompress(SHIPPED.read_bytes()), "rerun scripts/build_lexicon_data.py and commit"


def test_the_shipped_data_is_small_carries_wordnets_licence_and_is_in_the_wheel() -> None:
    assert len(SHIPPED.read_bytes()) < 3 * 1024 * 1024
    with SHIPPED.open("rb") as file, gzip.open(file) as data:
        licence = data.read(4096).split(SECTION, 1)[0].decode("utf-8")
    notice = resources.files("sophrosyne.directives").joinpath("WORDNET_LICENSE").read_text(encoding="utf-8")
    assert "WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved." in licence
    assert notice.split("WordNet Release 3.0\n\n", 1)[1].strip() in licence
    # hatch puts every file of the package folder in the wheel unless excluded or git-ignored.
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/sophrosyne"]
    assert not {"exclude", "only-include", "artifacts"} & set(wheel)
    ignored = (ROOT / ".gitignore").read_text().split()
    assert [p for p in ignored if fnmatch(DATA_FILE, p) or fnmatch("WORDNET_LICENSE", p)] == []


def test_plural_and_irregular_forms_find_their_noun() -> None:
    thesaurus = load_thesaurus()
    assert thesaurus.lemma("universities") == "university"
    assert thesaurus.lemma("manufacturers") == "manufacturer"
    assert thesaurus.lemma("children") == "child"  # noun.exc
    assert thesaurus.lemma("academic session") == "academic_session"
    assert thesaurus.lemma("qwxz") is None


def test_related_nouns_are_synonyms_and_one_step_up_or_down() -> None:
    thesaurus = load_thesaurus()
    assert "maker" in thesaurus.related("manufacturers", 1)  # the same sense
    assert "semester" in thesaurus.related("academic session", 1)  # one step more specific
    assert "doctor" in thesaurus.related("veterinarian", 1)  # one step more general
    assert "manufacturer" not in thesaurus.related("manufacturer", 1)
    assert thesaurus.mostly_noun("vessels", "vessel")
    assert not thesaurus.mostly_noun("quarterly", "quarterly")  # an adjective and adverb before a noun


def test_question_words_are_related_to_table_name_words_only() -> None:
    lexicon = lexicon_for(makers())
    related = schema_synonyms(Question.read("Which manufacturers are in each nation?"), lexicon, load_thesaurus(), 1)
    # `country` is a column's word, not a table's: only table names are read, so "nation" relates to nothing.
    assert related == {"manufacturers": ["maker"]}
    assert in_schema_words(Question.read("Which manufacturers are in each nation?"), related) == ["nation", "maker"]
    # A word the schema has already is not looked up again.
    assert schema_synonyms(Question.read("Which maker has the most dealers?"), lexicon, load_thesaurus(), 1) == {}


def test_a_table_named_by_a_related_word_is_kept_never_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = makers()
    index = SchemaIndex.build(catalog)
    question = "How many manufacturers are there?"
    strict = DirectiveSettings(threshold=0.999, question_threshold=0.999)
    kept = decide_directives(score_tables(question, "", catalog, index, settings=strict), strict)
    assert not kept.abstained and kept.relevant == ["maker"]
    assert set(kept.flagged) == {"engine", "warehouse", "dealer"}
    # Without the thesaurus no word of the question is the schema's: it says nothing.
    monkeypatch.setattr(scoring, "schema_synonyms", lambda *args: {})
    assert decide_directives(score_tables(question, "", catalog, index, settings=strict), strict).abstained


def test_a_related_noun_with_of_is_read_by_the_noun_it_opens_with() -> None:
    catalog = Catalog(tables={"course": Table("course", [Column("Title", "TEXT")]), "study": Table("study", [])})
    # "curriculum" is "course of study" in WordNet: a course, not a study.
    assert schema_synonyms(
        Question.read("Which curriculum is longest?"), lexicon_for(catalog), load_thesaurus(), 1
    ) == {"curriculum": ["course"]}


def social() -> Catalog:
    tables = [
        Table("Person", [Column("name", "TEXT"), Column("age", "INTEGER")]),
        Table("Likes", [Column("student_id", "INTEGER"), Column("liked_id", "INTEGER")]),
        Table("follows", [Column("f1", "INTEGER"), Column("f2", "INTEGER")]),
        Table("Participants", [Column("participant_id", "INTEGER"), Column("details", "TEXT")]),
        Table("venue", [Column("venue_id", "INTEGER"), Column("city", "TEXT")]),
    ]
    return Catalog(tables={t.name: t for t in tables})


def test_a_question_word_of_a_table_names_family_is_related_to_it_without_wordnet() -> None:
    lexicon = lexicon_for(social())
    question = "Who has the most followers, and whom has each person liked?"
    assert word_families(Question.read(question), lexicon) == {"followers": ["follow"], "liked": ["like"]}
    assert word_families(Question.read("How many participators are there?"), lexicon) == {
        "participators": ["participant"]
    }
    # Words the table names have already ("participants", "venues" as `venue`) are not looked up again.
    assert word_families(Question.read("Which venues host the most participants?"), lexicon) == {}


def test_a_table_named_by_a_word_of_its_family_is_kept_never_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = social()
    index = SchemaIndex.build(catalog)
    monkeypatch.setattr(scoring, "schema_synonyms", lambda *args: {})  # families alone, WordNet aside
    strict = DirectiveSettings(threshold=0.999, question_threshold=0.999)
    kept = decide_directives(score_tables("How many followers?", "", catalog, index, settings=strict), strict)
    assert not kept.abstained and kept.relevant == ["follows"]
    assert set(kept.flagged) == {"Likes", "Participants", "Person", "venue"}


def test_a_table_named_by_a_rare_synonym_of_a_homeless_word_is_never_flagged() -> None:
    # "area" has no home in this schema; in WordNet's fourth sense of "area" (a field of study) it is a domain.
    tables = [
        Table("domain", [Column("did", "INTEGER"), Column("name", "TEXT")]),
        Table("organization", [Column("oid", "INTEGER"), Column("name", "TEXT")]),
        Table("journal", [Column("jid", "INTEGER"), Column("name", "TEXT")]),
        Table("cite", [Column("citing", "INTEGER"), Column("cited", "INTEGER")]),
    ]
    catalog = Catalog(tables={t.name: t for t in tables})
    assert "domain" in load_thesaurus().synonyms("area")
    assert homeless_kin(["area"], lexicon_for(catalog), load_thesaurus()) == {"area": ["domain"]}
    index = SchemaIndex.build(catalog)
    settings = DirectiveSettings(threshold=0.5, question_threshold=0.5)
    scored = score_tables("Which organizations and journals cite the area?", "", catalog, index, settings=settings)
    assert scored.board["domain"].score < 0.5 and scored.account.unexplained == ("area",)
    kept = decide_directives(scored, settings)
    assert not kept.abstained and "domain" not in kept.flagged and "organization" in kept.relevant
