"""Pairs: a code/title dictionary table and its fact table (`D_ICD_DIAGNOSES`, `DIAGNOSES_ICD`), kept together."""

from __future__ import annotations

from sophrosyne.base.memo import per_object
from sophrosyne.base.words import stemmed
from sophrosyne.index.lexicon import Lexicon

# Words that mark a table of codes and their titles rather than other data: `D_ICD_DIAGNOSES`, `Ref_Colors`,
# `dim_customer`, `lookup_state`, `state_codes`. Stemmed, as table names are.
DICTIONARY_WORDS = frozenset("d ref dim lookup lu dict dictionary code".split())  # noqa: SIM905
# Column names two tables share by chance rather than as a code one of them spells out.
_PLAIN_COLUMNS = frozenset("id name title description label value type".split())  # noqa: SIM905


@per_object(limit=16)
def dictionary_pairs(lexicon: Lexicon) -> list[tuple[str, str]]:
    """(dictionary, fact) pairs of a schema: two tables whose names have the same words once the dictionary
    words are set aside, only one of them with such a word, and a column of the same name (not a plain `id`
    or `name`): the code the dictionary spells out. Names and columns only: the bench's catalogs have no data."""
    by_core: dict[frozenset[str], list[tuple[str, bool]]] = {}
    for table in lexicon.table_phrases:
        words = set(stemmed(table.rsplit(".", 1)[-1]).split())  # a warehouse table by its own name
        core = frozenset(words - DICTIONARY_WORDS)
        if core:
            by_core.setdefault(core, []).append((table, bool(words & DICTIONARY_WORDS)))
    columns: dict[str, set[str]] = {}
    for name, holders in lexicon.raw_columns.items():
        if name not in _PLAIN_COLUMNS:
            for table, _ in holders:
                columns.setdefault(table, set()).add(name)
    pairs = []
    for members in by_core.values():
        dictionaries = [t for t, marked in members if marked]
        facts = [t for t, marked in members if not marked]
        if len(dictionaries) == 1 and len(facts) == 1:
            dictionary, fact = dictionaries[0], facts[0]
            if columns.get(dictionary, set()) & columns.get(fact, set()):
                pairs.append((dictionary, fact))
    return pairs


def keep_pairs(relevant: set[str], lexicon: Lexicon) -> set[str]:
    """The kept tables with the other table of each dictionary pair one of them is in."""
    out = set(relevant)
    for dictionary, fact in dictionary_pairs(lexicon):
        if dictionary in relevant or fact in relevant:
            out |= {dictionary, fact}
    return out
