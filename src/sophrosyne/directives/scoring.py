"""Scoring: every visible table's features, combined by the fitted model into a probability of being needed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sophrosyne.base.words import QUERY_NOISE, stemmed, tokenize
from sophrosyne.directives.knowledge import (
    Knowledge,
    knowledge_text,
    knowledge_units,
    passages,
    question_units,
    relevant_passages,
    tokenize_words,
)
from sophrosyne.directives.model import DirectiveSettings, probability
from sophrosyne.directives.signals import TableSignals, name_signals, retrieval_signals, value_signals
from sophrosyne.directives.units import Units, shards_named
from sophrosyne.index.lexicon import Lexicon, lexicon_for
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.values import ValueIndex
from sophrosyne.index.vectors import one_blas_thread
from sophrosyne.schema.catalog import Catalog

# Signals that name or ground a table outright; a knowledge-less question with none of them, and no word of the
# schema, gets no directives.
_STRONG = ("anchor", "anchor_shared", "table_named", "column_phrase", "column_phrase_shared", "value")


@dataclass
class TableScores:
    """Per-table relevance for one question: features, a score in [0, 1], and the most telling reason."""

    board: dict[str, TableSignals]
    lexicon: Lexicon
    abstain_note: str = ""
    anchor_groups: list[list[str]] = field(default_factory=list)  # holders of each column the knowledge names
    has_knowledge: bool = True
    text: str = ""  # the question and its knowledge, for what the decision reads from them (twins told apart)
    question_words: int = 0  # content words of the question: a long one is held to a lower threshold
    schemas: dict[str, str] = field(default_factory=dict)  # table -> its schema, in a catalog of several
    named_schemas: set[str] = field(default_factory=set)  # schemas the question names ("World Bank data")

    @property
    def scores(self) -> dict[str, float]:
        return {t: e.score for t, e in self.board.items()}


def score_tables(
    question: str,
    knowledge: Knowledge,
    catalog: Catalog,
    index: SchemaIndex,
    value_index: ValueIndex | None = None,
    settings: DirectiveSettings | None = None,
    units: Units | None = None,
) -> TableScores:
    """Score every visible table by what in the question and knowledge points to it. With `units`, a number of
    the question that names one of a shard group's tables (`2015` for `gsod2015`) grounds the group."""
    with one_blas_thread():
        return _score_tables(question, knowledge, catalog, index, value_index, settings or DirectiveSettings(), units)


def _score_tables(
    question: str,
    knowledge: Knowledge,
    catalog: Catalog,
    index: SchemaIndex,
    value_index: ValueIndex | None,
    settings: DirectiveSettings,
    units: Units | None = None,
) -> TableScores:
    text = knowledge_text(knowledge)
    chosen: list[str] | None = None
    if len(text) > settings.long_knowledge_chars:
        chosen = _focus(question, text, index, settings.knowledge_passages)
        text = "\n".join(chosen)
    has_knowledge = bool(text.strip())
    lexicon = lexicon_for(catalog)
    board = {t: TableSignals() for t in catalog.tables}
    if len(board) <= settings.min_tables:
        return TableScores(board, lexicon, "the database has too few tables", text=f"{question} {text}")
    anchor_groups = name_signals(question, text, lexicon, board)
    for word in set(tokenize(question)):
        if len(word) >= 3:
            for t in lexicon.value_words.get(word, ()):
                if t in board:
                    board[t].note("value_desc_word", 1.0)
    if settings.values:
        value_signals(question, text, catalog, value_index, board)
    if units is not None:
        # A shard's date or release is a value of the group's partition, written in the question.
        named = [t for t in shards_named(question, units) if t in board]
        for t in named:
            board[t].note("value_mention", 1.0 / len(named), "the question names one of its shards")
    asked = question_units(question)
    if settings.synonyms:
        found = synonyms(question, lexicon, index, settings.synonym_similarity)
        if found:
            # The question is also searched with the schema's words for its own: "trophy" as `awards`.
            asked[0] = f"{question} ({' '.join(found)})"
    # A document's passages are searched whole: clause by clause, 16 passages made 150 searches a question.
    searched = chosen if chosen is not None else knowledge_units(text)
    retrieval_signals(searched, asked, index, lexicon, settings.rrf_k, board)
    coverage = _table_features(question, has_knowledge, lexicon, board)
    weights = settings.model.fit_for(has_knowledge).weights
    for entry in board.values():
        entry.score = probability(entry.features, weights)
        entry.reason = entry.explain(weights)
    abstain = ""
    if not has_knowledge and coverage == 0.0 and not any(e.features.get(f) for e in board.values() for f in _STRONG):
        # No word of the question is a word of the schema, and nothing is named or grounded: any pick would
        # rest on fuzzy similarity alone, so say nothing rather than name tables at random.
        abstain = "nothing in the question names or resembles a table, column or value closely enough"
    schemas = {t.name: t.schema or "" for t in catalog.tables.values()}
    several = len(set(schemas.values())) > 1
    return TableScores(
        board,
        lexicon,
        abstain_note=abstain,
        anchor_groups=anchor_groups,
        has_knowledge=has_knowledge,
        text=f"{question} {text}",
        question_words=len(tokenize_words(question)),
        schemas=schemas if several else {},
        named_schemas=_named_schemas(question, set(schemas.values())) if several else set(),
    )


