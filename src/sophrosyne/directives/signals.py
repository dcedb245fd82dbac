"""Signals: what in a question and its knowledge points at each table (names, values, hybrid retrieval)."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sophrosyne.base.memo import per_object
from sophrosyne.base.text import normalize as normalize_value
from sophrosyne.base.text import shorten
from sophrosyne.base.words import STOPWORDS, stemmed
from sophrosyne.directives.knowledge import infer_identifiers, listed_names, quoted_literals
from sophrosyne.directives.question import Question
from sophrosyne.index.fusion import fuse_rankings, top_ranked
from sophrosyne.index.lexicon import Lexicon
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.values import ValueIndex
from sophrosyne.schema.catalog import Catalog

HELD = frozenset({"value", "value_shared", "value_mention"})  # features of a value of the question found in it
RETRIEVAL_DEPTH = 50  # ranks per retriever that count in the fusion: deeper ones would add under 1 / (rrf_k + 50)


@dataclass
class TableSignals:
    """What points at one table: feature values, what earned each (said as a reason), the question's values
    it holds, and (once scored) its probability and the reason the score rests on most."""

    features: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # feature -> what earned its value, as a reason
    values: list[str] = field(default_factory=list)  # the question's values it holds (the value index says so)
    score: float = 0.0
    reason: str = ""  # the reason of the feature that added the most to the score (`explain`)

    def note(self, feature: str, value: float, reason: str = "") -> None:
        """Raise a feature to `value`; the reason given with the highest value is the one kept for it."""
        if value > self.features.get(feature, 0.0):
            self.features[feature] = value
            if reason:
                self.reasons[feature] = reason
        elif reason and feature not in self.reasons:
            self.reasons[feature] = reason

    def hold(self, value: str) -> None:
        if value not in self.values:
            self.values.append(value)

    def explain(self, weights: Mapping[str, float]) -> str:
        """Why the table scored what it did, as a flagged table's reason: the feature that added the most to the
        score with these weights (the numbers that decided), a value it holds aside: a value of the question
        is never a reason to flag ("" when nothing added)."""
        added = [(weights.get(f, 0.0) * self.features.get(f, 0.0), f) for f in self.reasons if f not in HELD]
        best = max((a for a in added if a[0] > 0), default=None)
        return self.reasons[best[1]] if best else ""


class Board(Mapping[str, TableSignals]):
    """Every visible table's signals, in catalog order. A table gets its own entry when something is noted for
    it (or read of it) while signals are gathered. The others share entries, each scored once: the tables alike
    in the question's words they have one per kind (`share`), those with none of them `rest`. At warehouse
    scale most tables get no signal of their own, and 5,000 entries a question cost more than the signals.
    Once `sealed` (scored), reading a table without an entry gives `rest`."""

    def __init__(self, tables: Sequence[str], position: Mapping[str, int] | None = None) -> None:
        self.order = tables
        self.position = position if position is not None else {t: i for i, t in enumerate(tables)}
        self.entries: dict[str, TableSignals] = {}
        self.shared: dict[str, TableSignals] = {}
        self.groups: list[TableSignals] = []
        self.rest = TableSignals()
        self.sealed = False
        self._resolved: dict[str, TableSignals] | None = None

    def __getitem__(self, table: str) -> TableSignals:
        entry = self.entries.get(table) or self.shared.get(table)
        if entry is None:
            if table not in self.position:
                raise KeyError(table)
            if self.sealed:
                return self.rest
            entry = self.entries[table] = TableSignals()
        return entry

    def __contains__(self, table: object) -> bool:
        return table in self.position

    def __iter__(self) -> Iterator[str]:
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)

    def entry(self, table: str) -> TableSignals:
        """The table's own entry, made now if it has none."""
        entry = self.entries.get(table)
        if entry is None:
            entry = self.entries[table] = TableSignals()
        return entry

    def share(self, tables: list[str], entry: TableSignals) -> None:
        """One entry for these tables (none of which has its own)."""
        self.groups.append(entry)
        self.shared.update(dict.fromkeys(tables, entry))

    def own(self) -> list[TableSignals]:
        """Every distinct entry: the tables' own, the shared ones and `rest`."""
        return [*self.entries.values(), *self.groups, self.rest]

    def resolved(self) -> dict[str, TableSignals]:
        """Table -> its entry, in catalog order (kept once sealed)."""
        if self._resolved is not None:
            return self._resolved
        resolved = dict.fromkeys(self.order, self.rest)
        resolved.update(self.shared)
        resolved.update(self.entries)
        if self.sealed:
            self._resolved = resolved
        return resolved

    def items(self) -> ItemsView[str, TableSignals]:
        return self.resolved().items()

    def values(self) -> ValuesView[TableSignals]:
        return self.resolved().values()


