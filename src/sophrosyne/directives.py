"""Directives: from a question and its knowledge entries to the tables that are likely irrelevant to it."""

from __future__ import annotations

import json
import re
import urllib.request
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from sophrosyne.catalog import Catalog
from sophrosyne.index.lexicon import Lexicon, lexicon_for
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.text import QUERY_NOISE, STOPWORDS, normalize, split_identifier, tokenize, word_tokens
from sophrosyne.index.values import ValueIndex, normalize_value

TIERS = ("high", "medium")


@dataclass(frozen=True)
class TableDirective:
    """A table named as likely irrelevant, why, and how sure we are (tier `high` or `medium`)."""

    table: str
    reason: str
    tier: str
    confidence: float


@dataclass
class Directives:
    """What list_tables tells the agent: the likely irrelevant tables, the relevant set, or an abstention."""

    irrelevant: list[TableDirective] = field(default_factory=list)
    relevant: list[str] = field(default_factory=list)
    abstained: bool = False
    note: str = ""
    mode: str = "directives"
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def flagged(self) -> list[str]:
        return [d.table for d in self.irrelevant]

    def render(self) -> str:
        if self.abstained or not self.irrelevant:
            return f"No directives for this question{': ' + self.note if self.note else ''}."
        lines = ["These tables are likely irrelevant to this question; explore them only if you find you need them:"]
        lines += [f"- {d.table}: {d.reason} ({d.tier} confidence)" for d in self.irrelevant]
        return "\n".join(lines)


@dataclass(frozen=True)
class DirectiveSettings:
    """Knobs of the rule-based directives. One setting for every database: no per-database values."""

    threshold: float = 0.145  # tables whose fitted probability of being needed is below this are flagged
    question_threshold: float = 0.165  # the same, for questions that come without knowledge
    high_tier: float = 0.04  # ... and below this they are flagged with high confidence
    min_tables: int = 2  # abstain on schemas this small or smaller
    max_bridge_hops: int = 4
    rrf_k: int = 5
    values: bool = True
    keep_best: bool = True  # never flag the best-scoring table
    keep_shared_anchors: bool = False  # keep every holder of a column the knowledge names, unless one is anchored
    weights: tuple[tuple[str, float], ...] = ()  # empty: DEFAULT_WEIGHTS
    question_weights: tuple[tuple[str, float], ...] = ()  # without knowledge; empty: QUESTION_WEIGHTS


# -- gold tables and the oracle -------------------------------------------------------------------------


def gold_tables(sql: str, catalog: Catalog, dialect: str = "sqlite") -> set[str]:
    """Base tables a query reads (CTE names excluded), spelled as in the catalog."""
    tree = sqlglot.parse_one(sql, read=dialect)
    found: set[str] = set()
    for scope in traverse_scope(tree):
        for source in scope.sources.values():
            if isinstance(source, exp.Table):
                table = catalog.table(source.name)
                found.add(table.name if table else source.name)
    return found


def oracle_directives(gold_sql: str, catalog: Catalog, dialect: str = "sqlite") -> Directives:
    """Irrelevant = every visible table the gold SQL does not read."""
    gold = gold_tables(gold_sql, catalog, dialect)
    flagged = [
        TableDirective(t, "the reference query does not read it", "high", 1.0) for t in catalog.tables if t not in gold
    ]
    return Directives(flagged, sorted(t for t in catalog.tables if t in gold), mode="oracle")


# -- reading the question and its knowledge entries -----------------------------------------------------

_BACKTICK = re.compile(r"`([^`]+)`|\[([^\]]+)\]")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|“([^”]+)”")
_COMPARED = re.compile(
    r"([A-Za-z_][\w.]*)\s*(?:=|==|!=|<>|>=|<=|>|<|\s(?:not\s+)?like\s|\s(?:not\s+)?in\s*\(|\sbetween\s|\sis\s+(?:not\s+)?null)",
    re.IGNORECASE,
)
_CALL_ARG = re.compile(r"\(\s*([A-Za-z_][\w.]*)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?")
_CLAUSE = re.compile(r";|\n|\.\s+(?=[A-Z])")
_LINK = re.compile(r"\b(?:refers? to|means?|stands? for|is|are|=)\b", re.IGNORECASE)


