"""Moderation of one role's exploration: its indexes, the directives it was given, and the reminders due."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sophrosyne.base import deadline
from sophrosyne.base.background import Background
from sophrosyne.base.text import shorten
from sophrosyne.directives import (
    Directives,
    DirectiveSettings,
    LLMColumnInference,
    compute_directives,
    keep_threshold,
    oracle_directives,
    score_tables,
)
from sophrosyne.directives.prepared import PreparedSchema, complete_joins, prepare_schema
from sophrosyne.directives.scoring import warm
from sophrosyne.errors import ConfigError, NotReady, QueryTimeout
from sophrosyne.index import SchemaIndex, ValueBudget, ValueIndex, load_or_build
from sophrosyne.index.cache import clean_stale, reason, tell_once, unavailable
from sophrosyne.index.embedders import embedder_named
from sophrosyne.index.lexicon import saved_lexicon
from sophrosyne.index.values import values_path
from sophrosyne.schema.catalog import Catalog
from sophrosyne.schema.join_checks import JoinInference, Probe
from sophrosyne.settings import Settings
from sophrosyne.tools.list_sources import SourceRelevance
from sophrosyne.tools.list_tables import Directive
from sophrosyne.tools.search_schema import SchemaHit

Fetch = Callable[[str, str, int], list[Any]]
# Time kept back from a call's deadline for what follows the directives: listing and rendering the tables.
LISTING_MARGIN_S = 1.0
# Time kept back, beyond that, for computing the directives once the value index is waited for.
VALUES_WAIT_MARGIN_S = 2.0
logger = logging.getLogger("sophrosyne.directives.moderator")
T = TypeVar("T")


class Moderator:
    """Directives for a role's catalog, computed from indexes built over what that role may see.

    The schema index covers only the role's tables and columns, and the value index is read through the
    role's secured path, so no directive, reason or search hit can name what the role cannot see.
    """

    def __init__(
        self,
        catalog: Catalog,
        settings: Settings,
        fetch: Fetch,
        dialect: str,
        *,
        shared: bool,
        probe: Probe | None = None,
    ) -> None:
        self.catalog = catalog
        self.probe = probe
        self.shared = shared  # an unrestricted role: its value index may be cached on disk and reused
        self.settings = settings
        self.fetch = fetch
        self.dialect = dialect
        self.oracle_sql: str | None = None
        self.given: dict[str, Directive] = {}
        # Built in the background, not within a call: a call waits for them within its deadline, and a
        # build outlives a call that gave up on it, for the next one.
        self._prepared = Background(self._prepare, "sophrosyne-joins")
        self._index = Background(self._build_index, "sophrosyne-index")
        self._values = Background(self._load_values, "sophrosyne-values")
        # The join checks a start's time budget cut, continued after a first answer for the next start.
        self._more_joins = Background(self.complete_joins, "sophrosyne-joins-rest")
        self.stopped = False  # the database is closing: background work stops at its next read

    @property
    def prepared(self) -> PreparedSchema:
        """The schema as directives see it: shard groups as units, and the joins it does not declare,
        inferred from names and confirmed by values read through the role's secured path (NotReady if that
        takes longer than the call has)."""
        return _ready(self._prepared, "join inference", self.settings, len(self.catalog.tables))

    def _prepare(self) -> PreparedSchema:
        # Joins confirmed through a restricted role's secured path are its own: only a shared role's are saved.
        cache = self.settings.paths.cache_dir if self.shared else None
        return prepare_schema(
            self.catalog, self.fetch, self.probe, budget_s=self.settings.reading.join_inference_s, cache_dir=cache
        )

    def complete_joins(self) -> JoinInference:
        """Check every join candidate that the saved inference of this schema left unchecked (its time budget
        cut it), saving as it goes, so that the next start reads them checked, and save the lexicon of the
        schema with them; a restricted role's joins are its own and never saved: they are inferred within the
        budget instead."""
        if not self.shared or self.probe is None:
            return self.prepared.joins
        cache = self.settings.paths.cache_dir
        joins = complete_joins(
            self.catalog,
            self.fetch,
            self.probe,
            cache,
            slice_s=self.settings.reading.join_inference_s,
            stop=lambda: self.stopped,
        )
        if joins.complete and not self.stopped:
            # The lexicon the next start derives from the catalog and these joins, saved for it too: a cache
            # folder mounted read-only after `sophrosyne index` then holds all that a start reads.
            budget = self.settings.reading.join_inference_s
            prepared = prepare_schema(self.catalog, self.fetch, self.probe, budget_s=budget, cache_dir=cache)
            saved_lexicon(prepared.catalog, cache)
        return joins

    def _build_index(self) -> SchemaIndex:
        prepared = self._prepared.wait(None)
        assert prepared is not None  # waited for without a limit
        catalog = prepared.catalog
        embedder = embedder_named(self.settings.inference.embedder)  # this server's settings, not a fresh read
        index = load_or_build(catalog, self.settings.paths.cache_dir, embedder)
        # A restricted role's catalog holds joins confirmed through its own view: its lexicon is not saved.
        saved_lexicon(catalog, self.settings.paths.cache_dir if self.shared else None)
        warm(catalog, index)
        return index

    @property
    def index(self) -> SchemaIndex:
        """The hybrid column index (one table per unit), from the cache when this schema was indexed before."""
        return _ready(self._index, "the schema index", self.settings, len(self.catalog.tables))

    @property
    def values(self) -> ValueIndex:
        return _ready(self._values, "the value index", self.settings, len(self.catalog.tables))

    def _load_values(self) -> ValueIndex:
        # A restricted role's values are read through its own secured path and never cached on disk:
        # another role with the same columns must not see them.
        path = values_path(self.settings.paths.cache_dir, self.catalog)
        if self.shared:
            clean_stale(path.parent)
        if self.shared and path.exists():
            try:
                return ValueIndex.load(path)  # a partial one too: directives say so
            except (OSError, ValueError, KeyError):
                pass  # a damaged entry is rebuilt
        values = ValueIndex.build(
            self.prepared.catalog, self.fetch, ValueBudget(seconds=self.settings.reading.value_index_s)
        )
        if self.shared:
            try:
                values.save(path)
            except OSError as exc:  # a full or read-only cache: kept in memory, told once
                values.unsaved = reason(exc)
                tell_once(f"the value index could not be saved in {path.parent} ({values.unsaved}): kept in memory")
        return values

    def warm(self, wait: bool = True) -> None:
        """Build or load both indexes now, in the background, and wait until they are there (a benchmark does
        this before its clock starts); without `wait`, return at once (a server, at start-up)."""
        self._index.start()
        self._values.start()
        if wait:
            self._index.wait(None)
            self._values.wait(None)

    def search(self, query: str, k: int) -> list[SchemaHit]:
        hits = self.index.search(query, k=k)
        return [
            SchemaHit(table=h.table, column=h.column, score=h.score, description=_column_text(self.catalog, h))
            for h in hits
            if h.table in self.catalog.tables
        ]

    def directives(self, question: str | None, knowledge: str | None) -> tuple[list[Directive], str | None]:
        """The tables likely irrelevant to the question, remembered for reminders; with a note when none."""
        mode = self.settings.inference.directives
        if mode == "none" or not (question or knowledge):
            return [], None
        computed: Directives
        values: ValueIndex | None = None
        index: SchemaIndex | None = None
        failed: str | None = None  # why the value index could not be built
        if mode == "oracle":
            if not self.oracle_sql:
                raise ConfigError(
                    "oracle directives need the reference SQL of the question.",
                    hint="Set it with Environment.set_oracle(sql); the oracle mode is for experiments.",
                )
            computed = oracle_directives(self.oracle_sql, self.catalog, self.dialect)
        else:
            waited = not self._index.ready  # the index was still being built or read when the call came
            built, inference = self.index, self._inference()
            index = built
            prepared = self.prepared  # ready once the index is: the index is built over it
            # Literal grounding makes directives better, not possible: without its index (still being read,
            # within its own budget) they are computed from names and retrieval alone, and say so.
            try:
                values = self._values.wait(deadline.left(LISTING_MARGIN_S + VALUES_WAIT_MARGIN_S))
            except Exception as exc:  # a failed value index is read again next time; directives go on without it
                failed = reason(exc) if isinstance(exc, OSError) else type(exc).__name__
                tell_once(f"the value index could not be built: {exc!r}")
            # The work runs beside the call, which stops waiting at its deadline (a margin is left to answer).
            done, result = deadline.run_side(
                lambda: compute_directives(
                    question or "",
                    knowledge,
                    prepared.catalog,
                    built,
                    values,
                    inference=inference,
                    units=prepared.units,
                ),
                deadline.left(LISTING_MARGIN_S),
                name="sophrosyne-directives",
            )
            if not done or result is None:
                if waited:  # the time went on waiting for the index: the next call has all of it
                    raise QueryTimeout(
                        "the schema index was ready only near the end of this call, too late to compute "
                        "directives within its time limit.",
                        hint="Ask again: the index is ready now.",
                    )
                raise QueryTimeout(
                    f"computing directives took longer than the {self.settings.limits.timeout_s:g} s time limit.",
                    hint="Ask with a shorter question or knowledge.",
                )
            computed = result
            if not prepared.joins.complete and self.shared:
                self._more_joins.start()  # after the answer's work, for the next start
        given = [Directive(table=d.table, reason=d.reason, confidence=d.tier) for d in computed.irrelevant]
        # A unit (a shard group) is named once, but any of its tables earns the reminder.
        self.given = {t.lower(): g for d, g in zip(computed.irrelevant, given, strict=True) for t in d.tables}
        self.given.update({g.table.lower(): g for g in given})
        note = None if given else f"No directives for this question{': ' + computed.note if computed.note else ''}."
        if mode == "directives":
            note = _joined(note, _index_state(values, index, failed))
        return given, note

    def relevance(self, question: str | None, knowledge: str | None) -> SourceRelevance | None:
        """Whether this whole database is likely irrelevant to a question, before any table is named.

        The same table scores directives keep tables by: when no table of the source reaches the threshold,
        nothing in the question points here. Tiny schemas and the `none` mode give no verdict (None).
        """
        if self.settings.inference.directives != "directives" or not (question or knowledge) or not self.catalog.tables:
            return None
        settings = DirectiveSettings()
        index = self.index
        # Scored as directives score: shard groups as units, over the joins the schema declares or implies.
        scored = score_tables(
            question or "", knowledge, self.prepared.catalog, index, self.values, settings, self.prepared.units
        )
        scores = scored.scores
        if not scores:
            return None
        best = max(scores, key=lambda t: scores[t])
        threshold = keep_threshold(scored, settings)
        score = round(scores[best], 3)
        if score >= threshold and not scored.abstain_note:
            return SourceRelevance(
                likely_irrelevant=False, best_table=best, score=score, reason=f"best match {best} ({score:.2f})"
            )
        reason = scored.abstain_note or f"no table matches the question well (best: {best}, {score:.2f})"
        return SourceRelevance(likely_irrelevant=True, best_table=best, score=score, reason=reason)

    def _inference(self) -> LLMColumnInference | None:
        """The paper's column-name inference by an inexpensive model, only when one is configured."""
        base, model = self.settings.inference.base_url, self.settings.inference.model
        if not base:
            return None
        if not model:
            raise ConfigError("llm_base_url is set but llm_model is not.", hint="Set SOPHROSYNE_LLM_MODEL.")
        key = self.settings.inference.api_key.get_secret_value() if self.settings.inference.api_key else None
        return LLMColumnInference(base, model, api_key=key)

    def reminder(self, tables: Iterable[str]) -> str | None:
        """A one-line reminder when a call touches tables a directive named."""
        named = [self.given[t.lower()] for t in dict.fromkeys(tables) if t.lower() in self.given]
        if not named:
            return None
        listed = "; ".join(f"{d.table} ({d.reason})" for d in named)
        return (
            f"reminder: list_tables named {listed} as likely irrelevant to this question; "
            "use it only if the evidence clearly needs it."
        )


