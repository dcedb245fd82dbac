"""Tables named in short: a question word a table's name shortens keeps that table (directives/short_names.py)."""

from __future__ import annotations

from dataclasses import replace

from sophrosyne.directives import DirectiveModel, DirectiveSettings, decide_directives, score_tables
from sophrosyne.directives.short_names import short_forms, shortened_names
from sophrosyne.directives.thesaurus import load_thesaurus
from sophrosyne.index.lexicon import lexicon_for
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, Table


def _warehouse(kind: str = "TEXT") -> Catalog:
    def table(name: str, *columns: str) -> Table:
        return Table(name=name, columns=[Column(name=c, type=kind) for c in columns])

    return Catalog(
        tables={
            t.name: t
            for t in [
                table("DIM_DSTR", "DSTR_KEY", "DSTR_NM", "RGN_CD"),
                table("FACT_BDGS", "BDGS_KEY", "USR_KEY", "BDGS_NM", "AWRD_DT"),
                table("DIM_USERS", "USR_KEY", "DISPLAY_NAME", "REPUTATION"),
                table("FACT_CMNT", "CMNT_KEY", "USR_KEY", "CMNT_TXT"),
                table("DIM_DEPT", "DEPT_KEY", "DEPT_NAME"),
            ]
        }
    )


def test_the_forms_are_the_unread_words_of_table_names() -> None:
    forms = short_forms(lexicon_for(_warehouse()))
    flat = {form: tables for letter in forms.values() for form, tables in letter.items()}
    # `dept`, `rgn`, `usr` are on the project's list (spelled out already), `dim` and `fact` are layer words,
    # `key` a key word, `users` a word, `nm`, `cd` too short to guess; a column's forms count for its table.
    assert flat == {
        "dstr": ("DIM_DSTR",),
        "bdgs": ("FACT_BDGS",),
        "awrd": ("FACT_BDGS",),
        "cmnt": ("FACT_CMNT",),
        "txt": ("FACT_CMNT",),
    }


def test_a_question_word_finds_the_table_its_short_form_names() -> None:
    lexicon = lexicon_for(_warehouse())
    words = ["which", "district", "has", "the", "most", "badges", "and", "comments", "by", "the", "user"]
    found = shortened_names(words, lexicon, load_thesaurus())
    assert found == {"district": ["DIM_DSTR"], "badges": ["FACT_BDGS"], "comments": ["FACT_CMNT"]}
    # ... and a column's form its table: "awarded" -> `AWRD_DT`.
    assert shortened_names(["awarded"], lexicon, load_thesaurus()) == {"awarded": ["FACT_BDGS"]}
    # The singular finds the plural form through its plural ("badge" -> badges -> `bdgs`).
    assert shortened_names(["badge"], lexicon, load_thesaurus()) == {"badge": ["FACT_BDGS"]}
    # A word no form shortens, a stopword, a short word: nothing.
    assert shortened_names(["weather", "which", "dst"], lexicon, load_thesaurus()) == {}


def test_a_table_whose_own_name_shortens_a_word_is_its_home_before_the_columns_pointing_at_it() -> None:
    def table(name: str, *columns: str) -> Table:
        return Table(name=name, columns=[Column(name=c, type="TEXT") for c in columns])

    catalog = Catalog(
        tables={
            t.name: t
            for t in [
                table("DIM_CNTR", "CNTR_KEY", "CNTR_NM"),
                table("FACT_LEAG", "LEAG_KEY", "CNTR_KEY", "LEAG_NM"),
                table("FACT_MATCH", "MATCH_KEY", "CNTR_KEY", "LEAG_KEY", "SEASON"),
                table("FACT_PLYR", "PLYR_KEY", "PLYR_NM", "HGHT"),
            ]
        }
    )
    lexicon = lexicon_for(catalog)
    # `cntr` is in three tables, which would say no table; one of them is named by it.
    assert shortened_names(["country"], lexicon, load_thesaurus()) == {"country": ["DIM_CNTR"]}
    # A form no table is named by still finds the tables of its columns: "height" -> `HGHT`.
    assert shortened_names(["height"], lexicon, load_thesaurus()) == {"height": ["FACT_PLYR"]}
    index = SchemaIndex.build(catalog)
    settings = DirectiveSettings()
    scored = score_tables("Which country is the league Serie A from?", "", catalog, index, None, settings)
    assert "DIM_CNTR" not in decide_directives(scored, settings).flagged


def test_a_table_named_in_short_is_never_flagged() -> None:
    catalog = _warehouse()
    index = SchemaIndex.build(catalog)
    settings = DirectiveSettings()
    scored = score_tables("How many badges were awarded in each district?", "", catalog, index, None, settings)
    directives = decide_directives(scored, settings)
    assert not directives.abstained
    assert {"DIM_DSTR", "FACT_BDGS"} <= set(directives.relevant)
    assert "DIM_DSTR" not in directives.flagged and "FACT_BDGS" not in directives.flagged


def test_a_table_whose_name_the_index_cannot_read_is_never_flagged_with_high_confidence() -> None:
    catalog = _warehouse("INTEGER")  # no text column: no value of the question can be unread data of theirs
    index = SchemaIndex.build(catalog)
    # The shipped model, with every flag below its threshold sure enough for `high`: only readability decides.
    shipped = DirectiveSettings().model
    sure = DirectiveModel(replace(shipped.with_knowledge, high=1.0), replace(shipped.without_knowledge, high=1.0))
    settings = DirectiveSettings(model=sure)
    scored = score_tables("How many departments are there?", "", catalog, index, None, settings)
    assert not scored.account.unread
    directives = decide_directives(scored, settings)
    tiers = {d.table: d.tier for d in directives.irrelevant}
    assert {"DIM_DSTR", "FACT_BDGS", "FACT_CMNT"} <= set(tiers)  # flagged, as nothing in the question names them
    assert {tiers[t] for t in ("DIM_DSTR", "FACT_BDGS", "FACT_CMNT")} == {"medium"}
    assert tiers["DIM_USERS"] == "high"  # its name is words the index reads
