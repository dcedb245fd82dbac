"""The thesaurus: nouns WordNet relates to a word (its synonyms, one step more general or more specific), offline."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import resources

import Stemmer

from sophrosyne.base.memo import per_object
from sophrosyne.base.words import QUERY_NOISE, STOPWORDS, stem, words
from sophrosyne.directives.question import Question
from sophrosyne.index.lexicon import Lexicon

_STEMMER = Stemmer.Stemmer("english")

# WordNet 3.0's nouns, shipped with the package so that every install gives the same directives; built by
# scripts/build_lexicon_data.py from Debian's wordnet-base (WordNet's licence: WORDNET_LICENSE beside it).
DATA_FILE = "wordnet_nouns.gz"
# The data file's sections (the licence, the noun index, the synsets, the other parts of speech, the irregular
# plurals, the irregular forms of verbs and adjectives) are joined by a line of one byte (the group separator)
# that no WordNet line holds.
SECTION = b"\n\x1d\n"
# A synset is the line at its byte offset in the synsets' section, written with this many digits.
OFFSET_WIDTH = 7
# WordNet's rules for a plural noun's singular (morphy), after its list of irregular forms (noun.exc).
_NOUN_ENDINGS = (("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"), ("ies", "y"))
# WordNet's rules of detachment for verbs and adjectives (its `morphy`), after its exception lists.
_OTHER_ENDINGS = (
    ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""), ("s", ""),
    ("est", ""), ("est", "e"), ("er", ""), ("er", "e"),
)  # fmt: skip
# Pointers followed from a sense: its hypernyms (@, @i) and hyponyms (~, ~i). Parts and wholes, and derived
# forms, relate words that name different things (`wheel` is part of `car`). The data file holds only these.
RELATIONS = frozenset({"@", "@i", "~", "~i"})


class Thesaurus:
    """WordNet's nouns as the data file holds them, searched in place: the sorted index lines by bisection over
    their bytes, a synset by its byte offset; nothing is parsed up front, and a look-up takes microseconds."""

    def __init__(self, data: bytes) -> None:
        # Each section is a span of the one decompressed buffer: nothing is copied, split or parsed up front.
        self._data = data
        spans, start = [], 0
        # The one byte, not the line around it, is searched for: a single byte is found at memchr's speed.
        while (at := data.find(SECTION[1:2], start)) >= 0:
            spans.append((start, at - 1))
            start = at + 2
        spans.append((start, len(data)))
        if len(spans) != 6:
            raise ValueError(f"a thesaurus data file has 6 sections, not {len(spans)}")
        # `lemma synset...` per noun and `word senses` per word of another part of speech, sorted by bytes;
        # `words|related synset...` per synset, found by its offset in its section.
        _licence, self._index, self._synsets, self._others, irregular, other_irregular = spans
        lines = data[irregular[0] : irregular[1]].decode("utf-8").splitlines()
        self._irregular = dict(line.split(" ", 1) for line in lines)
        lines = data[other_irregular[0] : other_irregular[1]].decode("utf-8").splitlines()
        self._other_irregular = dict(line.split(" ", 1) for line in lines)
        # Questions on one schema say the same words again and again: each look-up is kept.
        self._related = lru_cache(maxsize=65536)(self._related_uncached)
        self._lemma = lru_cache(maxsize=65536)(self._lemma_uncached)
        self._offsets = lru_cache(maxsize=65536)(self._offsets_uncached)

    def lemma(self, word: str) -> str | None:
        """The noun WordNet files a word under (`universities` -> `university`), or None if it has none."""
        return self._lemma(word)

    def _lemma_uncached(self, word: str) -> str | None:
        word = word.lower().replace(" ", "_")
        candidates = [word, self._irregular.get(word, "")]
        candidates += [word[: -len(end)] + base for end, base in _NOUN_ENDINGS if word.endswith(end)]
        if word.endswith("s") and not word.endswith("ss"):
            candidates.append(word[:-1])
        return next((c for c in candidates if c and self._offsets(c)), None)

    def known_otherwise(self, word: str) -> bool:
        """Whether WordNet knows the word, in some form, as a verb, an adjective or an adverb ("produced",
        "youngest", "after")."""
        word = word.lower()
        candidates = [word, self._other_irregular.get(word, "")]
        candidates += [word[: -len(end)] + base for end, base in _OTHER_ENDINGS if word.endswith(end)]
        return any(c and _find_line(self._data, self._others, c.encode()) is not None for c in candidates)

    def senses(self, lemma: str) -> int:
        """How many noun senses the lemma has."""
        return len(self._offsets(lemma))

    def mostly_noun(self, word: str, lemma: str) -> bool:
        """Whether the word has more senses as a noun than as a verb, an adjective or an adverb
        ("quarterly", "insured" are mostly not nouns)."""
        line = _find_line(self._data, self._others, word.lower().replace(" ", "_").encode())
        return line is None or int(line.split()[1]) < self.senses(lemma)

    def related(self, word: str, senses: int) -> frozenset[str]:
        """Lemmas (spaced words: `medical care`) of the word's first `senses` noun senses, WordNet's most
        frequent first, and of the senses one step more general or more specific than each."""
        return self._related(word, senses)

    def synonyms(self, word: str) -> frozenset[str]:
        """Lemmas of every noun sense of the word, its rare ones too ("area" is a `domain` in its fourth)."""
        lemma = self.lemma(word)
        if lemma is None:
            return frozenset()
        found = {w for offset in self._offsets(lemma) for w in self._synset(offset)[0]}
        found.discard(lemma.replace("_", " "))
        return frozenset(found)

    def _related_uncached(self, word: str, senses: int) -> frozenset[str]:
        lemma = self.lemma(word)
        if lemma is None:
            return frozenset()
        found: set[str] = set()
        for offset in self._offsets(lemma)[:senses]:
            words, related = self._synset(offset)
            found.update(words)
            for target in related:
                found.update(self._synset(target)[0])
        found.discard(lemma.replace("_", " "))
        return frozenset(found)

    def _offsets_uncached(self, lemma: str) -> tuple[int, ...]:
        """The offsets of the lemma's noun synsets, WordNet's most frequent sense first."""
        line = _find_line(self._data, self._index, lemma.encode())
        return () if line is None else tuple(int(f) for f in line.split()[1:])

    def _synset(self, offset: int) -> tuple[list[str], list[int]]:
        """The words of a synset (spaced), and the offsets of the synsets one step more general or specific."""
        start, last = self._synsets[0] + offset, self._synsets[1]
        end = self._data.find(b"\n", start, last)
        line = self._data[start : last if end < 0 else end]
        names, related = line.decode("utf-8").split("|")
        return [w.replace("_", " ") for w in names.split()], [int(t) for t in related.split()]


def _find_line(data: bytes, span: tuple[int, int], key: bytes) -> bytes | None:
    """The line of the sorted lines in `data[span]` that starts with `key` and a space, by bisection over byte
    offsets."""
    first, last = span
    low, high = first, last
    while low < high:
        middle = (low + high) // 2
        start = max(data.rfind(b"\n", first, middle) + 1, first)
        end = data.find(b"\n", start, last)
        end = last if end < 0 else end
        found = data[start:end].split(b" ", 1)[0]
        if found < key:
            low = end + 1
        elif found > key:
            high = start
        else:
            return data[start:end]
    return None


@cache
def load_thesaurus() -> Thesaurus:
    """The thesaurus of the package's data file, read once, on the first question that needs it."""
    data = resources.files(__package__).joinpath(DATA_FILE).read_bytes()
    return Thesaurus(gzip.decompress(data))


