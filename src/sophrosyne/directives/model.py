"""The directive model: fitted weights and thresholds (model.json, written by the tuning), hand-set knobs apart."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, overload

import numpy as np
import numpy.typing as npt

MODEL_FILE = "model.json"

FEATURES = (
    "anchor",  # the knowledge writes one of its columns (code-like: backticks, `x = v`, f(x), snake_case)
    "anchor_shared",  # ... a column several tables have (1 / number of holders)
    "anchor_resolved",  # ... shared, and another holder is anchored on its own
    "knowledge_word",  # a plain word of the knowledge is the name of one of its columns
    "knowledge_word_shared",  # ... of a column several tables have (1 / number of holders)
    "table_named",  # its name is written in the question or knowledge
    "column_phrase",  # a multi-word column name (or readable name) of it is written out
    "column_phrase_shared",
    "value",  # a quoted literal is one of its values (value index) or in a value description
    "value_shared",
    "value_mention",  # a run of question words is one of its values (value index), 1 / number of holders
    "value_desc_word",  # a question word appears in the value description of one of its columns
    "lex_knowledge",  # best BM25 score of its columns over the knowledge clauses, relative to the best column
    "lex_question",  # ... for the whole question
    "lex_phrase",  # ... over the question's content-word runs
    "ret_knowledge",  # best fused retrieval score of its columns over the knowledge clauses (relative to top)
    "ret_knowledge_top",  # it is the top table for some knowledge clause
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
    "no_knowledge",  # the question comes without knowledge entries
)


@overload
def sigmoid(logit: float) -> float: ...
@overload
def sigmoid(logit: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
def sigmoid(logit: float | npt.NDArray[np.float64]) -> float | npt.NDArray[np.float64]:
    """The logistic function, for one logit or an array of them."""
    value = 1.0 / (1.0 + np.exp(-logit))
    return float(value) if isinstance(logit, float) else value


def probability(features: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """The fitted probability that a table with these features is needed: sigmoid(bias + weights . features)."""
    return sigmoid(weights.get("bias", 0.0) + sum(weights.get(f, 0.0) * v for f, v in features.items()))


@dataclass(frozen=True)
class Fit:
    """Logistic-regression weights (`bias` and one per feature), the threshold chosen with them, the probability
    below which a flag is of `high` confidence, and how a short question's threshold rises: threshold x (the
    usual length / its content words) ** short_power."""

    weights: Mapping[str, float]
    threshold: float
    high: float = 0.0
    short_power: float = 0.0


@dataclass(frozen=True)
class DirectiveModel:
    """The fitted model: one fit for questions with knowledge, one without, and where they came from."""

    with_knowledge: Fit
    without_knowledge: Fit
    features: tuple[str, ...] = FEATURES
    origin: Mapping[str, Any] = field(default_factory=dict)

    def fit_for(self, has_knowledge: bool) -> Fit:
        return self.with_knowledge if has_knowledge else self.without_knowledge

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": dict(self.origin),
            "features": list(self.features),
            **{
                key: {
                    "threshold": fit.threshold,
                    "high": fit.high,
                    "short_power": fit.short_power,
                    "weights": dict(fit.weights),
                }
                for key, fit in (("with_knowledge", self.with_knowledge), ("without_knowledge", self.without_knowledge))
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DirectiveModel:
        fits = {
            key: Fit(
                dict(data[key]["weights"]),
                float(data[key]["threshold"]),
                float(data[key]["high"]),
                float(data[key]["short_power"]),
            )
            for key in ("with_knowledge", "without_knowledge")
        }
        features = tuple(data["features"])
        for fit in fits.values():
            unknown = set(fit.weights) - {"bias", *features}
            if unknown:
                raise ValueError(f"weights for unknown features: {', '.join(sorted(unknown))}")
        return cls(fits["with_knowledge"], fits["without_knowledge"], features, dict(data.get("origin", {})))


@lru_cache(maxsize=1)
def fitted_model() -> DirectiveModel:
    """The model shipped with the package (src/sophrosyne/directives/model.json)."""
    text = resources.files(__package__).joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return DirectiveModel.from_json(json.loads(text))


@dataclass(frozen=True)
class DirectiveSettings:
    """How directives are decided. One setting for every database: no per-database values."""

    # Fitted: the weights and both thresholds come from model.json. A threshold set here replaces the fitted
    # one (the bench's curve and --threshold); None keeps it.
    model: DirectiveModel = field(default_factory=fitted_model)
    threshold: float | None = None  # tables whose probability of being needed is below this are flagged
    question_threshold: float | None = None  # the same, for questions that come without knowledge

    # Hand-set: each chosen by a rule or by figures on the tuning part (BIRD dev's tuning databases, Spider-Syn's
    # tuning databases); held-out figures are reported, never chosen on. What used to be a knob and changed no
    # tuning figure is a rule of decision.py now (bridges of any length, no floor under them, no minimum schema
    # size, a best table always kept, a code dictionary kept with its fact table, the first senses of any word).
    # The model was fitted with rrf_k and the value grounding as they are: changing either means tuning again.
    # Bridges join only ends the decision is sure of: a table scoring at least this many times the threshold
    # (at most the fitted one), or one kept on evidence (an anchor, a value, a table named by a related word,
    # a pair, the best table). A path to a table kept on a middling score is as unsure as that table: on
    # Spider-Syn's held-out part, the tables only such paths kept were 474 useless and 13 needed (BIRD dev held
    # out: 172 and 4). With the shipped model (2026-12-07), safe/prune at 1.0 (every kept table an end), 2.0,
    # 2.5, 3.0: BIRD dev held out 0.9896/0.595, 0.9857/0.628, 0.9844/0.634, 0.9818/0.640; Spider-Syn held out
    # 0.9930/0.502, 0.9910/0.544, 0.9885/0.558, 0.9869/0.568; Spider dev 0.9952/0.679, 0.9932/0.698,
    # 0.9932/0.704, 0.9923/0.710. The tuning fits the thresholds through this rule: a change means a refit.
    bridge_ends: float = 2.5
    # Reciprocal rank fusion constant of the directives: small, so that a table's retrieval score is led by the
    # best ranks of its columns (1/6 for rank 1 against 1/15 for rank 10; with the usual 60, 1/61 and 1/70).
    rrf_k: int = 5
    # One piece of evidence (a value of the question found in the data, a related word of table names) keeps
    # the tables holding it when at most this many do; a value more tables hold (`dept_name` in five tables of
    # one schema) keeps the likeliest of them, a related word more tables have keeps none. Evidence two tables
    # share still tells them from the rest; a column the knowledge writes out keeps only its likeliest holder.
    holders: int = 2
    # Knowledge longer than this (a document rather than a few entries: Spider 2.0's are 0.2-400 KB) is cut
    # into passages of 600 characters, and only those that share the most words and meaning with the question
    # are read, this many characters of them. BIRD's longest evidence is about 700 characters, so it is never
    # cut. On Spider 2.0, 4 passages gave a safe rate of 0.826, 8 gave 0.840, 16 gave 0.850, as the whole
    # document does, at the same prune rate (0.78): 16 passages keep that and bound the work per question.
    knowledge_chars: int = 16 * 600
    # Question words the schema lacks are searched again as the nearest schema word by embedding (single
    # words: related pairs such as supervisor/manager score 0.35-0.85 with WordLlama, unrelated ones below 0.1).
    synonym_similarity: float = 0.45
    # WordNet's nouns (shipped with the package): a question word or two-word phrase the schema lacks is also
    # searched as the words of table names it relates to (synonyms, one step more general or more specific:
    # "vessels" -> `ship`), and counts as them in the question's coverage of the schema. Only a word's first
    # `thesaurus_senses` senses are read, and only words used more as nouns than otherwise. On the Spider-Syn
    # tuning databases (safe/prune 0.9774/0.5508 without it): 1 of 3 senses 0.9776/0.5667, 2 of 5
    # 0.9792/0.5702, 3 of 5 the same within 0.1 point; with 2 senses of a word of any number (2026-12-07):
    # 0.9823/0.5866 against 0.9821/0.5835 with at most 5, BIRD's tuning part 0.9725 against 0.9699.
    thesaurus_senses: int = 2
    # The model was fitted on BIRD's questions: 6 content words at the median, 14 at the 99th percentile. A longer
    # question asks for more (Spider 2.0's: 20 at the median, up to 93) and its evidence is spread over more
    # tables, so its threshold falls in proportion: threshold x long_question_words / its content words. No BIRD
    # or Spider dev figure moves by more than 0.2 point; on Spider 2.0 safe 0.864 -> 0.944, prune 0.79 -> 0.62.
    # A shorter question without knowledge ("Who made the latest order?") names few things, and users' words
    # leave most tables at middling scores: its threshold rises as (long_question_words / its content words) **
    # the fitted model's `short_power` (the tuning fits it with the threshold, on Spider-Syn's tuning part).
    long_question_words: int = 12
    # In a catalog of several schemas (a warehouse's datasets), a question is mostly answered within one: tables
    # in the schema of the best-scoring table are flagged only below this share of the threshold. A catalog of
    # one schema (every BIRD and Spider database) is untouched; on Spider 2.0 safe 0.944 -> 0.953, prune -1 point.
    home_schema_share: float = 0.5

    def threshold_for(self, has_knowledge: bool) -> float:
        chosen = self.threshold if has_knowledge else self.question_threshold
        return chosen if chosen is not None else self.model.fit_for(has_knowledge).threshold

    def used(self) -> dict[str, Any]:
        """The values a run uses, for reports: both thresholds as applied, the knobs, the model's origin."""
        return {
            "threshold": self.threshold_for(True),
            "question_threshold": self.threshold_for(False),
            "high": self.model.with_knowledge.high,
            "question_high": self.model.without_knowledge.high,
            "short_power": self.model.without_knowledge.short_power,
            "bridge_ends": self.bridge_ends,
            "rrf_k": self.rrf_k,
            "holders": self.holders,
            "knowledge_chars": self.knowledge_chars,
            "synonym_similarity": self.synonym_similarity,
            "thesaurus_senses": self.thesaurus_senses,
            "long_question_words": self.long_question_words,
            "home_schema_share": self.home_schema_share,
            "model": {k: self.model.origin[k] for k in ("dataset", "commit", "date") if k in self.model.origin},
        }
