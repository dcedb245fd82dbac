"""Moderation of one role's exploration: its indexes, the directives it was given, and the reminders due."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from sophrosyne.catalog import Catalog
from sophrosyne.directives import (
    Directives,
    DirectiveSettings,
    LLMColumnInference,
    compute_directives,
    oracle_directives,
    score_tables,
)
from sophrosyne.directives.prepared import PreparedSchema, prepare_schema
from sophrosyne.directives.scoring import warm
from sophrosyne.errors import ConfigError
from sophrosyne.index import SchemaIndex, ValueBudget, ValueIndex, load_or_build
from sophrosyne.index.values import values_path
from sophrosyne.joins import Probe
from sophrosyne.results import CHARS_PER_TOKEN, Directive, SchemaHit, SourceRelevance, shorten
from sophrosyne.settings import Settings

Fetch = Callable[[str, str, int], list[Any]]
DIRECTIVE_SHARE = 0.5  # most of a list_tables response the directives may take: the tables come first
logger = logging.getLogger("sophrosyne.moderation")


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
        self._index: SchemaIndex | None = None
        self._values: ValueIndex | None = None
        self._prepared: PreparedSchema | None = None
        self._lock = threading.Lock()
        self._prepare_lock = threading.Lock()

    @property
    def prepared(self) -> PreparedSchema:
        """The schema as directives see it: shard groups as units, and the joins it does not declare,
        inferred from names and confirmed by values read through the role's secured path."""
        with self._prepare_lock:
            if self._prepared is None:
                self._prepared = prepare_schema(
                    self.catalog, self.fetch, self.probe, budget_s=self.settings.join_inference_s
                )
            return self._prepared

    @property
    def index(self) -> SchemaIndex:
        """The hybrid column index (one table per unit), from the cache when this schema was indexed before."""
        catalog = self.prepared.catalog
        with self._lock:
            if self._index is None:
                index = load_or_build(catalog, self.settings.cache_dir)
                warm(catalog, index)
                self._index = index
            return self._index

    @property
    def values(self) -> ValueIndex:
        with self._lock:
            if self._values is None:
                self._values = self._load_values()
            return self._values

    def _load_values(self) -> ValueIndex:
        # A restricted role's values are read through its own secured path and never cached on disk:
        # another role with the same columns must not see them.
        path = values_path(self.settings.cache_dir, self.catalog)
        if self.shared and path.exists():
            try:
                return ValueIndex.load(path)
            except (OSError, ValueError, KeyError):
                pass  # a damaged entry is rebuilt
        values = ValueIndex.build(self.prepared.catalog, self.fetch, ValueBudget(seconds=self.settings.value_index_s))
        if self.shared:
            path.parent.mkdir(parents=True, exist_ok=True)
            values.save(path)
        return values

    def warm(self) -> None:
        """Build or load both indexes now (a server does this at start, in the background)."""
        try:
            _ = self.index, self.values
        except Exception:  # the first real call builds again and reports its own error
            logger.exception("could not build the directive index in advance")

    def search(self, query: str, k: int) -> list[SchemaHit]:
        hits = self.index.search(query, k=k)
        return [
            SchemaHit(table=h.table, column=h.column, score=h.score, description=_column_text(self.catalog, h))
            for h in hits
            if h.table in self.catalog.tables
        ]

    def directives(self, question: str | None, knowledge: str | None) -> tuple[list[Directive], str | None]:
        """The tables likely irrelevant to the question, remembered for reminders; with a note when none."""
        mode = self.settings.directives
        if mode == "none" or not (question or knowledge):
            return [], None
        computed: Directives
        if mode == "oracle":
            if not self.oracle_sql:
                raise ConfigError(
                    "oracle directives need the reference SQL of the question.",
                    hint="Set it with Environment.set_oracle(sql); the oracle mode is for experiments.",
                )
            computed = oracle_directives(self.oracle_sql, self.catalog, self.dialect)
        else:
            prepared = self.prepared
            computed = compute_directives(
                question or "",
                knowledge,
                prepared.catalog,
                self.index,
                self.values,
                inference=self._inference(),
                units=prepared.units,
            )
        given = [Directive(table=d.table, reason=d.reason, confidence=d.tier) for d in computed.irrelevant]
        # A unit (a shard group) is named once, but any of its tables earns the reminder.
        self.given = {t.lower(): g for d, g in zip(computed.irrelevant, given, strict=True) for t in d.tables}
        self.given.update({g.table.lower(): g for g in given})
        shown, note = self._bounded(given)
        if not given:
            note = f"No directives for this question{': ' + computed.note if computed.note else ''}."
        return shown, note

    def _bounded(self, given: list[Directive]) -> tuple[list[Directive], str | None]:
        """The directives (surest first) that fit their share of the token budget, with a note for the rest."""
        budget = int(self.settings.token_budget * CHARS_PER_TOKEN * DIRECTIVE_SHARE)
        used = 0
        for count, d in enumerate(given):
            used += len(d.table) + len(d.reason) + 30
            if used > budget and count:
                rest = len(given) - count
                return given[:count], (
                    f"{rest} more tables are likely irrelevant, with lower confidence; not listed to stay within "
                    "the token budget."
                )
        return given, None

    def relevance(self, question: str | None, knowledge: str | None) -> SourceRelevance | None:
        """Whether this whole database is likely irrelevant to a question, before any table is named.

        The same table scores directives keep tables by: when no table of the source reaches the threshold,
        nothing in the question points here. Tiny schemas and the `none` mode give no verdict (None).
        """
        if self.settings.directives != "directives" or not (question or knowledge) or not self.catalog.tables:
            return None
        settings = DirectiveSettings()
        # Scored as directives score: shard groups as units, over the joins the schema declares or implies.
        scored = score_tables(question or "", knowledge, self.prepared.catalog, self.index, self.values, settings)
        scores = scored.scores
        if not scores:
            return None
        best = max(scores, key=lambda t: scores[t])
        threshold = settings.threshold_for(scored.has_knowledge)
        score = round(scores[best], 3)
        if score >= threshold and not scored.abstain_note:
            return SourceRelevance(
                likely_irrelevant=False, best_table=best, score=score, reason=f"best match {best} ({score:.2f})"
            )
        reason = scored.abstain_note or f"no table matches the question well (best: {best}, {score:.2f})"
        return SourceRelevance(likely_irrelevant=True, best_table=best, score=score, reason=reason)

    def _inference(self) -> LLMColumnInference | None:
        """The paper's column-name inference by an inexpensive model, only when one is configured."""
        base, model = self.settings.llm_base_url, self.settings.llm_model
        if not base:
            return None
        if not model:
            raise ConfigError("llm_base_url is set but llm_model is not.", hint="Set SOPHROSYNE_LLM_MODEL.")
        key = self.settings.llm_api_key.get_secret_value() if self.settings.llm_api_key else None
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


def _column_text(catalog: Catalog, hit: Any) -> str:
    table = catalog.table(hit.table)
    column = table.column(hit.column) if table else None
    if column is None:
        return ""
    text = "; ".join(p for p in (column.readable_name, column.description) if p)
    return shorten(text, 120)