def schema_synonyms(question: Question, lexicon: Lexicon, thesaurus: Thesaurus, senses: int) -> dict[str, list[str]]:
    """Words of table names WordNet relates to the question's words and two-word phrases that the schema
    lacks ("academic session" -> `semester`, "manufacturers" -> `maker`): phrase -> those words, each from a
    related noun all of whose words are words of table names, none a word the question says itself. Only a
    word's first `senses` senses are read, WordNet's most frequent (a word's rarer senses relate it to anything),
    and only words used more as nouns than otherwise ("quarterly", "insured" are not)."""
    plain = [w for w in question.split if w.isalpha()]
    phrases = [" ".join(plain[i : i + 2]) for i in range(len(plain) - 1)]
    phrases += [w for w in plain if len(w) > 2 and w not in STOPWORDS and w not in QUERY_NOISE]
    targets = _name_words(lexicon)[0]
    said = {stem(w) for w in plain}
    found: dict[str, list[str]] = {}
    for phrase in dict.fromkeys(phrases):
        stems = [stem(w) for w in phrase.split()]
        if all(s in lexicon.name_words for s in stems):
            continue
        lemma = thesaurus.lemma(phrase)
        if lemma is None or not thesaurus.mostly_noun(phrase, lemma):
            continue
        named = set()
        for related in thesaurus.related(lemma, senses):
            # "course of study" is a course: a noun phrase with "of" is read by the noun it opens with.
            parts = [stem(w) for w in words(related.split(" of ", 1)[0])]
            if parts and all(p in targets for p in parts):
                named.update(parts)
        named -= said  # a word the question says already names what it names
        if named:
            found[phrase] = sorted(named)
    return found