def _named_schemas(question: str, schemas: set[str]) -> set[str]:
    """Schemas (a warehouse's datasets) the question names by their name or its first two words, spaced any
    way: `covid19_jhu_csse` by "COVID-19", `world_bank_wdi` by "World Bank", `PANCANCER_ATLAS` by "PanCancer Atlas"."""
    words = stemmed(question).split()
    compact = {"".join(words[i : i + n]) for n in range(1, 7) for i in range(len(words) - n + 1)}
    named = set()
    for schema in schemas:
        parts = stemmed(schema.rsplit(".", 1)[-1]).split()
        for phrase in {" ".join(parts), " ".join(parts[:2])}:
            if (" " in phrase or len(phrase) >= 4) and phrase.replace(" ", "") in compact:
                named.add(schema)
    return named


_PASSAGES: dict[tuple[str, int], tuple[list[str], npt.NDArray[np.float32]]] = {}


def warm(catalog: Catalog, index: SchemaIndex, settings: DirectiveSettings | None = None) -> None:
    """Derive now what every question on this schema reuses (lexicon, column maps, schema vocabulary
    vectors), so the first question costs what the others do: part of building the index, not of answering."""
    settings = settings or DirectiveSettings()
    with one_blas_thread():
        _score_tables("warm up", "", catalog, index, None, settings)
        lexicon = lexicon_for(catalog)
        if settings.synonyms and lexicon.name_words:
            synonyms("xqzv", lexicon, index, settings.synonym_similarity)


def synonyms(question: str, lexicon: Lexicon, index: SchemaIndex, similarity: float) -> list[str]:
    """Schema words standing in for question words the schema lacks, by embedding similarity of the words
    (`supervisor` -> `manager`): the nearest schema word of each, when it is near enough."""
    missing = [w for w in dict.fromkeys(tokenize(question)) if w not in lexicon.name_words and len(w) > 2]
    missing = [w for w in missing if not w.isdigit() and w not in QUERY_NOISE]
    if not missing or not lexicon.name_words:
        return []
    key = ("vocabulary", id(lexicon))
    cached = index.derived.get(key)
    if cached is None or cached[0] is not lexicon:
        words = sorted(w for w in lexicon.name_words if len(w) > 2 and not w.isdigit())
        cached = (lexicon, (words, index.embed(words) if words else np.zeros((0, 1), np.float32)))
        index.derived[key] = cached
    vocabulary, vectors = cached[1]
    if not vocabulary:
        return []
    sims = index.embed(missing) @ vectors.T
    best = sims.argmax(axis=1)
    return [vocabulary[j] for i, j in enumerate(best) if sims[i, j] >= similarity]


def _focus(question: str, document: str, index: SchemaIndex, keep: int) -> list[str]:
    """A long knowledge document (a manual, a schema guide) reduced to the passages about the question.

    A document's passages and their vectors are kept: many questions share one document."""
    key = (index.embedder.name, hash(document))
    if key not in _PASSAGES:
        if len(_PASSAGES) >= 64:
            _PASSAGES.clear()
        parts = passages(document)
        _PASSAGES[key] = (parts, index.embed(parts) if parts else np.zeros((0, 1), np.float32))
    parts, vectors = _PASSAGES[key]
    similarity = [float(v) for v in vectors @ index.embed([question])[0]] if parts else None
    return relevant_passages(question, document, similarity, keep=keep, max_chars=keep * 600, parts=parts)


def _table_features(question: str, has_knowledge: bool, lexicon: Lexicon, board: dict[str, TableSignals]) -> float:
    """Features of a table among the others (ranks, word coverage, neighbours); returns the question's coverage."""
    named = {t for t, e in board.items() if e.features.get("anchor") or e.features.get("table_named")}
    for feature, rank_feature in (("ret_question", "rank_question"), ("ret_phrase", "rank_phrase")):
        ordered = sorted(board, key=lambda t: -board[t].features.get(feature, 0.0))
        for rank, table in enumerate(ordered, start=1):
            if board[table].features.get(feature, 0.0) > 0:
                board[table].features[rank_feature] = 1.0 / rank
    content = tokenize(question)
    coverage = sum(w in lexicon.name_words for w in content) / len(content) if content else 0.0
    content_set = set(content)
    owned = {t: content_set & lexicon.table_words.get(t, set()) for t in board}
    holders = Counter(w for words in owned.values() for w in words)  # how many tables have each word
    for table, entry in board.items():
        if content_set:
            own = owned[table]
            only = {w for w in own if holders[w] == 1}
            others = {w for w in content_set if holders[w] - (w in own) > 0}
            entry.features["own_cover"] = len(own) / len(content_set)
            entry.features["only_cover"] = len(only) / len(content_set)
            entry.features["others_cover"] = len(others) / len(content_set)
        entry.features["coverage"] = coverage
        entry.features["coverage_gap"] = coverage * (1.0 - entry.features.get("rank_question", 0.0))
        if lexicon.graph.get(table, set()) & named:
            entry.features["neighbor"] = 1.0
        if named - {table}:
            entry.features["others_anchored"] = 1.0
        entry.features["small_schema"] = 1.0 / len(board)
        entry.features["no_knowledge"] = 0.0 if has_knowledge else 1.0
    return coverage
