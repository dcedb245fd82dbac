"""The thesaurus: nouns WordNet relates to a word (its synonyms, one step more general or more specific), offline."""

from __future__ import annotations

import mmap
from functools import lru_cache
from pathlib import Path

import Stemmer

from sophrosyne.base.memo import per_object
from sophrosyne.base.words import QUERY_NOISE, STOPWORDS, stem, tokenize, words
from sophrosyne.index.lexicon import Lexicon

_STEMMER = Stemmer.Stemmer("english")

WORDNET = Path("/usr/share/wordnet")  # Debian's wordnet-base: WordNet 3.0's database files
# WordNet's rules for a plural noun's singular (morphy), after its list of irregular forms (noun.exc).
_NOUN_ENDINGS = (("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"), ("ies", "y"))
# WordNet's rules of detachment for verbs and adjectives (its `morphy`), after its exception lists.
_OTHER_ENDINGS = (
    ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""), ("s", ""),
    ("est", ""), ("est", "e"), ("er", ""), ("er", "e"),
)  # fmt: skip
# Pointers followed from a sense: its hypernyms (@, @i) and hyponyms (~, ~i). Parts and wholes, and derived
# forms, relate words that name different things (`wheel` is part of `car`).
_RELATIONS = frozenset({"@", "@i", "~", "~i"})


class Thesaurus:
    """WordNet's nouns, read from its index and data files in place (memory-mapped, searched by bisection:
    nothing is parsed up front, so loading costs nothing and a look-up a few microseconds)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._index = _mapped(folder / "index.noun")
        self._others = [_mapped(folder / f"index.{pos}") for pos in ("verb", "adj", "adv")]
        self._data = _mapped(folder / "data.noun")
        self._irregular: dict[str, str] = {}
        for line in (folder / "noun.exc").read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                self._irregular.setdefault(parts[0], parts[1])
        self._other_irregular: dict[str, str] = {}
        for pos in ("verb", "adj"):
            for line in (folder / f"{pos}.exc").read_text(encoding="utf-8").splitlines():
                parts = line.split()
                if len(parts) >= 2:
                    self._other_irregular.setdefault(parts[0], parts[1])
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
        return any(c and _find_line(index, c.encode()) is not None for c in candidates for index in self._others)

    def senses(self, lemma: str) -> int:
        """How many noun senses the lemma has."""
        return len(self._offsets(lemma))

    def mostly_noun(self, word: str, lemma: str) -> bool:
        """Whether the word has more senses as a noun than as a verb, an adjective or an adverb
        ("quarterly", "insured" are mostly not nouns)."""
        nouns = self.senses(lemma)
        for index in self._others:
            line = _find_line(index, word.lower().replace(" ", "_").encode())
            if line is not None and int(line.split()[2]) >= nouns:
                return False
        return True

    def related(self, word: str, senses: int) -> frozenset[str]:
        """Lemmas (spaced words: `medical care`) of the word's first `senses` noun senses, WordNet's most
        frequent first, and of the senses one step more general or more specific than each."""
        return self._related(word, senses)

    def _related_uncached(self, word: str, senses: int) -> frozenset[str]:
        lemma = self.lemma(word)
        if lemma is None:
            return frozenset()
        found: set[str] = set()
        for offset in self._offsets(lemma)[:senses]:
            words, pointers = self._synset(offset)
            found.update(words)
            for symbol, target in pointers:
                if symbol in _RELATIONS:
                    found.update(self._synset(target)[0])
        found.discard(lemma.replace("_", " "))
        return frozenset(found)

    def _offsets_uncached(self, lemma: str) -> tuple[int, ...]:
        line = _find_line(self._index, lemma.encode())
        if line is None:
            return ()
        fields = line.split()
        pointer_count = int(fields[3])
        return tuple(int(f) for f in fields[6 + pointer_count :])

    def _synset(self, offset: int) -> tuple[list[str], list[tuple[str, int]]]:
        """The words of the synset at this byte offset of data.noun, and its noun pointers (symbol, offset)."""
        end = self._data.find(b"\n", offset)
        fields = self._data[offset:end].split(b" | ", 1)[0].decode("utf-8", "replace").split()
        count = int(fields[3], 16)
        words = [fields[4 + 2 * i].lower().replace("_", " ") for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for i in range(int(fields[at])):
            symbol, target, pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
            if pos == "n":
                pointers.append((symbol, int(target)))
        return words, pointers


def _mapped(path: Path) -> mmap.mmap:
    with path.open("rb") as file:
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _find_line(data: mmap.mmap, key: bytes) -> bytes | None:
    """The line of a sorted index file that starts with `key` and a space, by bisection over byte offsets."""
    low, high = 0, len(data)
    while low < high:
        middle = (low + high) // 2
        start = data.rfind(b"\n", 0, middle) + 1
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        found = data[start:end].split(b" ", 1)[0]
        if data[start : start + 1] == b" " or found < key:  # the licence at the top sorts before every entry
            low = end + 1
        elif found > key:
            high = start
        else:
            return data[start:end]
    return None


_FILES = ("index.noun", "data.noun", "noun.exc", "index.verb", "index.adj", "index.adv", "verb.exc", "adj.exc")


@lru_cache(maxsize=4)
def load_thesaurus(folder: Path = WORDNET) -> Thesaurus | None:
    """The thesaurus in `folder`, or None where its files are not installed (`apt-get install wordnet-base`)."""
    if not all((folder / name).is_file() for name in _FILES):
        return None
    return Thesaurus(folder)


def schema_synonyms(
    question: str, lexicon: Lexicon, thesaurus: Thesaurus, senses: int, max_senses: int
) -> dict[str, list[str]]:
    """Words of table names WordNet relates to the question's words and two-word phrases that the schema
    lacks ("academic session" -> `semester`, "manufacturers" -> `maker`): phrase -> those words, each from a
    related noun all of whose words are words of table names, none a word the question says itself. Only the
    first `senses` senses of a word with at most `max_senses` of them are read (a word of many senses relates
    to anything), and only words used more as nouns than otherwise ("quarterly", "insured" are not)."""
    plain = [w for w in words(question) if w.isalpha()]
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
        if lemma is None or thesaurus.senses(lemma) > max_senses or not thesaurus.mostly_noun(phrase, lemma):
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


def word_families(question: str, lexicon: Lexicon) -> dict[str, list[str]]:
    """Words of table names of the same family as a question word the schema lacks, by their Snowball stem:
    "followers" -> `follows`, "liked" -> `likes`, "participators" -> `participants`. Word -> those words."""
    table_words, families = _families(lexicon)
    found: dict[str, list[str]] = {}
    for word in dict.fromkeys(w for w in words(question) if w.isalpha() and len(w) > 3):
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


def in_schema_words(question: str, related: dict[str, list[str]]) -> list[str]:
    """The question's content words (as `tokenize` gives them), with each phrase the thesaurus related to
    schema words (`schema_synonyms`) counted as those words: "the vessels' banner" as `ship` and `flag`."""
    content = tokenize(question)
    for phrase, named in related.items():
        said = {stem(w) for w in phrase.split()}
        content = [w for w in content if w not in said] + [w for w in named if w not in content]
    return content


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
