"""Fit the directive model on the tuning databases only: logistic-regression weights and thresholds.

Example: python -m sophrosyne.bench.tune --dataset bird-dev
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from sophrosyne.bench.datasets import load_dataset
from sophrosyne.bench.directives_bench import build_indexes, split_databases
from sophrosyne.directives import (
    FEATURES,
    DirectiveSettings,
    TableScores,
    decide_directives,
    gold_tables,
    score_tables,
)
from sophrosyne.index.embedders import Embedder, default_embedder

Scored = list[tuple[set[str], TableScores]]
THRESHOLDS = tuple(round(t, 3) for t in np.arange(0.05, 0.40, 0.005))


def score_split(
    dataset_name: str, split: str = "tune", drop_knowledge: bool = False, embedder: Embedder | None = None
) -> Scored:
    """Gold tables and table features of every question of a split.

    Without `drop_knowledge`, only the questions that come with knowledge (the others go to the model
    without knowledge). With it, every question, the knowledge appended: the model for questions without
    knowledge learns from questions that carry their knowledge in their own words."""
    dataset = load_dataset(dataset_name)
    tune, holdout = split_databases(dataset.catalogs)
    keep = set(tune if split == "tune" else holdout if split == "holdout" else dataset.catalogs)
    dataset.questions = [q for q in dataset.questions if q.db_id in keep]
    dataset.catalogs = {k: v for k, v in dataset.catalogs.items() if k in keep}
    dataset.database_files = {k: v for k, v in dataset.database_files.items() if k in keep}
    indexes, values, _, _ = build_indexes(dataset, embedder or default_embedder())
    settings = DirectiveSettings(min_tables=0)
    scored: Scored = []
    for q in dataset.questions:
        if not drop_knowledge and not q.evidence.strip():
            continue
        catalog = dataset.catalogs[q.db_id]
        try:
            gold = gold_tables(q.sql, catalog)
        except Exception:
            continue
        question = f"{q.question} {q.evidence}" if drop_knowledge else q.question
        evidence = "" if drop_knowledge else q.evidence
        scored.append(
            (gold, score_tables(question, evidence, catalog, indexes[q.db_id], values.get(q.db_id), settings))
        )
    return scored


def features(scored: Scored) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Feature rows (one per question and table) and labels (1 = the gold SQL reads the table)."""
    rows = [[e.features.get(f, 0.0) for f in FEATURES] for _, s in scored for e in s.board.values()]
    labels = [1.0 if t in gold else 0.0 for gold, s in scored for t in s.board]
    return np.array(rows), np.array(labels)


def fit(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], positive_weight: float = 3.0, l2: float = 1e-3
) -> npt.NDArray[np.float64]:
    """Weights (bias last) of a class-weighted, L2-regularised logistic regression, by Newton steps."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    sample = np.where(y > 0, positive_weight, 1.0)
    sample /= sample.sum()
    ridge = l2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ ((p - y) * sample) + ridge @ w
        hessian = (xb * (sample * p * (1 - p))[:, None]).T @ xb + ridge
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


def as_weights(w: npt.NDArray[np.float64]) -> tuple[tuple[str, float], ...]:
    return (("bias", round(float(w[-1]), 3)), *((f, round(float(v), 3)) for f, v in zip(FEATURES, w[:-1], strict=True)))


def rescore(scored: Scored, weights: tuple[tuple[str, float], ...]) -> None:
    table = dict(weights)
    for _, s in scored:
        for entry in s.board.values():
            logit = table.get("bias", 0.0) + sum(table.get(f, 0.0) * v for f, v in entry.features.items())
            entry.score = float(1.0 / (1.0 + np.exp(-logit)))


def safe_rate(scored: Scored, threshold: float) -> float:
    settings = DirectiveSettings(threshold=threshold, question_threshold=threshold)
    safe = sum(1 for gold, s in scored if not gold & set(decide_directives(s, settings).flagged))
    return safe / len(scored)


def pick_threshold(scored: Scored, target: float) -> float:
    """The largest threshold whose safe rate on these (tuning) questions is at least `target`."""
    passing = [t for t in THRESHOLDS if safe_rate(scored, t) >= target]
    return max(passing) if passing else THRESHOLDS[0]


def tune(
    dataset: str = "bird-dev", positive_weight: float = 3.0, target: float = 0.975, embedder: Embedder | None = None
) -> DirectiveSettings:
    """Settings fitted on the tuning split: weights and threshold with knowledge, and without."""
    fitted: dict[str, object] = {}
    for key, drop in (("weights", False), ("question_weights", True)):
        scored = score_split(dataset, "tune", drop_knowledge=drop, embedder=embedder)
        w = fit(*features(scored), positive_weight)
        # No tuning database ships its data, so the value-index feature cannot be fitted: it takes at least
        # the weight of the same literal found through the value descriptions.
        w[FEATURES.index("value_mention")] = max(w[FEATURES.index("value")], 1.0)
        weights = as_weights(w)
        rescore(scored, weights)
        fitted[key] = weights
        fitted["threshold" if key == "weights" else "question_threshold"] = pick_threshold(scored, target)
    return replace(DirectiveSettings(), **fitted)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bird-dev")
    parser.add_argument("--positive-weight", type=float, default=3.0)
    parser.add_argument("--target", type=float, default=0.975, help="Safe rate the thresholds must keep on tune.")
    args = parser.parse_args()
    settings = tune(args.dataset, args.positive_weight, args.target)
    print(f"threshold = {settings.threshold}, question_threshold = {settings.question_threshold}")
    for name, weights in (("DEFAULT_WEIGHTS", settings.weights), ("QUESTION_WEIGHTS", settings.question_weights)):
        print(f"{name}: tuple[tuple[str, float], ...] = (")
        for feature, value in weights:
            print(f'    ("{feature}", {value:.3f}),')
        print(")")


if __name__ == "__main__":
    main()