def word_families(question: Question, lexicon: Lexicon) -> dict[str, list[str]]:
    """Words of table names of the same family as a question word the schema lacks, by their Snowball stem:
    "followers" -> `follows`, "liked" -> `likes`, "participators" -> `participants`. Word -> those words."""
    table_words, families = _families(lexicon)
    found: dict[str, list[str]] = {}
    for word in dict.fromkeys(w for w in question.split if w.isalpha() and len(w) > 3):
        if stem(word) in table_words or word in STOPWORDS or word in QUERY_NOISE:
            continue
        family = families.get(_STEMMER.stemWord(word), ())
        if family:
            found[word] = sorted(family)
    return found


@per_object(limit=16)
def _families(lexicon: Lexicon) -> tuple[frozenset[str], dict[str, set[str]]]:
    """The words of table names, and Snowball stem -> those with that stem (stems of four letters or more)."""
    families: dict[str, set[str]] = {}
    table_words = _name_words(lexicon)[0]
    for word in table_words:
        root = _STEMMER.stemWord(word)
        if len(root) >= 4 and word.isalpha():
            families.setdefault(root, set()).add(word)
    return table_words, families


def in_schema_words(question: Question, related: dict[str, list[str]]) -> list[str]:
    """The question's content words (as `tokenize` gives them), with each phrase the thesaurus related to
    schema words (`schema_synonyms`) counted as those words: "the vessels' banner" as `ship` and `flag`."""
    content = list(question.tokens)
    for phrase, named in related.items():
        said = {stem(w) for w in phrase.split()}
        content = [w for w in content if w not in said] + [w for w in named if w not in content]
    return content


def homeless_kin(unexplained: Sequence[str], lexicon: Lexicon, thesaurus: Thesaurus) -> dict[str, list[str]]:
    """For each word of the question no table explains, the words of table names that are its synonyms in any of
    WordNet's noun senses ("area" -> `domain`): such a table may be the word's home, so it is never flagged."""
    targets = _name_words(lexicon)[0]
    found: dict[str, list[str]] = {}
    for word in unexplained:
        named = set()
        for synonym in thesaurus.synonyms(word):
            parts = [stem(w) for w in words(synonym)]
            if parts and all(p in targets for p in parts):
                named.update(parts)
        if named:
            found[word] = sorted(named)
    return found


def tables_named(related: dict[str, list[str]], lexicon: Lexicon) -> dict[str, list[str]]:
    """Per phrase the thesaurus related to schema words, the tables whose own name has one of those words
    ("vessels" -> `ship` -> the table `Ship`)."""
    holding = _name_words(lexicon)[1]
    named = {}
    for phrase, schema_words in related.items():
        holders = {t for w in schema_words for t in holding.get(w, ())}
        if holders:
            named[phrase] = sorted(holders)
    return named


def with_schema_words(unit: str, related: dict[str, list[str]]) -> str:
    """A run of the question's words, followed by the schema words the thesaurus relates to its phrases."""
    said = set(words(unit))
    added = [w for phrase, named in related.items() if set(phrase.split()) <= said for w in named]
    return f"{unit} ({' '.join(dict.fromkeys(added))})" if added else unit


@per_object(limit=16)
def _name_words(lexicon: Lexicon) -> tuple[frozenset[str], dict[str, list[str]]]:
    """The words of table names, and the tables whose names have each: the same for every question on one
    schema, so kept (a warehouse has thousands of tables)."""
    holding: dict[str, list[str]] = {}
    for table, spellings in lexicon.table_phrases.items():
        for word in {w for p in spellings for w in p.split()}:
            holding.setdefault(word, []).append(table)
    return frozenset(holding), holding
