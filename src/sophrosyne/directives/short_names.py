"""Tables named in short: a question word that a word of a table's or column's name shortens ("district" for
`DIM_DSTR`, "badge" for `FACT_BDGS`, "language" for `FRGN.LNG`), where neither the project's list nor the schema
itself spells the form out."""

from __future__ import annotations

from collections.abc import Iterable

from sophrosyne.base.memo import per_object
from sophrosyne.base.names import ABBREVIATIONS, ENGLISH_WORDS, KEY_WORDS, LAYER_WORDS, UNSPELLED, shortens
from sophrosyne.base.words import QUERY_NOISE, STOPWORDS, split_identifier, stem
from sophrosyne.directives.thesaurus import Thesaurus
from sophrosyne.index.lexicon import Lexicon

# The letters of a form a question word may be shortened to: a form of more is a word or a code, not a word cut.
_FORM_LETTERS = (3, 5)


def short_forms(lexicon: Lexicon) -> dict[str, dict[str, tuple[str, ...]]]:
    """First letter -> form -> tables: the words of table and column names of 3 to 5 letters that are no English
    word, no form of the list and no layer or key word (`DIM_DSTR` -> `dstr`, `LNG_CD` -> `lng`), by first letter
    (a question word is compared with the forms of its own letter only). The same for every question on a
    schema, so kept."""
    return _forms(lexicon)[0]


def named_forms(lexicon: Lexicon) -> dict[str, frozenset[str]]:
    """Form -> the tables whose own name has it (`cntr` -> `DIM_CNTR`, not `FACT_LEAG` for its `CNTR_KEY`)."""
    return _forms(lexicon)[1]


@per_object(limit=16)
def _forms(lexicon: Lexicon) -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, frozenset[str]]]:
    found: dict[str, set[str]] = {}
    own: dict[str, set[str]] = {}
    # Each name's forms found once: a warehouse repeats its column names in table after table.
    forms: dict[str, list[str]] = {}
    tables = [(t, t.rsplit(".", 1)[-1], True) for t in lexicon.tables]
    names = tables + [(t, c, False) for t, c in lexicon.visible]
    for table, name, is_table in names:
        if name not in forms:
            forms[name] = [part for part in split_identifier(name) if _short_form(part)]
        for part in forms[name]:
            found.setdefault(part, set()).add(table)
            if is_table:
                own.setdefault(part, set()).add(table)
    by_letter: dict[str, dict[str, tuple[str, ...]]] = {}
    for form, held in sorted(found.items()):
        by_letter.setdefault(form[0], {})[form] = tuple(sorted(held))
    return by_letter, {form: frozenset(held) for form, held in own.items()}


def _short_form(part: str) -> bool:
    """Whether a word of a name is a form a question word may be shortened to (see short_forms)."""
    low, high = _FORM_LETTERS
    if not (low <= len(part) <= high and part.isalpha()) or part in ABBREVIATIONS:
        return False
    if part in ENGLISH_WORDS or stem(part) in ENGLISH_WORDS or part in LAYER_WORDS or part in KEY_WORDS:
        return False
    return part not in UNSPELLED


def shortened_names(words: Iterable[str], lexicon: Lexicon, thesaurus: Thesaurus | None) -> dict[str, list[str]]:
    """Per word (of the question and its knowledge, as written), the tables whose names or columns' names shorten
    it, its noun lemma or their plural: "districts" -> `DIM_DSTR`, "badge" -> `FACT_BDGS` (badges). Where a
    table's own name shortens it, that table and not those whose columns do: "country" is `DIM_CNTR`, the
    table, not also `FACT_LEAG` and `FACT_MATCH` for their `CNTR_KEY` (which point at it)."""
    forms = short_forms(lexicon)
    own = named_forms(lexicon)
    if not forms:
        return {}
    found: dict[str, list[str]] = {}
    for word in dict.fromkeys(words):
        if len(word) < 4 or not word.isalpha() or word in STOPWORDS or word in QUERY_NOISE:
            continue
        candidates = forms.get(word[0])
        if not candidates:
            continue
        spellings = {word}
        lemma = thesaurus.lemma(word) if thesaurus is not None else None
        if lemma is not None and lemma.isalpha():
            spellings.add(lemma)
        spellings |= {_plural(s) for s in spellings}
        shortening = [form for form in candidates if any(shortens(form, s) for s in spellings)]
        named = {t for form in shortening for t in own.get(form, ())}
        tables = named or {t for form in shortening for t in candidates[form]}
        if tables:
            found[word] = sorted(tables)
    return found


def _plural(word: str) -> str:
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


@per_object(limit=16)
def named_in_short(lexicon: Lexicon) -> frozenset[str]:
    """The tables whose names or columns' names have a word the index cannot read (a form no list or schema spells
    out): a question may name them in words the index does not connect to them, so they are never flagged with
    `high` confidence."""
    return frozenset(t for forms in short_forms(lexicon).values() for tables in forms.values() for t in tables)
