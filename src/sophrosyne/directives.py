"""Directives: from a question and its knowledge entries to the tables that are likely irrelevant to it."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from sophrosyne.catalog import Catalog
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.text import STOPWORDS, normalize, split_identifier, word_tokens
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

    threshold: float = 0.5  # tables scoring below this are flagged
    high_tier: float = 0.2  # ... and below this they are flagged with high confidence
    min_tables: int = 2  # abstain on schemas this small or smaller
    max_bridge_hops: int = 3
    rrf_k: int = 5
    unit_depth: int = 3  # tables per retrieval unit that earn a score
    values: bool = True


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


# -- the schema lexicon: names and joins of one (restricted) catalog ------------------------------------


@dataclass
class Lexicon:
    tables: list[str]
    table_phrases: dict[str, list[str]]  # table -> normalised spellings of its name
    columns: dict[str, list[tuple[str, str]]]  # normalised column name -> (table, column)
    raw_columns: dict[str, list[tuple[str, str]]]  # lower-cased column name -> (table, column)
    graph: dict[str, set[str]]


_LEXICONS: dict[tuple[object, ...], Lexicon] = {}


def lexicon_for(catalog: Catalog) -> Lexicon:
    signature = tuple((t.name, tuple(c.name for c in t.columns)) for t in catalog.tables.values())
    key = (hash(signature), len(signature))
    cached = _LEXICONS.get(key)
    if cached is not None:
        return cached
    columns: dict[str, list[tuple[str, str]]] = {}
    raw: dict[str, list[tuple[str, str]]] = {}
    graph: dict[str, set[str]] = {t: set() for t in catalog.tables}
    table_phrases: dict[str, list[str]] = {}
    for table in catalog.tables.values():
        phrases = {normalize(table.name)}
        table_phrases[table.name] = sorted(p for p in phrases if p)
        for column in table.columns:
            for spelling in {normalize(column.name), normalize(column.readable_name)} - {""}:
                columns.setdefault(spelling, []).append((table.name, column.name))
            raw.setdefault(column.name.lower(), []).append((table.name, column.name))
        for fk in table.foreign_keys:
            ref = catalog.table(fk.ref_table)
            if ref is not None and ref.name != table.name:
                graph[table.name].add(ref.name)
                graph[ref.name].add(table.name)
    # Shared key-like column names join tables even where the schema declares no foreign key.
    for name, holders in raw.items():
        if len(holders) > 1 and re.search(r"(id|code|key|no)$", name):
            for a, _ in holders:
                for b, _ in holders:
                    if a != b:
                        graph[a].add(b)
    lexicon = Lexicon(list(catalog.tables), table_phrases, columns, raw, graph)
    if len(_LEXICONS) > 256:
        _LEXICONS.clear()
    _LEXICONS[key] = lexicon
    return lexicon


# -- reading the question and its knowledge entries -----------------------------------------------------

_BACKTICK = re.compile(r"`([^`]+)`|\[([^\]]+)\]")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|“([^”]+)”")
_COMPARED = re.compile(
    r"([A-Za-z_][\w.]*|`[^`]+`)\s*(?:=|==|!=|<>|>=|<=|>|<|\s(?:not\s+)?like\s|\s(?:not\s+)?in\s*\(|\sbetween\s|\sis\s)",
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
    unquoted = _QUOTED.sub(" ", _BACKTICK.sub(" ", evidence))
    for match in _COMPARED.finditer(unquoted):
        strong.append(match.group(1).strip("`"))
    for match in _CALL_ARG.finditer(unquoted):
        strong.append(match.group(1))
    weak: list[str] = []
    for token in _IDENTIFIER.findall(unquoted):
        if "_" in token or "." in token or re.search(r"[a-z][A-Z]|\d", token):
            strong.append(token)
        else:
            weak.append(token)
    return strong, weak


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
        if word in STOPWORDS:
            if run:
                units.append(" ".join(run))
            run = []
        else:
            run.append(word)
    return units


# -- scoring tables -------------------------------------------------------------------------------------


@dataclass
class _Evidence:
    score: float = 0.0
    reason: str = ""

    def offer(self, score: float, reason: str) -> None:
        if score > self.score:
            self.score, self.reason = score, reason


def _phrase_in(phrase: str, text: str) -> bool:
    return bool(phrase) and f" {phrase} " in text


def _name_signals(question: str, evidence: str, lexicon: Lexicon, board: dict[str, _Evidence]) -> None:
    """Exact names: columns written in the evidence, table and column names in the text."""
    strong, weak = infer_identifiers(evidence)
    strong += [i for i in infer_identifiers(question)[0] if "_" in i or "." in i]
    anchored: list[list[str]] = []
    for ident in strong:
        table_part, _, column_part = ident.rpartition(".")
        holders = [t for t, _ in lexicon.raw_columns.get(column_part.lower(), [])]
        if not holders:
            holders = [t for t, _ in lexicon.columns.get(normalize(column_part), [])]
        if table_part:
            qualified = [t for t in holders if t.lower() == table_part.lower()]
            holders = qualified or holders
        if holders:
            anchored.append(sorted(set(holders)))
    for ident in weak:
        holders = sorted({t for t, _ in lexicon.raw_columns.get(ident.lower(), [])})
        if len(holders) == 1:
            board[holders[0]].offer(0.75, f"evidence names its column `{ident}`")
    for holders in anchored:
        if len(holders) == 1:
            board[holders[0]].offer(1.0, "evidence names one of its columns")
    for holders in anchored:
        if len(holders) > 1:
            resolved = any(board[t].score >= 0.9 for t in holders)
            for t in holders:
                board[t].offer(0.3 if resolved else 0.65, "evidence names a column it shares with other tables")
    text = f" {normalize(question + ' ' + evidence)} "
    for table, phrases in lexicon.table_phrases.items():
        if any(_phrase_in(p, text) for p in phrases):
            board[table].offer(0.9, "the question names it")
    for phrase, named in lexicon.columns.items():
        if " " in phrase and _phrase_in(phrase, text):
            tables = {t for t, _ in named}
            for t in tables:
                board[t].offer(0.8 if len(tables) == 1 else 0.55, f"the question names its column `{named[0][1]}`")


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
            board[t].offer(0.85 if len(holders) == 1 else 0.5, f"holds the value '{literal}'")


def _retrieval_signals(
    units: list[tuple[str, float]],
    index: SchemaIndex,
    lexicon: Lexicon,
    settings: DirectiveSettings,
    board: dict[str, _Evidence],
) -> None:
    """Hybrid retrieval per unit: a table earns the fused rank score of its best column, relative to the top."""
    if not units or not index.docs:
        return
    visible = np.array([d.table in board for d in index.docs])
    if not visible.any():
        return
    texts = [u for u, _ in units]
    dense = index.vectors.all_scores(index.embed(texts))
    k = settings.rrf_k
    top = 2.0 / (k + 1)
    table_of = [d.table for d in index.docs]
    for row, (text, weight) in enumerate(units):
        lexical = index.bm25_scores(text)
        fused = np.zeros(len(index.docs), np.float32)
        lex_order = [i for i in np.argsort(-lexical) if visible[i] and lexical[i] > 0]
        for rank, i in enumerate(lex_order[:50], start=1):
            fused[i] += 1.0 / (k + rank)
        dense_order = [i for i in np.argsort(-dense[row]) if visible[i]]
        for rank, i in enumerate(dense_order[:50], start=1):
            fused[i] += 1.0 / (k + rank)
        best: dict[str, tuple[float, int]] = {}
        for i in np.argsort(-fused)[:200]:
            if fused[i] <= 0:
                break
            table = table_of[i]
            if table not in best:
                best[table] = (float(fused[i]), int(i))
        for rank, (table, (score, doc)) in enumerate(best.items(), start=1):
            if rank > settings.unit_depth:
                break
            strength = weight * score / top
            column = index.docs[doc].column
            board[table].offer(strength, f"its column `{column}` matches \u201c{text[:40]}\u201d")


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
    """Per-table relevance evidence for one question (0 = nothing points to it, 1 = named outright)."""

    board: dict[str, _Evidence]
    lexicon: Lexicon
    abstain_note: str = ""

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
    _name_signals(question, evidence, lexicon, board)
    if settings.values:
        _value_signals(question, evidence, catalog, value_index, board)
    units = [(u, 1.0) for u in evidence_units(evidence)]
    units += [(u, 0.85 if i == 0 else 0.75) for i, u in enumerate(question_units(question))]
    _retrieval_signals(units, index, lexicon, settings, board)
    return TableScores(board, lexicon)


def decide_directives(scored: TableScores, settings: DirectiveSettings | None = None) -> Directives:
    """Keep tables scoring at least the threshold, close them over join paths, flag the rest."""
    settings = settings or DirectiveSettings()
    board = {t: _Evidence(e.score, e.reason) for t, e in scored.board.items()}
    tables = list(board)
    scores = {t: e.score for t, e in board.items()}
    if scored.abstain_note:
        return Directives(relevant=tables, abstained=True, note=scored.abstain_note, scores=scores)
    relevant = {t for t, s in scores.items() if s >= settings.threshold}
    if not relevant:
        note = "nothing in the question matches the schema"
        return Directives(relevant=tables, abstained=True, note=note, scores=scores)
    for bridge, (a, b) in _bridges(relevant, scored.lexicon, settings.max_bridge_hops).items():
        board[bridge].offer(settings.threshold, f"joins {a} and {b}")
        relevant.add(bridge)
    flagged = []
    for table in tables:
        if table in relevant:
            continue
        score = board[table].score
        tier = "high" if score < settings.high_tier else "medium"
        why = "nothing in the question or knowledge points to it"
        if board[table].reason:
            why = f"weak match only: {board[table].reason}"
        flagged.append(TableDirective(table, why, tier, round(1.0 - score, 3)))
    return Directives(flagged, sorted(relevant), scores=scores)


def compute_directives(
    question: str,
    knowledge: str | list[str] | None,
    catalog: Catalog,
    index: SchemaIndex,
    value_index: ValueIndex | None = None,
    settings: DirectiveSettings | None = None,
) -> Directives:
    """Name the tables of `catalog` (already restricted to the caller's role) likely irrelevant to a question."""
    settings = settings or DirectiveSettings()
    scored = score_tables(question, knowledge, catalog, index, value_index, settings)
    return decide_directives(scored, settings)


def paper_directives(
    question: str, knowledge: str | list[str] | None, catalog: Catalog, index: SchemaIndex
) -> Directives:
    """The paper's method without an LLM: column names inferred from the evidence by rules, top-1 table each."""
    evidence = "; ".join(knowledge) if isinstance(knowledge, list) else (knowledge or "")
    strong, _ = infer_identifiers(evidence)
    queries = [" ".join(split_identifier(s)) for s in dict.fromkeys(strong)] or [question]
    relevant: set[str] = set()
    for query in queries:
        hits = [h for h in index.search(query, k=20) if h.table in catalog.tables]
        if hits:
            relevant.add(hits[0].table)
    flagged = [
        TableDirective(t, "no inferred column name retrieves it", "high", 1.0)
        for t in catalog.tables
        if t not in relevant
    ]
    return Directives(flagged, sorted(relevant), mode="paper")
