"""The question, read once: every reading of its text the signals and the accounting need, made in one place.

`score_tables` reads the question into one `Question` and hands it to every signal (names, values, shards,
synonyms, the thesaurus, word families, coverage, the accounting); none of them tokenises the text again.
"""

from __future__ import annotations

from dataclasses import dataclass

from sophrosyne.base.words import QUERY_NOISE, STOPWORDS, stemmed, tokenize, word_tokens, words
from sophrosyne.directives.knowledge import capitalised_phrases, infer_identifiers, quoted_literals
from sophrosyne.directives.units import question_numbers


@dataclass(frozen=True)
class Question:
    """One question's readings. `words` are as written (lower-cased, in order); `split` has identifiers split
    (`customer_id` -> customer, id); `tokens` are the stemmed words less stopwords (what BM25 reads), `content`
    those less query words and numbers (what two texts must share to be about one thing); `stems` the whole
    text stemmed (exact name matching); `runs` the runs of content words (a stand-in for noun phrases);
    `quoted` and `names` its quoted literals and capitalised phrases (values and names it writes);
    `identifiers` the code-like names it writes (`order_items.price`); `numbers` its numbers of two digits or
    more and months with their year (`202204`)."""

    text: str
    words: tuple[str, ...]
    split: tuple[str, ...]
    tokens: tuple[str, ...]
    content: tuple[str, ...]
    stems: str
    runs: tuple[str, ...]
    quoted: tuple[str, ...]
    names: tuple[str, ...]
    identifiers: tuple[str, ...]
    numbers: frozenset[str]

    @classmethod
    def read(cls, text: str) -> Question:
        plain = word_tokens(text)
        tokens = tokenize(text)
        return cls(
            text=text,
            words=tuple(plain),
            split=tuple(words(text)),
            tokens=tuple(tokens),
            content=tuple(t for t in tokens if t not in QUERY_NOISE and not t.isdigit()),
            stems=stemmed(text),
            runs=tuple(_runs(plain)),
            quoted=tuple(quoted_literals(text)),
            names=tuple(capitalised_phrases(text)),
            identifiers=tuple(i for i in infer_identifiers(text)[0] if "_" in i or "." in i),
            numbers=frozenset(question_numbers(text)),
        )

    @property
    def units(self) -> list[str]:
        """The question and its runs of content words: what retrieval searches."""
        return [self.text, *self.runs]


def _runs(plain: list[str]) -> list[str]:
    runs: list[str] = []
    run: list[str] = []
    for word in [*plain, "the"]:
        if word in STOPWORDS or word in QUERY_NOISE:
            if run:
                runs.append(" ".join(run))
            run = []
        else:
            run.append(word)
    return runs