def infer_identifiers(evidence: str) -> tuple[list[str], list[str]]:
    """Column names written in a knowledge entry: (code-like mentions, plain-word mentions)."""
    strong: list[str] = []
    for match in _BACKTICK.finditer(evidence):
        strong.append(match.group(1) or match.group(2))
    unquoted = _QUOTED.sub(" _value_ ", _BACKTICK.sub(" _ident_ ", evidence))
    strong += [m.group(1) for m in _COMPARED.finditer(unquoted)]
    strong += [m.group(1) for m in _CALL_ARG.finditer(unquoted)]
    weak: list[str] = []
    for token in _IDENTIFIER.findall(unquoted):
        if token in ("_ident_", "_value_"):
            continue
        if "_" in token or "." in token or re.search(r"[a-z][A-Z]|\d", token):
            strong.append(token)
        else:
            weak.append(token)
    return [s for s in strong if s not in ("_ident_", "_value_")], weak


def quoted_literals(text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]


def evidence_units(evidence: str) -> list[str]:
    """Clauses of a knowledge entry, and each side of `A refers to B`."""
    units: list[str] = []
    for clause in _CLAUSE.split(evidence):
        clause = clause.strip()
        if not clause:
            continue
        units.append(clause)
        parts = [p.strip() for p in _LINK.split(clause, maxsplit=1)]
        if len(parts) == 2 and all(parts):
            units.extend(parts)
    return units


def question_units(question: str) -> list[str]:
    """The question and its runs of content words (a cheap stand-in for noun phrases)."""
    units = [question]
    run: list[str] = []
    for word in [*word_tokens(question), "the"]:
        if word in STOPWORDS or word in QUERY_NOISE:
            if run:
                units.append(" ".join(run))
            run = []
        else:
            run.append(word)
    return units


# -- scoring tables -------------------------------------------------------------------------------------

FEATURES = (
    "anchor",  # the evidence writes one of its columns (code-like: backticks, `x = v`, f(x), snake_case)
    "anchor_shared",  # ... a column several tables have (1 / number of holders)
    "anchor_resolved",  # ... shared, and another holder is anchored on its own
    "evidence_word",  # a plain word of the evidence is the name of one of its columns
    "evidence_word_shared",  # ... of a column several tables have (1 / number of holders)
    "table_named",  # its name is written in the question or evidence
    "column_phrase",  # a multi-word column name (or readable name) of it is written out
    "column_phrase_shared",
    "value",  # a quoted literal is one of its values (value index) or in a value description
    "value_shared",
    "value_mention",  # a run of question words is one of its values (value index), 1 / number of holders
    "value_desc_word",  # a question word appears in the value description of one of its columns
    "lex_evidence",  # best BM25 score of its columns over the evidence clauses, relative to the best column
    "lex_question",  # ... for the whole question
    "lex_phrase",  # ... over the question's content-word runs
    "ret_evidence",  # best fused retrieval score of its columns over the evidence clauses (relative to top)
    "ret_evidence_top",  # it is the top table for some evidence clause
    "ret_question",  # fused retrieval score for the whole question
    "ret_question_top",  # it is the top table for the whole question
    "ret_phrase",  # best fused retrieval score over the question's content-word runs
    "ret_phrase_top",  # share of runs for which it is the top table
    "dense",  # best cosine similarity of its columns to any unit
    "neighbor",  # joins (FK) a table that is anchored or named
    "rank_question",  # 1 / its rank among the tables by `ret_question`
    "rank_phrase",  # 1 / its rank among the tables by `ret_phrase`
    "others_anchored",  # another table is anchored or named, so the knowledge may already cover the question
    "coverage",  # share of the question's content words that are words of table or column names
    "coverage_gap",  # coverage x (1 - rank_question): a well-covered question that does not point here
    "own_cover",  # share of the question's content words that are words of its own name or column names
    "only_cover",  # ... that no other table has
    "others_cover",  # ... that other tables have
    "small_schema",  # 1 / number of tables
    "no_evidence",  # the question comes without knowledge entries
)