def name_signals(question: Question, knowledge: str, lexicon: Lexicon, board: Board) -> list[list[str]]:
    """Exact names: columns written in the knowledge, table and column names in the text."""
    strong, weak = infer_identifiers(knowledge)
    strong += question.identifiers
    anchored: list[tuple[str, list[str]]] = []
    for ident in strong:
        table_part, _, column_part = ident.rpartition(".")
        holders = [t for t, _ in lexicon.raw_columns.get(column_part.lower(), [])]
        if not holders:
            holders = [t for t, _ in lexicon.columns.get(stemmed(column_part), [])]
        if table_part:
            qualified = [t for t in holders if t.lower() == table_part.lower()]
            holders = qualified or holders
        if holders:
            anchored.append((ident, sorted(set(holders))))
    for ident, holders in anchored:
        if len(holders) == 1:
            board[holders[0]].note("anchor", 1.0, f"the knowledge names its column `{ident}`")
    for ident, holders in anchored:
        if len(holders) > 1:
            resolved = any(board[t].features.get("anchor") for t in holders)
            for t in holders:
                board[t].note(
                    "anchor_resolved" if resolved else "anchor_shared",
                    1.0 / len(holders),
                    f"the knowledge names `{ident}`, a column it shares",
                )
    for ident in weak:
        holders = sorted({t for t, _ in lexicon.raw_columns.get(ident.lower(), [])})
        if len(holders) == 1:
            board[holders[0]].note("knowledge_word", 1.0, f"the knowledge says `{ident}`")
        for t in holders if len(holders) > 1 else []:
            board[t].note("knowledge_word_shared", 1.0 / len(holders), f"the knowledge says `{ident}`")
    # Spellings are looked up among the text's runs of words: a warehouse has tens of thousands of them.
    grams = lexicon.grams(f"{question.stems} {stemmed(knowledge)}" if knowledge else question.stems)
    # Compared without spaces too: `CytoBands_hg38` splits into three words, `CYTOBANDS_HG38` into two.
    compact = {g.replace(" ", "") for g in grams if " " in g}
    # The text's runs of words are looked up among the spellings (a warehouse has tens of thousands of them).
    named_tables = {t for g in grams for t in lexicon.phrase_tables.get(g, ())}
    named_tables.update(t for g in compact for t in lexicon.compact_tables.get(g, ()))
    for table in named_tables:
        board[table].note("table_named", 1.0, "the question names it")
    order = lexicon.column_phrases
    for phrase in sorted((p for p in grams if p in order), key=order.__getitem__):
        named = lexicon.columns[phrase]
        tables = {t for t, _ in named}
        feature = "column_phrase" if len(tables) == 1 else "column_phrase_shared"
        for t in tables:
            board[t].note(feature, 1.0, f"the question names its column `{named[0][1]}`")
    return [holders for _, holders in anchored]


def value_signals(
    question: Question, knowledge: str, catalog: Catalog, values: ValueIndex | None, board: Board
) -> None:
    """The question's values found in the data (value index) or in the column value descriptions: quoted
    literals, capitalised phrases (names: "Dean Peeters") and runs of its words. Each holder records the
    value (`TableSignals.values`): a table holding a value of the question is evidence, never one to flag."""
    quoted = [lit for lit in [*question.quoted, *quoted_literals(knowledge)] if len(lit.strip()) >= 2]
    named = [p for p in question.names if p not in quoted]
    literals = quoted + named
    for literal in literals:
        holders: set[str] = set()
        if values is not None:
            holders = {t for t, _ in values.lookup(literal) if t in board}
            if not holders and literal in named:
                # A list of names that is no value as a whole ("Masters and Bachelors") is looked up name by name.
                # (The loop goes on over the names appended.)
                listed = [name for name in listed_names(literal) if name not in literals]
                literals += listed
                named += listed
        if not holders and len(literal) >= 3 and literal in quoted:
            needle = normalize_value(literal)
            if needle:
                holders = {t for t, description in _value_descriptions(catalog) if needle in description}
            else:  # nothing left of it once normalized: found in every column, as `"" in text` is
                holders = {t.name for t in catalog.tables.values() if t.columns}
        feature = "value" if literal in quoted else "value_mention"
        for t in holders:
            shared = "value_shared" if feature == "value" else feature
            board[t].note(
                feature if len(holders) == 1 else shared,
                1.0 if feature == "value" else 1.0 / len(holders),
                f"holds the value '{literal}'",
            )
            board[t].hold(literal)
    words = question.words
    if values is not None:
        for size in (3, 2, 1):
            for start in range(len(words) - size + 1):
                gram = words[start : start + size]
                if gram[0] in STOPWORDS or gram[-1] in STOPWORDS or len("".join(gram)) < 3:
                    continue
                # One plain word of the question is a value in another form too often by chance
                # ("states", "State"): only runs of words and quoted literals are looked up in any form.
                phrase = " ".join(gram)
                found = {t for t, _ in values.lookup(phrase, forms=size > 1) if t in board}
                for t in found:
                    board[t].note("value_mention", 1.0 / len(found), f"holds the value '{phrase}'")
                    board[t].hold(phrase)


