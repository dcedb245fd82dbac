"""What a dataset gives the bench: questions, directive sets (Dataset) and scored sets (Suite)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from sophrosyne.bench.data.spider2_eval import Spider2Gold
    from sophrosyne.schema.catalog import Catalog

Metric = Literal["bird", "spider", "spider2"]


@dataclass(frozen=True)
class Question:
    id: str
    db_id: str
    question: str
    knowledge: str  # BIRD calls it evidence
    sql: str
    difficulty: str = "unknown"


@dataclass
class Dataset:
    name: str
    questions: list[Question]
    catalogs: dict[str, Catalog]
    database_files: dict[str, Path] = field(default_factory=dict)
    # Gold tables per question id, when the loader resolves them itself (Spider 2.0: qualified names,
    # wildcard tables); otherwise the bench parses each question's SQL as SQLite.
    gold: dict[str, frozenset[str]] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)  # questions the loader left out, and why
    # The databases anything may be tuned on, when the dataset fixes its own split (the rest are held out);
    # None when it has none, or when the directive model's origin names the split.
    tuning_databases: list[str] | None = None
    # How the bench changed it before a run (bench/perturb.py), "none" when it did not.
    perturbation: str = "none"
    # Where a renamed column's values are read in the database file: db_id -> {(table, column) as the catalog
    # names them: (table, column) as the file does}. Empty when the catalog uses the file's names.
    source_names: dict[str, dict[tuple[str, str], tuple[str, str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Skip:
    """A question left out of a run, and why (its database is absent, it has no gold result, ...)."""

    question_id: str
    db_id: str
    reason: str
    question: Question | None = field(default=None, repr=False, compare=False)  # for work that needs no run

    def to_json(self) -> dict[str, str]:
        return {"question_id": self.question_id, "db_id": self.db_id, "reason": self.reason}


@dataclass
class Suite:
    """Questions with their gold SQL, the database each runs on, and the metric that scores them."""

    name: str
    metric: Metric
    dialect: str
    questions: list[Question]
    targets: dict[str, str] = field(default_factory=dict)  # db_id -> SQLite file or server URL
    skipped: list[Skip] = field(default_factory=list)
    catalogs: dict[str, Catalog] = field(default_factory=dict)
    descriptions: dict[str, Path] = field(default_factory=dict)  # db_id -> BIRD description folder
    spider2: Spider2Gold | None = None  # gold result tables and their comparison rules
    order: list[str] = field(default_factory=list)  # every question id of the dataset, skipped ones too

    def skipped_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for skip in self.skipped:
            counts[skip.reason] = counts.get(skip.reason, 0) + 1
        return counts
