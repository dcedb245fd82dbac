"""Scoring: every visible table's features, combined by the fitted model into a probability of being needed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sophrosyne.base.memo import per_object
from sophrosyne.base.words import QUERY_NOISE, stemmed, word_tokens
from sophrosyne.directives.accounting import Account, account, related_stems, stems_of, thing_words
from sophrosyne.directives.knowledge import (
    PASSAGE_CHARS,
    Knowledge,
    knowledge_text,
    knowledge_units,
    passages,
    relevant_passages,
)
from sophrosyne.directives.model import DirectiveSettings, probability
from sophrosyne.directives.question import Question
from sophrosyne.directives.short_names import shortened_names
from sophrosyne.directives.signals import Board, TableSignals, name_signals, retrieval_signals, value_signals
from sophrosyne.directives.thesaurus import (
    homeless_kin,
    in_schema_words,
    load_thesaurus,
    schema_synonyms,
    tables_named,
    with_schema_words,
    word_families,
)
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

    board: Board
    lexicon: Lexicon
    abstain_note: str = ""
    anchor_groups: list[list[str]] = field(default_factory=list)  # holders of each column the knowledge names
    has_knowledge: bool = True
    text: str = ""  # the question and its knowledge, for what the decision reads from them (twins told apart)
    question_words: int = 0  # content words of the question: a long one is held to a lower threshold
    schemas: dict[str, str] = field(default_factory=dict)  # table -> its schema, in a catalog of several
    named_schemas: set[str] = field(default_factory=set)  # schemas the question names ("World Bank data")
    # Per question phrase the thesaurus relates to schema words, the tables whose name has one of them.
    synonym_groups: list[list[str]] = field(default_factory=list)
    account: Account = field(default_factory=lambda: Account((), (), frozenset()))
    # Tables whose names are WordNet synonyms (any sense) of a word no table explains: its possible homes.
    kin: frozenset[str] = frozenset()

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
    # The question is read once, here; every signal below takes this reading (`Question`), none the text.
    asked = Question.read(question)
    text = knowledge_text(knowledge)
    chosen: list[str] | None = None
    if len(text) > settings.knowledge_chars:
        chosen = _focus(asked, text, index, settings.knowledge_chars // PASSAGE_CHARS)
        text = "\n".join(chosen)
    has_knowledge = bool(text.strip())
    lexicon = lexicon_for(catalog)
    board = Board(lexicon.tables, lexicon.position)
    if not board:
        board.sealed = True
        return TableScores(board, lexicon, "the database has no tables", text=f"{question} {text}")
    anchor_groups = name_signals(asked, text, lexicon, board)
    for word in set(asked.tokens):
        if len(word) >= 3:
            for t in lexicon.value_words.get(word, ()):
                if t in board:
                    board[t].note("value_desc_word", 1.0)
    value_signals(asked, text, catalog, value_index, board)
    if units is not None:
        # A shard's date or release is a value of the group's partition, written in the question.
        named = [t for t in shards_named(asked.numbers, units) if t in board]
        numbers = asked.numbers if named else set()
        for t in named:
            board[t].note("value_mention", 1.0 / len(named), "the question names one of its shards")
            # ... and is kept as a value of the question is (`TableSignals.values`): never flagged for it.
            board[t].hold(", ".join(sorted(units.shard_keys[t] & numbers)))
    searches = asked.units
    synonym_groups: dict[str, list[str]] = {}
    standing_in = synonyms(asked, lexicon, index, settings.synonym_similarity)
    found = list(standing_in.values())
    related = schema_synonyms(asked, lexicon, load_thesaurus(), settings.thesaurus_senses)
    # A word of a table name's family is as good as a synonym ("followers" for `follows`), WordNet or not.
    for word, family in word_families(asked, lexicon).items():
        related.setdefault(word, family)
    if related:
        found += [w for named in related.values() for w in named if w not in found]
        synonym_groups = tables_named(related, lexicon)
        # ... and each run of its words with the schema's words for its phrases: "vessels (ship)".
        searches[1:] = [with_schema_words(unit, related) for unit in searches[1:]]
    # A word a table's name (or a column's) writes in short names that table as a synonym does ("district" for
    # `DIM_DSTR`); a form more than `holders` tables share says no table, and explains no word.
    short = shortened_names([*asked.words, *word_tokens(text)], lexicon, load_thesaurus())
    short = {word: tables for word, tables in short.items() if len(tables) <= settings.holders}
    for word, tables in short.items():
        synonym_groups.setdefault(word, tables)
    if found:
        # The question is also searched with the schema's words for its own: "trophy" as `awards`.
        searches[0] = f"{question} ({' '.join(found)})"
    # A document's passages are searched whole: clause by clause, 16 passages made 150 searches a question.
    searched = chosen if chosen is not None else knowledge_units(text)
    retrieval_signals(searched, searches, index, lexicon, settings.rrf_k, board)
    coverage = _table_features(asked, has_knowledge, lexicon, board, related)
    explained = stems_of(v for e in board.entries.values() for v in e.values)
    # A word the question writes as a name ("Data Structures", 'Matter of Time') is explained by the schema's own
    # words or the data, not by a word related to it: a course called "Data Structures" is no `building`.
    as_names = stems_of([*asked.names, *asked.quoted])
    explained |= (related_stems(related) | set(standing_in) | stems_of(short)) - as_names
    explained |= stems_of([text])
    things = thing_words(load_thesaurus())
    accounted = account(asked, lexicon, catalog, value_index, explained, things)
    kin_tables = _kin_tables(homeless_kin(accounted.unexplained, lexicon, load_thesaurus()), lexicon, settings.holders)
    weights = settings.model.fit_for(has_knowledge).weights
    for entry in board.own():
        entry.score = probability(entry.features, weights)
        entry.reason = entry.explain(weights)
    board.sealed = True
    abstain = ""
    grounded = bool(short) or any(e.features.get(f) for e in board.own() for f in _STRONG)
    if not has_knowledge and coverage == 0.0 and not grounded:
        # No word of the question is a word of the schema, and nothing is named or grounded: any pick would
        # rest on fuzzy similarity alone, so say nothing rather than name tables at random.
        abstain = "nothing in the question names or resembles a table, column or value closely enough"
    schemas, names = _schemas_of(catalog)
    several = len(names) > 1
    return TableScores(
        board,
        lexicon,
        abstain_note=abstain,
        anchor_groups=anchor_groups,
        has_knowledge=has_knowledge,
        text=f"{question} {text}",
        question_words=len(asked.content),
        schemas=schemas if several else {},
        named_schemas=_named_schemas(asked, set(names)) if several else set(),
        synonym_groups=list(synonym_groups.values()),
        account=accounted,
        kin=kin_tables,
    )


def _kin_tables(kin: dict[str, list[str]], lexicon: Lexicon, holders: int) -> frozenset[str]:
    """Per unexplained word, the tables named by its synonym itself (`domain` for "area"), else those whose
    names have the synonym when at most `holders` do."""
    kept: set[str] = set()
    named = tables_named(kin, lexicon)
    for word, synonyms in kin.items():
        exact = {t for s in synonyms for t in lexicon.phrase_tables.get(s, ())}
        if exact:
            kept |= exact
        elif len(named.get(word, ())) <= holders:
            kept.update(named.get(word, ()))
    return frozenset(kept)


@per_object(limit=256)
def _schemas_of(catalog: Catalog) -> tuple[dict[str, str], frozenset[str]]:
    """Table -> its schema, and the schemas, kept per catalog (a catalog does not change once read; 5,000
    tables cost 3 ms a question to read again)."""
    schemas = {t.name: t.schema or "" for t in catalog.tables.values()}
    return schemas, frozenset(schemas.values())


def _named_schemas(question: Question, schemas: set[str]) -> set[str]:
    """Schemas (a warehouse's datasets) the question names by their name or its first two words, spaced any
    way: `covid19_jhu_csse` by "COVID-19", `world_bank_wdi` by "World Bank", `PANCANCER_ATLAS` by "PanCancer Atlas"."""
    words = question.stems.split()
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
        if lexicon.name_words:
            synonyms(Question.read("xqzv"), lexicon, index, settings.synonym_similarity)


def synonyms(question: Question, lexicon: Lexicon, index: SchemaIndex, similarity: float) -> dict[str, str]:
    """Schema words standing in for question words the schema lacks, by embedding similarity of the words
    (`supervisor` -> `manager`): question word -> the nearest schema word, when it is near enough."""
    missing = [w for w in dict.fromkeys(question.tokens) if w not in lexicon.name_words and len(w) > 2]
    missing = [w for w in missing if not w.isdigit() and w not in QUERY_NOISE]
    if not missing or not lexicon.name_words:
        return {}
    key = ("vocabulary", id(lexicon))
    cached = index.derived.get(key)
    if cached is None or cached[0] is not lexicon:
        words = sorted(w for w in lexicon.name_words if len(w) > 2 and not w.isdigit())
        cached = (lexicon, (words, index.embed(words) if words else np.zeros((0, 1), np.float32)))
        index.derived[key] = cached
    vocabulary, vectors = cached[1]
    if not vocabulary:
        return {}
    sims = index.embed(missing) @ vectors.T
    best = sims.argmax(axis=1)
    return {missing[i]: vocabulary[j] for i, j in enumerate(best) if sims[i, j] >= similarity}


def _focus(question: Question, document: str, index: SchemaIndex, keep: int) -> list[str]:
    """A long knowledge document (a manual, a schema guide) reduced to the passages about the question.

    A document's passages and their vectors are kept: many questions share one document."""
    key = (index.embedder.name, hash(document))
    if key not in _PASSAGES:
        if len(_PASSAGES) >= 64:
            _PASSAGES.clear()
        parts = passages(document)
        _PASSAGES[key] = (parts, index.embed(parts) if parts else np.zeros((0, 1), np.float32))
    parts, vectors = _PASSAGES[key]
    similarity = [float(v) for v in vectors @ index.embed([question.text])[0]] if parts else None
    return relevant_passages(
        question.content, document, similarity, keep=keep, max_chars=keep * PASSAGE_CHARS, parts=parts
    )


def _table_features(
    question: Question, has_knowledge: bool, lexicon: Lexicon, board: Board, related: dict[str, list[str]]
) -> float:
    """Features of a table among the others (ranks, word coverage, neighbours); returns the question's coverage.
    Words are counted in the schema's words where the thesaurus relates them (`related`).

    Tables with a signal of their own or a named neighbour are given features one by one; the features of the
    others depend only on how many of the question's words they have (how many no other table has, how many
    other tables have), so the tables alike in those counts share one entry (`Board.share`)."""
    named = {t for t, e in board.entries.items() if e.features.get("anchor") or e.features.get("table_named")}
    position = board.position
    for feature, rank_feature in (("ret_question", "rank_question"), ("ret_phrase", "rank_phrase")):
        # Ranks among the tables scoring above zero, ties in catalog order: those of a sort of every table.
        ranked = [(t, e) for t, e in board.entries.items() if e.features.get(feature, 0.0) > 0]
        ranked.sort(key=lambda te: (-te[1].features[feature], position[te[0]]))
        for rank, (_, entry) in enumerate(ranked, start=1):
            entry.features[rank_feature] = 1.0 / rank
    content = in_schema_words(question, related)
    coverage = sum(w in lexicon.name_words for w in content) / len(content) if content else 0.0
    words = sorted(set(content))
    empty = np.zeros(0, np.int64)
    rows = [lexicon.word_rows.get(w, empty) for w in words]
    holders = {w: len(r) for w, r in zip(words, rows, strict=True)}  # how many tables have each word
    neighbours = set().union(*(lexicon.graph.get(t, set()) for t in named))
    for t in neighbours:
        board.entry(t)  # a neighbour of a named table has a feature of its own
    free = np.zeros(len(board), np.bool_)
    for r in rows:
        free[r] = True
    free[[position[t] for t in board.entries]] = False  # a table with none of the words is left to `rest`
    if free.any():
        owns = np.zeros((int(free.sum()), len(words)), np.bool_)
        place = np.cumsum(free) - 1
        for i, r in enumerate(rows):
            owns[place[r[free[r]]], i] = True
        held = np.array([holders[w] for w in words], np.int64)
        counts = np.stack([owns.sum(axis=1), owns[:, held == 1].sum(axis=1), ((held - owns) > 0).sum(axis=1)], axis=1)
        width = len(words) + 1
        keys, inverse, sizes = np.unique(counts @ [width * width, width, 1], return_inverse=True, return_counts=True)
        tables = lexicon.table_array[free][np.argsort(inverse.ravel(), kind="stable")]
        for key, group in zip(keys.tolist(), np.split(tables, np.cumsum(sizes)), strict=False):
            entry = TableSignals()
            _word_features(entry, (key // (width * width), key // width % width, key % width), words, coverage)
            board.share(group.tolist(), entry)
    content_set = set(words)
    for table, entry in [*board.entries.items(), ("", board.rest)]:
        own = content_set & lexicon.table_words.get(table, set())
        only = sum(holders[w] == 1 for w in own)
        others = sum(holders[w] - (w in own) > 0 for w in words)
        _word_features(entry, (len(own), only, others), words, coverage)
    each: list[tuple[str | None, TableSignals]] = [*board.entries.items(), *((None, e) for e in board.groups)]
    for name, entry in [*each, (None, board.rest)]:
        if name in neighbours:
            entry.features["neighbor"] = 1.0
        if named - {name}:
            entry.features["others_anchored"] = 1.0
        entry.features["small_schema"] = 1.0 / len(board)
        entry.features["no_knowledge"] = 0.0 if has_knowledge else 1.0
    return coverage


def _word_features(entry: TableSignals, counts: tuple[int, int, int], words: list[str], coverage: float) -> None:
    """The features of the question's words a table has: `counts` of them it has, that no other table has,
    and of the question's words that other tables have."""
    if words:
        own, only, others = counts
        entry.features["own_cover"] = own / len(words)
        entry.features["only_cover"] = only / len(words)
        entry.features["others_cover"] = others / len(words)
    entry.features["coverage"] = coverage
    entry.features["coverage_gap"] = coverage * (1.0 - entry.features.get("rank_question", 0.0))