# Fitted by `python -m sophrosyne.bench.tune` on the 6 tuning databases of BIRD dev only.
DEFAULT_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("bias", -2.698),
    ("anchor", 2.389),
    ("anchor_shared", 1.324),
    ("anchor_resolved", 0.123),
    ("evidence_word", 0.505),
    ("evidence_word_shared", 1.221),
    ("table_named", 1.869),
    ("column_phrase", 1.638),
    ("column_phrase_shared", -0.015),
    ("value", 1.031),
    ("value_shared", 0.362),
    ("value_mention", 1.031),
    ("value_desc_word", -0.062),
    ("lex_evidence", -0.407),
    ("lex_question", 0.856),
    ("lex_phrase", -0.130),
    ("ret_evidence", 0.450),
    ("ret_evidence_top", 0.444),
    ("ret_question", 0.687),
    ("ret_question_top", -0.007),
    ("ret_phrase", 0.998),
    ("ret_phrase_top", 1.555),
    ("dense", 0.217),
    ("neighbor", 1.272),
    ("rank_question", 0.593),
    ("rank_phrase", 0.260),
    ("others_anchored", -1.224),
    ("coverage", -0.019),
    ("coverage_gap", -0.713),
    ("own_cover", -0.454),
    ("only_cover", 0.643),
    ("others_cover", -0.631),
    ("small_schema", 0.602),
    ("no_evidence", 0.000),
)

# Fitted the same way on the same questions with their knowledge entries removed.
QUESTION_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("bias", -2.379),
    ("anchor", 0.512),
    ("anchor_shared", 0.002),
    ("anchor_resolved", 0.047),
    ("evidence_word", 0.000),
    ("evidence_word_shared", 0.000),
    ("table_named", 1.803),
    ("column_phrase", 2.004),
    ("column_phrase_shared", -0.031),
    ("value", 1.136),
    ("value_shared", 0.092),
    ("value_mention", 1.136),
    ("value_desc_word", -0.176),
    ("lex_evidence", 0.000),
    ("lex_question", 1.145),
    ("lex_phrase", -0.270),
    ("ret_evidence", 0.000),
    ("ret_evidence_top", 0.000),
    ("ret_question", 1.076),
    ("ret_question_top", 0.077),
    ("ret_phrase", 1.381),
    ("ret_phrase_top", 1.674),
    ("dense", -0.486),
    ("neighbor", 0.983),
    ("rank_question", 0.538),
    ("rank_phrase", 1.105),
    ("others_anchored", -1.028),
    ("coverage", 0.340),
    ("coverage_gap", -0.391),
    ("own_cover", 0.077),
    ("only_cover", 1.332),
    ("others_cover", -1.404),
    ("small_schema", 0.164),
    ("no_evidence", -0.000),
)


@dataclass
class _Evidence:
    """What points at one table: feature values and the most telling reason."""

    features: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    reason_strength: float = 0.0
    score: float = 0.0

    def note(self, feature: str, value: float, reason: str = "", strength: float = 0.0) -> None:
        if value > self.features.get(feature, 0.0):
            self.features[feature] = value
        if reason and strength > self.reason_strength:
            self.reason, self.reason_strength = reason, strength


