"""The thesaurus: WordNet's nouns read in place, the table-name words it relates to a question's words, and
tables it may keep but never flag; words of a table name's family, found by their stem."""

from __future__ import annotations

from pathlib import Path

from fixtures.wordnet import wordnet
from sophrosyne.directives import DirectiveSettings, decide_directives, score_tables
from sophrosyne.directives.thesaurus import WORDNET, in_schema_words, load_thesaurus, schema_synonyms, word_families
from sophrosyne.index import SchemaIndex
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.schema.catalog import Catalog, Column, Table


def makers() -> Catalog:
    tables = [
        Table("maker", [Column("Maker_ID", "INTEGER"), Column("Name", "TEXT"), Column("Country", "TEXT")]),
        Table("dealer", [Column("Dealer_ID", "INTEGER"), Column("Maker_ID", "INTEGER"), Column("City", "TEXT")]),
        Table("engine", [Column("Engine_ID", "INTEGER"), Column("Power", "REAL")]),
        Table("warehouse", [Column("Warehouse_ID", "INTEGER"), Column("Capacity", "REAL")]),
    ]
    return Catalog(tables={t.name: t for t in tables})


def test_every_noun_of_the_index_is_found_by_bisection() -> None:
    thesaurus = wordnet()
    lines = (WORDNET / "index.noun").read_text(encoding="utf-8").splitlines()
    lemmas = [line.split(" ", 1)[0] for line in lines if not line.startswith(" ")]
    assert len(lemmas) > 100_000
    assert [w for w in lemmas[::37] if thesaurus.senses(w) == 0] == []
    assert thesaurus.senses("xqzvnotaword") == 0


def test_plural_and_irregular_forms_find_their_noun() -> None:
    thesaurus = wordnet()
    assert thesaurus.lemma("universities") == "university"
    assert thesaurus.lemma("manufacturers") == "manufacturer"
    assert thesaurus.lemma("children") == "child"  # noun.exc
    assert thesaurus.lemma("academic session") == "academic_session"
    assert thesaurus.lemma("qwxz") is None


def test_related_nouns_are_synonyms_and_one_step_up_or_down() -> None:
    thesaurus = wordnet()
    assert "maker" in thesaurus.related("manufacturers", 1)  # the same sense
    assert "semester" in thesaurus.related("academic session", 1)  # one step more specific
    assert "doctor" in thesaurus.related("veterinarian", 1)  # one step more general
    assert "manufacturer" not in thesaurus.related("manufacturer", 1)
    assert thesaurus.mostly_noun("vessels", "vessel")
    assert not thesaurus.mostly_noun("quarterly", "quarterly")  # an adjective and adverb before a noun


def test_question_words_are_related_to_table_name_words_only() -> None:
    lexicon = lexicon_for(makers())
    related = schema_synonyms("Which manufacturers are in each nation?", lexicon, wordnet(), 1, 3)
    # `country` is a column's word, not a table's: only table names are read, so "nation" relates to nothing.
    assert related == {"manufacturers": ["maker"]}
    assert in_schema_words("Which manufacturers are in each nation?", related) == ["nation", "maker"]
    # A word the schema has already is not looked up again.
    assert schema_synonyms("Which maker has the most dealers?", lexicon, wordnet(), 1, 3) == {}


def test_a_table_named_by_a_related_word_is_kept_never_flagged() -> None:
    wordnet()
    catalog = makers()
    index = SchemaIndex.build(catalog)
    question = "How many manufacturers are there?"
    strict = DirectiveSettings(threshold=0.999, question_threshold=0.999, keep_best=False)
    kept = decide_directives(score_tables(question, "", catalog, index, settings=strict), strict)
    assert not kept.abstained and kept.relevant == ["maker"]
    assert set(kept.flagged) == {"engine", "warehouse", "dealer"}
    # Without the thesaurus no word of the question is the schema's: it says nothing.
    without = DirectiveSettings(threshold=0.999, question_threshold=0.999, keep_best=False, thesaurus=False)
    assert decide_directives(score_tables(question, "", catalog, index, settings=without), without).abstained


def test_no_thesaurus_where_wordnet_is_not_installed(tmp_path: Path) -> None:
    assert load_thesaurus(tmp_path) is None


def test_a_related_noun_with_of_is_read_by_the_noun_it_opens_with() -> None:
    catalog = Catalog(tables={"course": Table("course", [Column("Title", "TEXT")]), "study": Table("study", [])})
    # "curriculum" is "course of study" in WordNet: a course, not a study.
    assert schema_synonyms("Which curriculum is longest?", lexicon_for(catalog), wordnet(), 1, 3) == {
        "curriculum": ["course"]
    }


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
    assert word_families(question, lexicon) == {"followers": ["follow"], "liked": ["like"]}
    assert word_families("How many participators are there?", lexicon) == {"participators": ["participant"]}
    # Words the table names have already ("participants", "venues" as `venue`) are not looked up again.
    assert word_families("Which venues host the most participants?", lexicon) == {}


def test_a_table_named_by_a_word_of_its_family_is_kept_never_flagged() -> None:
    catalog = social()
    index = SchemaIndex.build(catalog)
    strict = DirectiveSettings(threshold=0.999, question_threshold=0.999, keep_best=False, thesaurus=False)
    kept = decide_directives(score_tables("How many followers?", "", catalog, index, settings=strict), strict)
    assert not kept.abstained and kept.relevant == ["follows"]
    assert set(kept.flagged) == {"Likes", "Participants", "Person", "venue"}