@per_object(limit=256)
def _value_descriptions(catalog: Catalog) -> list[tuple[str, str]]:
    """(table, lower-cased value description) of every column that has one, kept per catalog: a quoted literal
    is looked for in them, and a warehouse's 100,000 columns cost 10 ms a literal to visit again."""
    found = [(t.name, c.value_description.lower()) for t in catalog.tables.values() for c in t.columns]
    return [(t, d) for t, d in found if d]


IntArray = npt.NDArray[np.int64]


def _document_maps(
    index: SchemaIndex, lexicon: Lexicon, names: list[str]
) -> tuple[npt.NDArray[np.bool_], IntArray, IntArray]:
    """Per indexed column: whether the caller sees it, the table it counts for, the table holding it. The same
    for every question on one index and catalog, so kept (a large schema has tens of thousands of columns)."""
    key = ("maps", id(lexicon), tuple(names))
    cached = index.derived.get(key)
    if cached is not None and cached[0] is lexicon:
        maps: tuple[npt.NDArray[np.bool_], IntArray, IntArray] = cached[1]
        return maps
    position = {name: i for i, name in enumerate(names)}
    visible = np.array([(d.table, d.column) in lexicon.visible for d in index.docs])
    owner = np.array([position.get(lexicon.join_columns.get((d.table, d.column), d.table), -1) for d in index.docs])
    visible &= owner >= 0
    holder = np.array([position.get(d.table, -1) for d in index.docs])
    index.derived[key] = (lexicon, (visible, owner, holder))
    return visible, owner, holder


def retrieval_signals(
    knowledge_units: list[str],
    question_units: list[str],
    index: SchemaIndex,
    lexicon: Lexicon,
    rrf_k: int,
    board: Board,
) -> None:
    """Hybrid retrieval per unit: a table earns the fused (RRF) score of its best column, relative to the best.

    A foreign-key column counts for the table it points at: `singer_in_concert.Singer_ID` names singers, and
    `superhero.eye_colour_id` names a colour."""
    units = knowledge_units + question_units
    if not units or not index.docs:
        return
    names = list(board)
    visible, owner, holder = _document_maps(index, lexicon, names)
    if not visible.any():
        return
    lexical = index.bm25_matrix(units)
    lexical[:, ~visible] = 0.0
    dense = index.vectors.all_scores(index.embed(units))
    dense[:, ~visible] = -1.0
    rankings = [top_ranked(lexical, RETRIEVAL_DEPTH, positive_only=True), top_ranked(dense, RETRIEVAL_DEPTH)]
    fused = fuse_rankings(rankings, len(index.docs), rrf_k, np.float32)
    fused[:, ~visible] = 0.0
    count = len(units)
    table_fused = np.zeros((count, len(names)), np.float32)
    table_lexical = np.zeros((count, len(names)), np.float32)
    best_doc = np.zeros((count, len(names)), np.int64)
    # Only the columns a retriever ranked score anything: visit those, not every column of every table (a
    # 5,000-table catalog has 100,000 columns).
    for row in range(count):
        for column in np.flatnonzero(fused[row] > 0):
            t = owner[column]
            if fused[row, column] > table_fused[row, t]:
                table_fused[row, t] = fused[row, column]
                best_doc[row, t] = column
        hits = np.flatnonzero(lexical[row] > 0)
        hits = hits[holder[hits] >= 0]
        np.maximum.at(table_lexical[row], holder[hits], lexical[row, hits])
    top_lexical = table_lexical.max(axis=1, keepdims=True)
    table_lexical = np.divide(table_lexical, top_lexical, out=np.zeros_like(table_lexical), where=top_lexical > 0)
    relative = table_fused / (2.0 / (rrf_k + 1))  # the most a column can get: rank 1 in both
    rank_order = np.argsort(-table_fused, axis=1, kind="stable")
    runs = max(1, len(question_units) - 1)
    for row, text in enumerate(units):
        is_knowledge = row < len(knowledge_units)
        is_question = row == len(knowledge_units)
        kind = "knowledge" if is_knowledge else "question" if is_question else "phrase"
        for rank, t in enumerate(rank_order[row], start=1):
            score = float(relative[row, t])
            if score <= 0:
                break
            entry = board[names[t]]
            doc = int(best_doc[row, t])
            entry.note("dense", float(dense[row, doc]))
            if table_lexical[row, t] > 0:
                entry.note(f"lex_{kind}", float(table_lexical[row, t]))
            clause = shorten(text, 40, at_word=True)
            reason = f"`{index.docs[doc].table}.{index.docs[doc].column}` resembles \u201c{clause}\u201d"
            entry.note(f"ret_{kind}", score, reason)
            if rank == 1:
                if is_knowledge or is_question:
                    entry.note(f"ret_{kind}_top", 1.0)
                else:
                    entry.features["ret_phrase_top"] = entry.features.get("ret_phrase_top", 0.0) + 1.0 / runs