def _clip(text: str, limit: int) -> str:
    """Cut at a word boundary, so a quoted clause never ends mid-word or mid-quote."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(" '\"=,;") + "…"


def _phrase_in(phrase: str, text: str) -> bool:
    return bool(phrase) and f" {phrase} " in text


def _name_signals(question: str, evidence: str, lexicon: Lexicon, board: dict[str, _Evidence]) -> list[list[str]]:
    """Exact names: columns written in the evidence, table and column names in the text."""
    strong, weak = infer_identifiers(evidence)
    strong += [i for i in infer_identifiers(question)[0] if "_" in i or "." in i]
    anchored: list[tuple[str, list[str]]] = []
    for ident in strong:
        table_part, _, column_part = ident.rpartition(".")
        holders = [t for t, _ in lexicon.raw_columns.get(column_part.lower(), [])]
        if not holders:
            holders = [t for t, _ in lexicon.columns.get(normalize(column_part), [])]
        if table_part:
            qualified = [t for t in holders if t.lower() == table_part.lower()]
            holders = qualified or holders
        if holders:
            anchored.append((ident, sorted(set(holders))))
    for ident, holders in anchored:
        if len(holders) == 1:
            board[holders[0]].note("anchor", 1.0, f"the knowledge names its column `{ident}`", 1.0)
    for ident, holders in anchored:
        if len(holders) > 1:
            resolved = any(board[t].features.get("anchor") for t in holders)
            for t in holders:
                board[t].note(
                    "anchor_resolved" if resolved else "anchor_shared",
                    1.0 / len(holders),
                    f"the knowledge names `{ident}`, a column it shares",
                    0.5,
                )
    for ident in weak:
        holders = sorted({t for t, _ in lexicon.raw_columns.get(ident.lower(), [])})
        if len(holders) == 1:
            board[holders[0]].note("evidence_word", 1.0, f"the knowledge says `{ident}`", 0.4)
        for t in holders if len(holders) > 1 else []:
            board[t].note("evidence_word_shared", 1.0 / len(holders), f"the knowledge says `{ident}`", 0.3)
    text = f" {normalize(question + ' ' + evidence)} "
    for table, phrases in lexicon.table_phrases.items():
        if any(_phrase_in(p, text) for p in phrases):
            board[table].note("table_named", 1.0, "the question names it", 0.9)
    for phrase, named in lexicon.columns.items():
        if " " in phrase and _phrase_in(phrase, text):
            tables = {t for t, _ in named}
            feature = "column_phrase" if len(tables) == 1 else "column_phrase_shared"
            for t in tables:
                board[t].note(feature, 1.0, f"the question names its column `{named[0][1]}`", 0.8)
    return [holders for _, holders in anchored]


def _value_signals(
    question: str, evidence: str, catalog: Catalog, values: ValueIndex | None, board: dict[str, _Evidence]
) -> None:
    """Literals grounded in the data (value index) or in the column value descriptions."""
    literals = [lit for lit in quoted_literals(question) + quoted_literals(evidence) if len(lit.strip()) >= 2]
    for literal in literals:
        holders: set[str] = set()
        if values is not None:
            holders = {t for t, _ in values.lookup(literal) if t in board}
        if not holders and len(literal) >= 3:
            needle = normalize_value(literal)
            holders = {
                t.name for t in catalog.tables.values() for c in t.columns if needle in c.value_description.lower()
            }
        for t in holders:
            board[t].note("value" if len(holders) == 1 else "value_shared", 1.0, f"holds the value '{literal}'", 0.85)
    words = [w for w in word_tokens(question)]
    if values is not None:
        for size in (3, 2, 1):
            for start in range(len(words) - size + 1):
                gram = words[start : start + size]
                if gram[0] in STOPWORDS or gram[-1] in STOPWORDS or len("".join(gram)) < 3:
                    continue
                found = {t for t, _ in values.lookup(" ".join(gram)) if t in board}
                for t in found:
                    board[t].note("value_mention", 1.0 / len(found), f"holds the value '{' '.join(gram)}'", 0.7)


def _rrf(scores: npt.NDArray[np.float32], k: int, depth: int, positive_only: bool) -> npt.NDArray[np.float32]:
    """Reciprocal-rank contributions 1 / (k + rank) of each row's top `depth` entries, zero elsewhere."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    contribution = np.broadcast_to(1.0 / (k + np.arange(1, order.shape[1] + 1, dtype=np.float32)), order.shape)
    if positive_only:
        contribution = np.where(np.take_along_axis(scores, order, axis=1) > 0, contribution, 0.0)
    out = np.zeros(scores.shape, np.float32)
    np.put_along_axis(out, order, contribution.astype(np.float32), axis=1)
    return out


