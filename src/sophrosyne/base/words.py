"""Words of names and questions: identifiers split, stemmed, tokens for BM25 and matching (spelled out: `names`)."""

from __future__ import annotations

import re
from functools import lru_cache

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_DIGITS = re.compile(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]+|\d+")

# The word lists below follow how BIRD and Spider phrase questions and knowledge (see the README, Directives);
# other phrasing still works, with less help from them.

# BIRD's evidence links a phrase to the schema with "X refers to Y" (1,108 of its 1,534 dev entries say
# "refers") and "X means Y": there these words are links, never words of a column.
_KNOWLEDGE_LINKS = ("refers", "refer", "mean", "means")
STOPWORDS = frozenset(
    [
        *"""a an the of in on at to for from by with and or not no is are was were be been being do does did
        what which who whom whose when where why how that this these those it its their there than then as
        into per each all any both many much more most less least some such only also very can could should
        would will shall may might must has have had having i me my we our you your he she his her they them
        please list give show tell find among between under over about above below out up down if else so
        but same other another one ones""".split(),  # noqa: SIM905
        *_KNOWLEDGE_LINKS,
    ]
)


# Words that ask for an aggregate or an order rather than name a column; they break question phrases. Most
# are plain English; "calculate", "state" (as in "State the name of...") and "overall" follow BIRD's question
# phrasing.
QUERY_NOISE = frozenset(
    """average avg number count total sum highest lowest largest smallest maximum minimum max min mean
    percentage percent ratio top bottom greater larger smaller fewer biggest descending ascending order
    sorted sort distinct different unique every times far whole overall rate calculate state""".split()  # noqa: SIM905
)


@lru_cache(maxsize=65536)
def _split(name: str) -> tuple[str, ...]:
    spaced = _DIGITS.sub(" ", _CAMEL.sub(" ", name))
    return tuple(w.lower() for w in _NON_WORD.split(spaced) if w)


def split_identifier(name: str) -> list[str]:
    """Words of an identifier: `setCode` -> [set, code]; `T1.customer_id2` -> [t, 1, customer, id, 2]."""
    return list(_split(name))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light plural/verb-form stemmer: enough to match `schools` with `school` and `cities` with `city`."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-cased words of free text, identifiers inside it split as identifiers."""
    out: list[str] = []
    for token in text.split():  # str.split() splits on what re's \s matches, and drops the empty pieces
        out.extend(_split(token))
    return out


def tokenize(text: str) -> list[str]:
    """BM25 tokens: words split as identifiers, stemmed, stopwords dropped."""
    return list(_tokens(text)) if text else []


@lru_cache(maxsize=65536)  # a warehouse's catalog repeats its column names and descriptions many times
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit()))


@lru_cache(maxsize=65536)  # the same column names, over and over, in a warehouse's catalog
def stemmed(text: str) -> str:
    """One canonical spelling for exact matching: words joined by single spaces, stemmed."""
    return " ".join(stem(w) for w in words(text))


def word_tokens(text: str) -> list[str]:
    """Plain words (letters or digits runs), lower-cased, for n-grams over a question."""
    return [w.lower() for w in _WORD.findall(text)]
