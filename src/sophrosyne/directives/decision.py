"""The decision: keep the tables the model finds likely, their anchors and the bridges between them; flag the rest."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import starmap
from operator import itemgetter
from typing import overload

from sophrosyne.directives.inference import LLMColumnInference
from sophrosyne.directives.knowledge import Knowledge, knowledge_text, with_inferred_columns
from sophrosyne.directives.links import links
from sophrosyne.directives.model import DirectiveSettings
from sophrosyne.directives.pairs import keep_pairs
from sophrosyne.directives.scoring import TableScores, score_tables
from sophrosyne.directives.short_names import named_in_short
from sophrosyne.directives.units import Units, tie_twins
from sophrosyne.index.lexicon import Lexicon
from sophrosyne.index.schema_index import SchemaIndex
from sophrosyne.index.values import ValueIndex
from sophrosyne.schema.catalog import Catalog


@dataclass(frozen=True)
class TableDirective:
    """A table named as likely irrelevant, why, and how sure we are (tier `high` or `medium`). A unit of
    several tables (a shard group) is named once, by its pattern, with its members."""

    table: str
    reason: str
    tier: str
    confidence: float
    members: tuple[str, ...] = ()

    @property
    def tables(self) -> tuple[str, ...]:
        return self.members or (self.table,)


Row = tuple[str, str, str, float, tuple[str, ...]]  # a TableDirective's fields


class Flagged(Sequence[TableDirective]):
    """Flagged tables, surest first, kept as plain tuples and read as TableDirective. The garbage collector stops
    tracking a tuple of strings and numbers at its first pass: a question on a warehouse flags thousands of
    tables, and as objects they piled up into its full collections (half a second each beside a 5,000-table
    index), every 20 questions or so."""

    __slots__ = ("_rows",)

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> TableDirective: ...
    @overload
    def __getitem__(self, index: slice) -> list[TableDirective]: ...
    def __getitem__(self, index: int | slice) -> TableDirective | list[TableDirective]:
        if isinstance(index, slice):
            return list(starmap(TableDirective, self._rows[index]))
        return TableDirective(*self._rows[index])

    def __iter__(self) -> Iterator[TableDirective]:
        return starmap(TableDirective, self._rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list of the same directives, so not hashable

    def __repr__(self) -> str:
        return f"Flagged({list(self)!r})"


@dataclass
class Directives:
    """What list_tables tells the agent: the likely irrelevant tables, the relevant set, or an abstention."""

    irrelevant: Sequence[TableDirective] = field(default_factory=list)
    relevant: list[str] = field(default_factory=list)
    abstained: bool = False
    note: str = ""
    mode: str = "directives"
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def flagged(self) -> list[str]:
        """Every flagged table, the members of a flagged unit included."""
        return [t for d in self.irrelevant for t in d.tables]

    def render(self, max_chars: int = 4000) -> str:
        """The directives, surest first, cut to `max_chars` with a note saying how many were left out."""
        if self.abstained or not self.irrelevant:
            return f"No directives for this question{': ' + self.note if self.note else ''}."
        lines = ["These tables are likely irrelevant to this question; explore them only if you find you need them:"]
        used = len(lines[0])
        for shown, d in enumerate(self.irrelevant):
            line = f"- {d.table}: {d.reason} ({d.tier} confidence)"
            if used + len(line) + 80 > max_chars and shown:
                rest = len(self.irrelevant) - shown
                lines.append(f"({rest} more likely irrelevant tables of lower confidence are not listed.)")
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)


def compute_directives(
    question: str,
    knowledge: Knowledge,
    catalog: Catalog,
    index: SchemaIndex,
    value_index: ValueIndex | None = None,
    settings: DirectiveSettings | None = None,
    inference: LLMColumnInference | None = None,
    units: Units | None = None,
) -> Directives:
    """Name the tables of `catalog` (already restricted to the caller's role) likely irrelevant to a question.

    With `inference`, the column names a model infers join the knowledge as written-out identifiers."""
    settings = settings or DirectiveSettings()
    if inference is not None:
        text = knowledge_text(knowledge)
        names = inference.infer(question, text, catalog)
        if names:
            knowledge = with_inferred_columns(text, names)
    scored = score_tables(question, knowledge, catalog, index, value_index, settings, units)
    return decide_directives(scored, settings, units)


def decide_directives(
    scored: TableScores, settings: DirectiveSettings | None = None, units: Units | None = None
) -> Directives:
    """Keep tables scoring at least the threshold, close them over join paths (declared and inferred), tie
    twins, flag the rest, surest first. With `units`, a flagged shard group is named once with its members."""
    settings = settings or DirectiveSettings()
    entries = scored.board.resolved()
    tables = list(entries)
    scores = {t: e.score for t, e in entries.items()}
    if scored.abstain_note:
        return Directives(relevant=tables, abstained=True, note=scored.abstain_note, scores=scores)
    unexplained = scored.account.unexplained
    if unexplained and scored.account.unexplained_share >= UNEXPLAINED_SHARE:
        return Directives(relevant=tables, abstained=True, note=_homeless_note(unexplained), scores=scores)
    threshold = keep_threshold(scored, settings)
    relevant = _keep(scores, scored, threshold, settings)
    if relevant:
        # A name no table, column, description or value explains may be a value of a table whose data the
        # index could not read: such a table is never ruled out (of those with a column the name's phrase says,
        # where it says one: "Alameda County").
        relevant |= scored.account.homes_unread()
        # ... nor a table whose name is a synonym of a word no table explains ("area" for `domain`).
        relevant |= scored.kin
    if relevant:
        relevant |= links(relevant, scored.lexicon)
    if relevant and units is not None:
        relevant = tie_twins(relevant, units, scored.text)
    if not relevant:
        note = "nothing in the question matches the schema"
        return Directives(relevant=tables, abstained=True, note=note, scores=scores)
    fit = settings.model.fit_for(scored.has_knowledge)
    flagged: list[Row] = []
    said: dict[tuple[int, bool], tuple[str, str, float]] = {}  # per entry and readability (most share one)
    in_short = named_in_short(scored.lexicon)
    for table in tables:
        if table in relevant:
            continue
        entry = entries[table]
        key = (id(entry), table not in scored.account.unread and table not in in_short)
        told = said.get(key)
        if told is None:
            # Sure only of a table the index reads whole (its data, every word of its name), for a question every
            # word of which found a home.
            readable = not unexplained and key[1] and not entry.values
            tier = "high" if entry.score < fit.high and readable else "medium"
            why = _flag_reason(entry.score, threshold, bool(entry.reason), unexplained)
            if entry.values:  # more tables hold it than `holders`: the likeliest are kept
                why = "a value of the question is in more tables than are kept for it, and likelier ones are kept"
            told = said[key] = (tier, why, round(1.0 - entry.score, 3))
        members = tuple(units.members.get(table, ())) if units is not None and table in units.labels else ()
        label = units.labels[table] if members and units is not None else table
        flagged.append((label, told[1], told[0], told[2], members))
    # Surest first, then by name: two stable sorts on plain keys, not one on a tuple per flagged table.
    flagged.sort(key=itemgetter(0))
    flagged.sort(key=itemgetter(3), reverse=True)
    return Directives(Flagged(flagged), sorted(relevant), scores=scores)


def keep_threshold(scored: TableScores, settings: DirectiveSettings) -> float:
    """The probability below which a table is flagged for this question: the fitted threshold, lowered in
    proportion for a question longer than `long_question_words` content words, raised (by the model's fitted
    `short_power`) for a shorter one without knowledge."""
    threshold = settings.threshold_for(scored.has_knowledge)
    words, usual = scored.question_words, settings.long_question_words
    if words > usual > 0:
        threshold *= usual / words
    elif 0 < words < usual and not scored.has_knowledge:
        threshold *= (usual / words) ** settings.model.without_knowledge.short_power
    return threshold


def _keep_holders(relevant: set[str], holders: set[str], scores: dict[str, float], most: int) -> set[str]:
    """Keep the tables holding one piece of evidence (an anchor column, a value): all of them when at most `most`
    do, else the likeliest of them, unless one is kept already. Returns the holders kept."""
    if len(holders) <= most:
        relevant |= holders
        return holders
    if not relevant & holders:
        best = max(scores[t] for t in holders)
        relevant |= {t for t in holders if scores[t] == best}
    return relevant & holders


def _keep(scores: dict[str, float], scored: TableScores, threshold: float, settings: DirectiveSettings) -> set[str]:
    relevant = {t for t, s in scores.items() if s >= threshold}
    # The threshold fitted for questions of the usual length: a short question's higher one (keep_threshold)
    # prunes below the home-schema floor and bridge ends no deeper.
    fitted = min(threshold, settings.threshold_for(scored.has_knowledge))
    if scored.schemas and relevant:
        # The best table's schema (a warehouse dataset), and any the question names, are where it is likely
        # answered.
        homes = {scored.schemas.get(max(scores, key=lambda t: scores[t])), *scored.named_schemas}
        floor = fitted * settings.home_schema_share
        relevant |= {t for t, s in scores.items() if s >= floor and scored.schemas.get(t) in homes}
    # The ends bridges may join: tables the model is sure of, and those kept on evidence (below).
    sure = {t for t in relevant if scores[t] >= fitted * settings.bridge_ends}
    # A column the knowledge writes out is an anchor: its table is kept whatever the model says. When
    # several tables have that column, the likeliest of them is kept (keeping them all cost 7 points of prune
    # on the BIRD tuning databases for 0.4 of safe rate).
    for holders in scored.anchor_groups:
        sure |= _keep_holders(relevant, set(holders), scores, 1)
    # A value of the question found in a table's data (or its value description) is evidence for it: its
    # holders are kept, or, when more tables than `holders` hold it, the likeliest of them.
    held: dict[str, set[str]] = {}
    board = scored.board
    for table in sorted(board.entries, key=board.position.__getitem__):  # only a table's own entry holds values
        for value in board.entries[table].values:
            held.setdefault(value, set()).add(table)
    for value_holders in held.values():
        sure |= _keep_holders(relevant, value_holders, scores, settings.holders)
    # A table the question names by a word WordNet relates to its name ("vessels" for `Ship`), or by a word of
    # its family ("followers" for `follows`), is kept when at most `holders` tables have that word in their
    # names. A related word never flags a table.
    for named in scored.synonym_groups:
        if len(named) <= settings.holders:
            relevant |= set(named)
            sure |= set(named)
    # A code/title dictionary and its fact table (`D_ICD_DIAGNOSES`, `DIAGNOSES_ICD`) go together: "the
    # diagnosis" may need either, and the join between them is the code.
    paired = keep_pairs(relevant, scored.lexicon)
    sure |= paired - relevant
    relevant = paired
    # A question needs at least one table: never flag the best-scoring one.
    if relevant:
        best = max(scores, key=lambda t: scores[t])
        relevant.add(best)
        sure.add(best)
    if relevant:
        # Tables on shortest join paths between two ends it is sure of: a path to a table kept on a middling
        # score is as unsure as that table (`bridge_ends`).
        relevant |= set(bridges(sure, scored.lexicon))
    return relevant


def _flag_reason(score: float, threshold: float, pointed: bool, unexplained: Sequence[str]) -> str:
    """Why a table is flagged, from what decided: nothing pointed to it, or what did fell short of the
    threshold. Never a match of the question's (that would be a reason to keep it), and, where words of the
    question found no table, those words."""
    if pointed:
        why = f"only weak evidence points to it (a likelihood of {score:.2f} it is needed; {threshold:.2f} keeps one)"
    else:
        why = "nothing in the question or knowledge points to it"
    if unexplained:
        words = ", ".join(f"'{w}'" for w in unexplained[:3]) + (" ..." if len(unexplained) > 3 else "")
        why += f"; {words} found no table, so look {'it' if len(unexplained) == 1 else 'them'} up if it matters"
    return why


# Most of the question unexplained: the schema does not speak its words, and any pick would be a guess.
UNEXPLAINED_SHARE = 0.5


def _homeless_note(words: Sequence[str]) -> str:
    shown = ", ".join(f"'{w}'" for w in words[:6]) + (f" and {len(words) - 6} more" if len(words) > 6 else "")
    return (
        f"no table, column, description or value explains most of the question's words ({shown}); "
        "look them up with search_schema or get_distinct_values"
    )


# A bound on the work of `bridges`, not a decision: a search from each kept table stops at this many joins. No
# figure of the tuning parts moves between 4 and no bound (2026-12-07: BIRD's 0.9699/0.6438 both, Spider-Syn's
# 0.5835 and 0.5833 of prune), while with no bound each question on `benchmarks/directives_scale.py`'s 5,000
# tables searched whole components (p50 64 -> 80 ms).
BRIDGE_SEARCH_HOPS = 4


def bridges(relevant: set[str], lexicon: Lexicon) -> dict[str, tuple[str, str]]:
    """Tables on shortest foreign-key paths between relevant tables (all shortest paths, up to
    BRIDGE_SEARCH_HOPS joins)."""
    added: dict[str, tuple[str, str]] = {}
    graph = lexicon.graph
    for source in sorted(relevant):
        if not graph.get(source):
            continue  # joins nothing: on no path (most of a warehouse's tables, all of one without keys)
        distance = {source: 0}
        parents: dict[str, set[str]] = {source: set()}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            if distance[node] >= BRIDGE_SEARCH_HOPS:
                continue
            for nxt in graph.get(node, ()):
                if nxt not in distance:
                    distance[nxt] = distance[node] + 1
                    parents[nxt] = {node}
                    queue.append(nxt)
                elif distance[nxt] == distance[node] + 1:
                    parents[nxt].add(node)
        # Each pair once (the later table in name order as the target), only the tables this search reached.
        for target in sorted(t for t, d in distance.items() if d >= 2 and t > source and t in relevant):
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