def _retrieval_signals(
    evidence_units: list[str],
    question_units: list[str],
    index: SchemaIndex,
    lexicon: Lexicon,
    settings: DirectiveSettings,
    board: dict[str, _Evidence],
) -> None:
    """Hybrid retrieval per unit: a table earns the fused (RRF) score of its best column, relative to the best.

    A foreign-key column counts for the table it points at: `singer_in_concert.Singer_ID` names singers, and
    `superhero.eye_colour_id` names a colour."""
    units = evidence_units + question_units
    if not units or not index.docs:
        return
    visible = np.array([(d.table, d.column) in lexicon.visible for d in index.docs])
    if not visible.any():
        return
    names = list(board)
    position = {name: i for i, name in enumerate(names)}
    owner = np.array([position.get(lexicon.join_columns.get((d.table, d.column), d.table), -1) for d in index.docs])
    visible &= owner >= 0
    holder = np.array([position.get(d.table, -1) for d in index.docs])
    lexical = index.bm25_matrix(units)
    lexical[:, ~visible] = 0.0
    dense = index.vectors.all_scores(index.embed(units))
    dense[:, ~visible] = -1.0
    k = settings.rrf_k
    fused = _rrf(lexical, k, 50, True) + _rrf(dense, k, 50, False)
    fused[:, ~visible] = 0.0
    count = len(units)
    table_fused = np.zeros((count, len(names)), np.float32)
    table_lexical = np.zeros((count, len(names)), np.float32)
    best_doc = np.zeros((count, len(names)), np.int64)
    for t in range(len(names)):
        members = np.flatnonzero(owner == t)
        if len(members) == 0:
            continue
        block = fused[:, members]
        best = block.argmax(axis=1)
        best_doc[:, t] = members[best]
        table_fused[:, t] = block[np.arange(count), best]
    for t in range(len(names)):
        holders = np.flatnonzero(holder == t)
        if len(holders):
            table_lexical[:, t] = lexical[:, holders].max(axis=1)
    top_lexical = table_lexical.max(axis=1, keepdims=True)
    table_lexical = np.divide(table_lexical, top_lexical, out=np.zeros_like(table_lexical), where=top_lexical > 0)
    relative = table_fused / (2.0 / (k + 1))
    rank_order = np.argsort(-table_fused, axis=1, kind="stable")
    runs = max(1, len(question_units) - 1)
    for row, text in enumerate(units):
        is_evidence = row < len(evidence_units)
        is_question = row == len(evidence_units)
        kind = "evidence" if is_evidence else "question" if is_question else "phrase"
        for rank, t in enumerate(rank_order[row], start=1):
            score = float(relative[row, t])
            if score <= 0:
                break
            entry = board[names[t]]
            doc = int(best_doc[row, t])
            entry.note("dense", float(dense[row, doc]))
            if table_lexical[row, t] > 0:
                entry.note(f"lex_{kind}", float(table_lexical[row, t]))
            strength = (0.6 if is_evidence else 0.5) * score
            reason = ""
            if strength > entry.reason_strength:
                reason = f"`{index.docs[doc].table}.{index.docs[doc].column}` resembles \u201c{_clip(text, 40)}\u201d"
            entry.note(f"ret_{kind}", score, reason, strength)
            if rank == 1:
                if is_evidence or is_question:
                    entry.note(f"ret_{kind}_top", 1.0)
                else:
                    entry.features["ret_phrase_top"] = entry.features.get("ret_phrase_top", 0.0) + 1.0 / runs


def _bridges(relevant: set[str], lexicon: Lexicon, max_hops: int) -> dict[str, tuple[str, str]]:
    """Tables on shortest foreign-key paths between relevant tables (all shortest paths, up to max_hops)."""
    added: dict[str, tuple[str, str]] = {}
    ordered = sorted(relevant)
    for i, source in enumerate(ordered):
        distance = {source: 0}
        parents: dict[str, set[str]] = {source: set()}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            if distance[node] >= max_hops:
                continue
            for nxt in lexicon.graph.get(node, ()):
                if nxt not in distance:
                    distance[nxt] = distance[node] + 1
                    parents[nxt] = {node}
                    queue.append(nxt)
                elif distance[nxt] == distance[node] + 1:
                    parents[nxt].add(node)
        for target in ordered[i + 1 :]:
            if target not in distance or distance[target] < 2:
                continue
            stack = [target]
            seen = {target}
            while stack:
                node = stack.pop()
                for parent in parents.get(node, ()):
                    if parent not in seen:
                        seen.add(parent)
                        stack.append(parent)
                        if parent not in relevant and parent != source:
                            added.setdefault(parent, (source, target))
    return added


@dataclass
class TableScores:
    """Per-table relevance for one question: features, a score in [0, 1], and the most telling reason."""

    board: dict[str, _Evidence]
    lexicon: Lexicon
    abstain_note: str = ""
    anchor_groups: list[list[str]] = field(default_factory=list)  # holders of each column the knowledge names
    has_knowledge: bool = True

    @property
    def scores(self) -> dict[str, float]:
        return {t: e.score for t, e in self.board.items()}


