"""Names as warehouses write them: layer prefixes and key suffixes set aside, abbreviations spelled out (from
the project's list and from what the schema itself writes in full), so that "department" finds `DIM_DEPT`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from sophrosyne.base.words import STOPWORDS, split_identifier, stem


def _read_abbreviations() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (Path(__file__).parent / "abbreviations.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            form, expansion = line.split("\t")
            found[form.strip()] = expansion.strip()
    return found


ABBREVIATIONS: Mapping[str, str] = _read_abbreviations()
"""Abbreviation -> the words it stands for, from `abbreviations.tsv` (its header says where the forms come from)."""
ENGLISH_WORDS = frozenset(
    line for line in (Path(__file__).parent / "english_words.txt").read_text().splitlines() if not line.startswith("#")
)
"""English words of 3 to 5 letters (WordNet's, by `scripts/english_words.py`): never abbreviations a schema teaches."""

# Words that say which layer of a warehouse a table is in, not what it holds (`DIM_DEPT`, `FACT_ENRL`,
# `STG_EMPL`, `PERSON_DIM`): a question names the table by its other words.
LAYER_WORDS = frozenset("dim fact fct stg tbl vw".split())  # noqa: SIM905
# Words that end a column name by saying it is a key (`DEPT_KEY`, `EMPL_SK`): the column is named by what it
# keys. `id` stays: questions ask for "the ID of".
KEY_WORDS = frozenset("key sk pk fk".split())  # noqa: SIM905

# Forms never spelled out, even where a schema seems to teach them: "number" is how questions ask for a count
# ("the number of staff"), so `num` spelled out matched counting questions (the list's header says more).
UNSPELLED = frozenset(["num", "no"])
_VOWELS = frozenset("aeiou")
_LETTERS = re.compile(r"[a-z]+")  # the words of prose: a regex over a long description, not word by word
# Words a description writes as words, not names it quotes (`WRKR_SK: the worker's key`, `DEPT`).
_PROSE = re.compile(r"(?<![\w])[A-Za-z][a-z]+(?![\w])")
# A word that is its start and one of these is that word inflected (`rank` -> `ranking`, `view` -> `viewers`),
# not spelled out.
_ENDINGS = frozenset("s es ed er ers or ors ing ings ment ments".split())  # noqa: SIM905
# What the schema may teach: forms of 3 to 5 letters (shorter ones are too ambiguous to guess: `cd`, `dt` come
# from the list), for words at least 2 letters longer.
_TAUGHT_LETTERS = (3, 5)


def _core(parts: list[str]) -> list[str]:
    """The words of a name without its layer and key words, unless nothing else is left (`FACT`, `KEY`)."""
    core = [p for i, p in enumerate(parts) if not (p in LAYER_WORDS and i in (0, len(parts) - 1))]
    if len(core) > 1 and core[-1] in KEY_WORDS:
        core = core[:-1]
    return core or parts


@lru_cache(maxsize=65536)  # called per table and column of the lexicon: a warehouse repeats its column names
def _spelled(name: str) -> str:
    parts = split_identifier(name)
    core = _core(parts)
    spelled = [ABBREVIATIONS.get(p, p) for p in core]
    return "" if spelled == parts else " ".join(spelled)


def spelled_out(name: str, taught: Mapping[str, str] | None = None) -> str:
    """A name's words as a question would say them, or "" when they are its words already: layer and key
    words set aside and abbreviations spelled out, from the list and from `taught` (`schema_abbreviations`):
    `DIM_DEPT` -> "department", `ship_dt` -> "ship date", `EMPL_KEY` -> "employee". The one spelling that
    both the lexicon (names matched to a question) and the schema index (names searched) read."""
    parts = _parts(name)
    if not taught or not any(p in taught for p in parts):
        return _spelled(name)
    spelled = [taught.get(p) or ABBREVIATIONS.get(p, p) for p in _core(list(parts))]
    return "" if spelled == list(parts) else " ".join(spelled)


@lru_cache(maxsize=65536)  # a warehouse repeats its column names in table after table
def _parts(name: str) -> tuple[str, ...]:
    return tuple(split_identifier(name))


def added_words(name: str, taught: Mapping[str, str] | None = None) -> str:
    """The words `spelled_out` adds to a name's own: `DIM_DEPT` -> "department", `order_qty` -> "quantity"."""
    own = set(split_identifier(name))
    return " ".join(w for w in spelled_out(name, taught).split() if w not in own)


def abbreviates(form: str, word: str) -> bool:
    """Whether `form` is written the way warehouses shorten `word`: its start (`empl`, `hier`, `alloc`: three
    letters or more, ending in a consonant, three letters short of the word at least, and not the word inflected:
    `rank` is no short `ranking`), or its start and then consonants in order, ending on the word's last letter or
    last consonant (`dept`, `bldg`, `fclt`, `qty`, `mgr`)."""
    if form[0] != word[0] or len(word) <= len(form):
        return False
    if word.startswith(form):
        inflected = word[len(form) :] in _ENDINGS
        return len(form) >= 3 and form[-1] not in _VOWELS and len(word) >= len(form) + 3 and not inflected
    start = next(i for i, (a, b) in enumerate(zip(form, word, strict=False)) if a != b)
    rest = form[start:]
    if any(c in _VOWELS for c in rest) or (form[-1] == "s" and len(form) > 2):
        return False  # a plural of consonants is an initialism's (`CDS`, `PCS`), or said by the list (`hrs`)
    consonants = [c for c in word if c not in _VOWELS and c != "y"]
    if form[-1] != word[-1] and (not consonants or form[-1] != consonants[-1]):
        return False
    letters = iter(word[start:])
    return all(c in letters for c in rest)  # `in` on an iterator consumes it: letters in order


def shortens(form: str, word: str) -> bool:
    """Whether `form` may stand for `word` in a warehouse's name, read from the question's side: as `abbreviates`
    says (`dept`, `bldg`, `empl`), or as the word's first letter and the consonants after it, in order and cut
    short (`dstr` for "district", `trns` for "transactions", `cstmr` for "customer"), a form of three letters or
    more and shorter than the word."""
    if len(form) < 3 or len(word) <= len(form) or form[0] != word[0]:
        return False
    return abbreviates(form, word) or (not _VOWELS & set(form[1:]) and _consonants(word).startswith(form))


@lru_cache(maxsize=65536)
def _consonants(word: str) -> str:
    """The first letter, then each consonant after it (`y` counted one), a double once: "district" -> `dstrct`."""
    kept = word[0]
    for ch in word[1:]:
        if ch not in _VOWELS and ch != kept[-1]:
            kept += ch
    return kept


def schema_abbreviations(tables: Iterable[tuple[list[str], str]]) -> dict[str, str]:
    """Abbreviations a schema teaches by writing the word elsewhere in full: per table, its names (table and
    columns) and its prose (descriptions, readable names). A word of a name that is no word of the list, nor of
    any prose, and that `abbreviates` exactly one word (by stem) of its own table (a table `DEPT` with a column
    `DEPARTMENT_NAME`, a column `EMPL_KEY` described as "the employee"), or else of the whole schema (`FCLT` in
    one table, `FACILITY_TYPE` in another), stands for that word."""
    groups: list[tuple[frozenset[str], set[str]]] = []
    prose: set[str] = set()
    seen: set[tuple[frozenset[str], str]] = set()
    for names, text in tables:
        name_words: frozenset[str] = frozenset().union(*(_letter_words(n) for n in set(names)))
        if (name_words, text) in seen:
            continue  # a sharded table's every shard: the same words
        seen.add((name_words, text))
        text_words = set(_LETTERS.findall(text.lower()))
        prose.update(w.lower() for w in _PROSE.findall(text))
        groups.append((name_words, text_words | name_words))
    low, high = _TAUGHT_LETTERS
    every = {w for _, group in groups for w in group if len(w) >= low + 2}
    by_letter: dict[str, list[str]] = {}
    for w in sorted(every):
        by_letter.setdefault(w[0], []).append(w)
    taught: dict[str, str] = {}
    undecided: set[str] = set()
    for own, group in groups:
        for form in own:
            if (
                not low <= len(form) <= high
                or form in ABBREVIATIONS
                or form in UNSPELLED
                or form in ENGLISH_WORDS
                or stem(form) in ENGLISH_WORDS
                or form in prose
                or form in STOPWORDS
                or form in taught
                or form in undecided
            ):
                continue
            local = _expansion(form, (w for w in group if w[0] == form[0]))
            if local:
                taught[form] = local
            else:
                undecided.add(form)
    # A form its own table does not spell out is looked up in the whole schema, once; not a form of three
    # letters, which is as often an initialism (`ICD`, `ETL`, `DOW`) as a word shortened.
    for form in sorted(f for f in undecided if len(f) > low):
        found = _expansion(form, by_letter.get(form[0], ()))
        if found:
            taught[form] = found
    return taught


@lru_cache(maxsize=65536)  # a warehouse repeats its column names in table after table
def _letter_words(name: str) -> frozenset[str]:
    return frozenset(w for w in split_identifier(name) if w.isalpha())


def _expansion(form: str, candidates: Iterable[str]) -> str:
    """The one word (by stem) among `candidates` that `form` abbreviates, or ""."""
    found: dict[str, str] = {}
    for word in candidates:
        if word != form and abbreviates(form, word):
            known = found.get(stem(word))
            found[stem(word)] = word if known is None or len(word) < len(known) else known
    return next(iter(found.values())) if len(found) == 1 else ""
