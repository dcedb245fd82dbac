"""Accounting for the question: which words have a home, which tables the index could not read, where a name
may live; and what the decision does with it (no directives, unread homes kept, linking tables, tiers)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from sophrosyne.directives import DirectiveSettings, compute_directives, decide_directives, score_tables
from sophrosyne.directives.accounting import account, thing_words, unread_tables
from sophrosyne.directives.links import key_like, links
from sophrosyne.directives.question import Question
from sophrosyne.directives.thesaurus import load_thesaurus
from sophrosyne.index import SchemaIndex, ValueIndex
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table


def scholar(keys: bool = True) -> Catalog:
    """Papers, authors and the linking table between them, with a venue and an unrelated table."""

    def fk(column: str, table: str, ref: str) -> list[ForeignKey]:
        return [ForeignKey([column], table, [ref])] if keys else []

    tables = [
        Table("author", [Column("author_id", "INTEGER", primary_key=True), Column("author_name", "TEXT")]),
        Table(
            "paper",
            [
                Column("paper_id", "INTEGER"),
                Column("title", "TEXT"),
                Column("year", "INTEGER"),
                Column("venue_id", "INTEGER"),
            ],
            foreign_keys=fk("venue_id", "venue", "venue_id"),
        ),
        Table(
            "writes",
            [Column("paper_id", "INTEGER"), Column("author_id", "INTEGER")],
            foreign_keys=fk("paper_id", "paper", "paper_id") + fk("author_id", "author", "author_id"),
        ),
        Table("venue", [Column("venue_id", "INTEGER"), Column("venue_name", "TEXT")]),
        Table("county", [Column("county_id", "INTEGER"), Column("county_name", "TEXT"), Column("area", "REAL")]),
        Table("weather", [Column("day", "DATE"), Column("rain_mm", "REAL")]),
    ]
    return Catalog(tables={t.name: t for t in tables})


def values_of(catalog: Catalog, rows: dict[tuple[str, str], list[str]]) -> ValueIndex:
    def fetch(table: str, column: str, limit: int) -> Iterable[Any]:
        return rows.get((table, column), [])

    return ValueIndex.build(catalog, fetch)


@pytest.mark.parametrize(
    ("word", "names_a_thing"),
    [
        ("papers", True),  # mostly a noun
        ("texas", True),  # a proper noun WordNet knows
        ("pvldb", True),  # unknown to WordNet: a name or a code
        ("produced", False),  # a verb's past form
        ("youngest", False),  # an adjective's superlative (adj.exc)
        ("spoken", False),  # an irregular verb form (verb.exc)
        ("after", False),  # a preposition or adverb
        ("return", False),  # more senses as a verb than as a noun
    ],
)
def test_words_that_name_a_thing(word: str, names_a_thing: bool) -> None:
    test = thing_words(load_thesaurus())
    assert test is not None and test(word) is names_a_thing


def test_a_word_has_a_home_in_names_spellings_descriptions_and_what_was_explained() -> None:
    c = scholar()
    c.tables["venue"].columns[1].description = "the conference or journal"
    lexicon = lexicon_for(c)
    words = Question.read("papers by authors at a conference on topology after 2000")
    accounted = account(words, lexicon, c, None, {"topology"}, names_a_thing=thing_words(load_thesaurus()))
    assert "paper" in accounted.terms and "2000" not in accounted.terms  # numbers are no term
    assert accounted.unexplained == ()  # author(s) a name, conference a description, topology explained
    assert account(Question.read("zygote papers"), lexicon, c, None, explained=()).unexplained == ("zygote",)
    assert account(Question.read("zygote papers"), lexicon, c, None, explained=()).unexplained_share == 0.5


def test_unread_tables_are_those_with_text_columns_and_no_indexed_value() -> None:
    c = scholar()
    assert unread_tables(c, None) == {"author", "paper", "venue", "county"}  # weather has no text column
    values = values_of(c, {("author", "author_name"): ["Ras Bodik"], ("paper", "title"): ["Sketching"]})
    assert unread_tables(c, values) == {"venue", "county"}


def test_a_name_no_value_explains_lives_where_its_phrase_says() -> None:
    c = scholar()
    lexicon = lexicon_for(c)
    said = account(Question.read("papers in Alameda County"), lexicon, c, None, ())
    assert said.unexplained_names == ("alameda",)
    assert said.name_homes == {"county"} and said.homes_unread() == {"county"}
    silent = account(Question.read("papers by Jagadish"), lexicon, c, None, ())
    assert silent.name_homes is None  # the phrase says nothing: every unread table may hold it
    assert silent.homes_unread() == {"author", "paper", "venue", "county"}


def test_most_of_the_question_unexplained_gives_no_directives_naming_the_words() -> None:
    c = scholar()
    directives = compute_directives("Which papers of zorblats frobnicate quuxes?", None, c, SchemaIndex.build(c))
    assert directives.abstained and not directives.irrelevant
    assert "zorblats" in directives.note and "search_schema" in directives.note


def test_a_linking_table_is_kept_between_two_kept_tables_with_and_without_keys() -> None:
    for keys in (True, False):
        assert "writes" in links({"author", "paper"}, lexicon_for(scholar(keys))), keys
    assert "writes" not in links({"author", "venue"}, lexicon_for(scholar()))
    # Without keys and with no join inferred, a table of keys alone may join any two kept tables.
    assert "writes" in links({"author", "venue"}, lexicon_for(scholar(keys=False)))
    assert [key_like(n) for n in ("author_id", "DEPT_KEY", "ST_CD", "msid", "title", "idea")] == [
        True,
        True,
        True,
        True,
        False,
        False,
    ]


def test_tiers_and_reasons_come_from_the_decision() -> None:
    c = scholar()
    values = values_of(
        c,
        {
            ("author", "author_name"): ["Ras Bodik"],
            ("paper", "title"): ["Sketching"],
            ("venue", "venue_name"): ["PLDI"],
            ("county", "county_name"): ["Alameda"],
        },
    )
    scored = score_tables("Which papers did Ras Bodik write?", None, c, SchemaIndex.build(c), values)
    directives = decide_directives(scored, DirectiveSettings())
    assert {"author", "paper", "writes"} <= set(directives.relevant)
    for d in directives.irrelevant:
        assert "resembles" not in d.reason and "names it" not in d.reason
    # The same question where nothing could be read: nothing flagged high, and the name's possible homes kept.
    scored = score_tables("Which papers did Ras Bodik write?", None, c, SchemaIndex.build(c), None)
    directives = decide_directives(scored, DirectiveSettings())
    assert all(d.tier == "medium" for d in directives.irrelevant)