def score_tables(
    question: str,
    knowledge: str | list[str] | None,
    catalog: Catalog,
    index: SchemaIndex,
    value_index: ValueIndex | None = None,
    settings: DirectiveSettings | None = None,
) -> TableScores:
    """Score every visible table by what in the question and knowledge points to it."""
    settings = settings or DirectiveSettings()
    evidence = "; ".join(knowledge) if isinstance(knowledge, list) else (knowledge or "")
    lexicon = lexicon_for(catalog)
    board = {t: _Evidence() for t in catalog.tables}
    if len(board) <= settings.min_tables:
        return TableScores(board, lexicon, "the database has too few tables")
    anchor_groups = _name_signals(question, evidence, lexicon, board)
    for word in set(tokenize(question)):
        if len(word) >= 3:
            for t in lexicon.value_words.get(word, ()):
                if t in board:
                    board[t].note("value_desc_word", 1.0)
    if settings.values:
        _value_signals(question, evidence, catalog, value_index, board)
    _retrieval_signals(evidence_units(evidence), question_units(question), index, lexicon, settings, board)
    named = {t for t, e in board.items() if e.features.get("anchor") or e.features.get("table_named")}
    if evidence.strip():
        weights = dict(settings.weights or DEFAULT_WEIGHTS)
    else:
        weights = dict(settings.question_weights or QUESTION_WEIGHTS)
    for feature, rank_feature in (("ret_question", "rank_question"), ("ret_phrase", "rank_phrase")):
        ordered = sorted(board, key=lambda t: -board[t].features.get(feature, 0.0))
        for rank, table in enumerate(ordered, start=1):
            if board[table].features.get(feature, 0.0) > 0:
                board[table].features[rank_feature] = 1.0 / rank
    content = tokenize(question)
    coverage = sum(w in lexicon.name_words for w in content) / len(content) if content else 0.0
    content_set = set(content)
    word_holders = {w: {t for t in board if w in lexicon.table_words.get(t, ())} for w in content_set}
    for table, entry in board.items():
        if content_set:
            own = {w for w in content_set if table in word_holders[w]}
            only = {w for w in own if len(word_holders[w]) == 1}
            others = {w for w in content_set if word_holders[w] - {table}}
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
        entry.features["no_evidence"] = 0.0 if evidence.strip() else 1.0
        logit = weights.get("bias", 0.0) + sum(weights.get(f, 0.0) * v for f, v in entry.features.items())
        entry.score = float(1.0 / (1.0 + np.exp(-logit)))
    abstain = ""
    strong = ("anchor", "anchor_shared", "table_named", "column_phrase", "column_phrase_shared", "value")
    if not evidence.strip() and coverage == 0.0 and not any(e.features.get(f) for e in board.values() for f in strong):
        # No word of the question is a word of the schema, and nothing is named or grounded: any pick would
        # rest on fuzzy similarity alone, so say nothing rather than name tables at random.
        abstain = "nothing in the question names or resembles a table, column or value closely enough"
    return TableScores(
        board, lexicon, abstain_note=abstain, anchor_groups=anchor_groups, has_knowledge=bool(evidence.strip())
    )


def _keep(scores: dict[str, float], scored: TableScores, threshold: float, settings: DirectiveSettings) -> set[str]:
    relevant = {t for t, s in scores.items() if s >= threshold}
    # A column the knowledge writes out is an anchor: its table is kept whatever the model says. When
    # several tables have that column, the likeliest of them is kept (all of them with keep_shared_anchors).
    for holders in scored.anchor_groups:
        if len(holders) == 1 or settings.keep_shared_anchors:
            relevant |= set(holders)
        elif not relevant & set(holders):
            best = max(scores[t] for t in holders)
            relevant |= {t for t in holders if scores[t] == best}
    if relevant and settings.keep_best:
        relevant.add(max(scores, key=lambda t: scores[t]))
    if relevant:
        relevant |= set(_bridges(relevant, scored.lexicon, settings.max_bridge_hops))
    return relevant


