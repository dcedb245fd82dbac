"""Accounting for the question: each content term gets a home (a table, column, description, value or knowledge
entry that explains it) or stays unexplained; and which tables the index cannot read well enough to rule out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sophrosyne.base.memo import per_object
from sophrosyne.base.words import QUERY_NOISE, stem, tokenize, word_tokens
from sophrosyne.directives.question import Question
from sophrosyne.directives.thesaurus import Thesaurus
from sophrosyne.index.lexicon import Lexicon
from sophrosyne.index.values import ValueIndex
from sophrosyne.schema.catalog import Catalog, is_text_type

# Words that name no table: the calendar (a value of any date column: "in January", "each month"), numbers
# written out ("the five largest"), and words for the data itself ("the data", "all the information"). Plain
# English, not any benchmark's phrasing.
_CALENDAR = frozenset(
    """january february march april may june july august september october november december jan feb mar apr
    jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday day days week
    weeks month months year years quarter quarters date dates time times today yesterday tomorrow weekday
    weekend morning evening night hour hours minute minutes second seconds decade century period""".split()  # noqa: SIM905
)
_NUMBERS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
    seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
    million billion dozen half third quarter first second fifth tenth""".split()  # noqa: SIM905
)
_THE_DATA = frozenset(
    """data dataset datasets database databases table tables record records row rows entry entries result
    results information detail details value values field fields column columns list""".split()  # noqa: SIM905
)
_NAMES_NO_TABLE = frozenset(tokenize(" ".join(_CALENDAR | _NUMBERS | _THE_DATA)))


# The words between a thing and its name: "the city of Hickman", "products named Widget", "a film called Joy".
_NAMING = frozenset({"of", "named", "called", "titled"})


@dataclass(frozen=True)
class Account:
    """The question's content terms, those no table, column, description, value or knowledge entry explains
    (as the question writes them), and the tables whose data the index could not read (no value of theirs is
    indexed: a schema-only database, an empty copy, a table the reading skipped) that have text columns, so
    that an unexplained term may be one of their values."""

    terms: tuple[str, ...]
    unexplained: tuple[str, ...]
    unread: frozenset[str]
    # Unexplained words the question writes as a name (quoted, capitalised): a value, unless the data says not.
    unexplained_names: tuple[str, ...] = ()
    # The tables that may hold those names, where each name's phrase says what it is ("Alameda County", "the
    # city of Hickman": tables with a `county` or `city` column); None when one of them does not say.
    name_homes: frozenset[str] | None = None

    def homes_unread(self) -> frozenset[str]:
        """The tables the index could not read that may hold a name of the question no table explains."""
        if not self.unexplained_names:
            return frozenset()
        return self.unread if self.name_homes is None else self.unread & self.name_homes

    @property
    def unexplained_share(self) -> float:
        return len(self.unexplained) / len(self.terms) if self.terms else 0.0


def account(
    question: Question,
    lexicon: Lexicon,
    catalog: Catalog,
    values: ValueIndex | None,
    explained: Iterable[str],
    names_a_thing: Callable[[str], bool] | None = None,
) -> Account:
    """Account for the question's words (as written, lower-cased, in order) against the schema's names, value
    descriptions and column descriptions, and the stems already explained elsewhere (`explained`: words of
    values found, related words, synonyms, the knowledge); its quoted and capitalised phrases may be names of
    values. `names_a_thing` tells the words that may name a thing (`thing_words`)."""
    words = question.words
    names = [*question.quoted, *question.names]
    known = set(explained)
    described = _described(catalog)
    column_words = _column_words(lexicon)

    def has_home(term: str) -> bool:
        return (
            term in known
            or term in _NAMES_NO_TABLE
            or term in lexicon.name_words
            or term.rstrip("s") in lexicon.name_words  # `ids` (kept whole by the stemmer) for `id`
            or term in lexicon.value_words
            or term in column_words  # spelled out too: `order_qty` as "order quantity"
            or term in described
        )

    unread = unread_tables(catalog, values)
    stems = [[t for t in tokenize(w) if t not in QUERY_NOISE and not t.isdigit()] for w in words]
    homeless = [bool(ts) and not all(map(has_home, ts)) for ts in stems]
    terms: dict[str, str] = {}  # stem -> the word as written, first seen
    unexplained: dict[str, None] = {}
    for i, (word, ts) in enumerate(zip(words, stems, strict=True)):
        if not ts:
            continue
        # A word that names no thing ("produced", "youngest") counts only where the data could not be read and
        # it stands in a run of homeless words, as a value's words do ("papers on semantic parsing").
        in_run = (i > 0 and homeless[i - 1]) or (i + 1 < len(words) and homeless[i + 1])
        if names_a_thing is not None and not names_a_thing(word) and not (unread and in_run):
            continue
        for term in ts:
            terms.setdefault(term, word)
        if homeless[i]:
            unexplained[word] = None
    return Account(
        tuple(terms), tuple(unexplained), unread, *_name_homes(tuple(unexplained), names, lexicon, question.text)
    )