def _index_state(values: ValueIndex | None, index: SchemaIndex | None, failed: str | None) -> str | None:
    """One line on what the directives were computed without, or None when they had everything."""
    if failed:
        return f"the value index could not be built ({failed}): directives from names only this time."
    if values is None:
        return "the values are still being indexed: directives from names only this time."
    unsaved = (index.unsaved if index is not None else None) or values.unsaved
    if unsaved:
        return f"the directive indexes could not be saved in the cache folder ({unsaved}): kept in memory only."
    if not values.complete:
        return (
            "the value index is partial (cut by its limits): fewer literals are recognised; "
            "`sophrosyne index` completes it."
        )
    return None


def _joined(note: str | None, more: str | None) -> str | None:
    if not more:
        return note
    return f"{note} {more}" if note else more[:1].upper() + more[1:]


def _ready(loading: Background[T], what: str, settings: Settings, tables: int) -> T:
    """What `loading` builds, waited for within the call's deadline; NotReady if it takes longer, and
    CacheUnavailable (not an internal error) when the cache folder failed it."""
    try:
        value = loading.wait(deadline.left(LISTING_MARGIN_S))
    except OSError as exc:
        tell_once(f"{what} could not be built: {exc}")
        raise unavailable(what, None, exc, "built") from None
    if value is None:
        raise NotReady(
            f"{what} of {tables:,} tables is still being built ({loading.running_s:.0f} s so far).",
            hint="Ask again in a few seconds; list_tables(pattern=...) and describe_table work meanwhile.",
        )
    return value


def _column_text(catalog: Catalog, hit: Any) -> str:
    table = catalog.table(hit.table)
    column = table.column(hit.column) if table else None
    if column is None:
        return ""
    text = "; ".join(p for p in (column.readable_name, column.description) if p)
    return shorten(text, 120)