def decide_directives(scored: TableScores, settings: DirectiveSettings | None = None) -> Directives:
    """Keep tables scoring at least the threshold, close them over join paths, flag the rest."""
    settings = settings or DirectiveSettings()
    tables = list(scored.board)
    scores = {t: e.score for t, e in scored.board.items()}
    reasons = {t: e.reason for t, e in scored.board.items()}
    if scored.abstain_note:
        return Directives(relevant=tables, abstained=True, note=scored.abstain_note, scores=scores)
    threshold = settings.threshold if scored.has_knowledge else settings.question_threshold
    relevant = _keep(scores, scored, threshold, settings)
    if not relevant:
        note = "nothing in the question matches the schema"
        return Directives(relevant=tables, abstained=True, note=note, scores=scores)
    flagged = []
    for table in tables:
        if table in relevant:
            continue
        score = scores[table]
        tier = "high" if score < settings.high_tier else "medium"
        why = "nothing in the question or knowledge points to it"
        if reasons[table]:
            why = f"only a loose match: {reasons[table]}"
        flagged.append(TableDirective(table, why, tier, round(1.0 - score, 3)))
    return Directives(flagged, sorted(relevant), scores=scores)


class LLMColumnInference:
    """Column names inferred by an inexpensive model behind an OpenAI-compatible `/chat/completions`
    endpoint, as the paper prompts for them. Used only when configured; any failure means no names."""

    PROMPT = (
        "You are given a database schema, a question and knowledge about it. List the columns (as "
        "table.column) that a SQL query answering the question would use. Answer with one table.column per "
        "line and nothing else.\n\nSchema:\n{schema}\n\nQuestion: {question}\nKnowledge: {knowledge}"
    )

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s

    def infer(self, question: str, knowledge: str, catalog: Catalog) -> list[str]:
        schema = "\n".join(f"{t.name}({', '.join(t.column_names)})" for t in catalog.tables.values())[:12000]
        prompt = self.PROMPT.format(schema=schema, question=question, knowledge=knowledge or "(none)")
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0}
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = json.loads(response.read())["choices"][0]["message"]["content"] or ""
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return []
        names = [line.strip().strip("-*` ").strip() for line in text.splitlines()]
        return [n for n in names if n and _IDENTIFIER.fullmatch(n)]


def compute_directives(
    question: str,
    knowledge: str | list[str] | None,
    catalog: Catalog,
    index: SchemaIndex,
    value_index: ValueIndex | None = None,
    settings: DirectiveSettings | None = None,
    inference: LLMColumnInference | None = None,
) -> Directives:
    """Name the tables of `catalog` (already restricted to the caller's role) likely irrelevant to a question.

    With `inference`, the column names a model infers join the knowledge as written-out identifiers."""
    settings = settings or DirectiveSettings()
    if inference is not None:
        evidence = "; ".join(knowledge) if isinstance(knowledge, list) else (knowledge or "")
        names = inference.infer(question, evidence, catalog)
        if names:
            knowledge = "; ".join(filter(None, [evidence, " ".join(f"`{n}`" for n in names)]))
    scored = score_tables(question, knowledge, catalog, index, value_index, settings)
    return decide_directives(scored, settings)


def paper_directives(
    question: str, knowledge: str | list[str] | None, catalog: Catalog, index: SchemaIndex
) -> Directives:
    """The paper's method without its LLM: column names inferred from the knowledge by rules (code-like
    identifiers, plain words that are column names, the described side of `A refers to B`), each searched in
    the hybrid column index, the table of the top hit kept, every other table flagged. Without knowledge the
    question is the one query."""
    evidence = "; ".join(knowledge) if isinstance(knowledge, list) else (knowledge or "")
    strong, weak = infer_identifiers(evidence)
    lexicon = lexicon_for(catalog)
    names = [*strong, *(w for w in weak if w.lower() in lexicon.raw_columns)]
    queries = [" ".join(split_identifier(n)) for n in dict.fromkeys(names)]
    for clause in _CLAUSE.split(evidence):
        parts = _LINK.split(clause, maxsplit=1)
        if len(parts) == 2 and parts[0].strip():
            queries.append(parts[0].strip())
    relevant: set[str] = set()
    for query in queries or [question]:
        hits = [h for h in index.search(query, k=20, visible=catalog)]
        if hits:
            relevant.add(hits[0].table)
    flagged = [
        TableDirective(t, "no inferred column name retrieves it", "high", 1.0)
        for t in catalog.tables
        if t not in relevant
    ]
    return Directives(flagged, sorted(relevant), mode="paper")