def _name_homes(
    unexplained: tuple[str, ...], names: Sequence[str], lexicon: Lexicon, question: str
) -> tuple[tuple[str, ...], frozenset[str] | None]:
    """The unexplained words the question writes as names, and the tables that may hold them: those with a
    column its phrase says ("Alameda County", "the city of Hickman", "products named Widget"); None where one of
    the names says none."""
    written = stems_of(names)
    as_names = tuple(w for w in unexplained if set(tokenize(w)) & written)
    said_stems = {t for w in as_names for t in tokenize(w)}
    homes: set[str] = set()
    for name in names:
        if not said_stems & set(tokenize(name)):
            continue
        at = question.find(name)
        before = word_tokens(question[:at]) if at > 0 else []
        # The name's own words, and the word it is "of" or names ("the city of Hickman", "products named Widget").
        said = tokenize(name) + (tokenize(before[-2]) if len(before) >= 2 and before[-1] in _NAMING else [])
        holders = {t for w in said for t in _column_words(lexicon).get(w, ())}
        if not holders:
            return as_names, None
        homes |= holders
    return as_names, frozenset(homes)


def thing_words(thesaurus: Thesaurus | None) -> Callable[[str], bool] | None:
    """Whether a question word may name a thing a table holds: a word WordNet does not know (a name, a code:
    "pvldb", "jagadish") or one it knows mostly as a noun. A word mostly a verb, an adjective or an adverb
    ("produced", "youngest", "return", "after") asks about things without naming one. None (every word counts)
    without the thesaurus."""
    if thesaurus is None:
        return None

    def names_a_thing(word: str) -> bool:
        if len(word) < 3 or word.isdigit():
            return False
        lemma = thesaurus.lemma(word)
        if lemma is None:
            return not thesaurus.known_otherwise(word)
        return thesaurus.mostly_noun(word, lemma)

    return names_a_thing


def stems_of(texts: Iterable[str]) -> set[str]:
    """The stems of the words of some texts (values found, schema words a question word was related to)."""
    return {t for text in texts for t in tokenize(text)}


@per_object(limit=256)
def _column_words(lexicon: Lexicon) -> dict[str, tuple[str, ...]]:
    """Word of a column's name (spelled out too) -> the tables with such a column: tuples of names, which the
    garbage collector stops tracking (a warehouse has tens of thousands of words)."""
    found: dict[str, set[str]] = {}
    for spelling, pairs in lexicon.columns.items():
        for word in spelling.split():
            found.setdefault(word, set()).update(t for t, _ in pairs)
    return {w: tuple(sorted(ts)) for w, ts in found.items()}


@per_object(limit=256)
def _described(catalog: Catalog) -> frozenset[str]:
    """Stems of the words of every table and column description: a term a description uses has a home."""
    found: set[str] = set()
    for table in catalog.tables.values():
        found.update(tokenize(table.description))
        found.update(t for column in table.columns if column.description for t in tokenize(column.description))
    return frozenset(found)


def unread_tables(catalog: Catalog, values: ValueIndex | None) -> frozenset[str]:
    """Tables with a text column none of whose values the index holds (every such table when there is no value
    index): a value of the question may be theirs, unseen."""
    texts = _text_tables(catalog)
    return texts - _filled_tables(values) if values is not None else texts


@per_object(limit=256)
def _text_tables(catalog: Catalog) -> frozenset[str]:
    return frozenset(t.name for t in catalog.tables.values() if any(is_text_type(c.type) for c in t.columns))


@per_object(limit=64)
def _filled_tables(values: ValueIndex) -> frozenset[str]:
    """Tables of which the value index holds at least one value."""
    ids = np.unique(np.asarray(values.values.ids)) if len(values) else np.zeros(0, np.int64)
    return frozenset(values.columns[int(i)][0] for i in ids if 0 <= int(i) < len(values.columns))


def related_stems(related: Mapping[str, list[str]]) -> set[str]:
    """The stems of question phrases the thesaurus or a word family related to schema words."""
    return {stem(w) for phrase in related for w in phrase.split()}
