"""Fit the directive weights (logistic regression over table features) on the tuning databases only.

Example: python -m sophrosyne.bench.tune --dataset bird-dev
"""

from __future__ import annotations

import argparse

import numpy as np
import numpy.typing as npt

from sophrosyne.bench.datasets import load_dataset
from sophrosyne.bench.directives_bench import build_indexes, split_databases
from sophrosyne.directives import FEATURES, DirectiveSettings, gold_tables, score_tables
from sophrosyne.index.embedders import default_embedder


def collect(
    dataset_name: str, split: str = "tune", drop_knowledge: bool = False
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Feature rows (one per question and table) and labels (1 = the gold SQL reads the table)."""
    dataset = load_dataset(dataset_name)
    tune, holdout = split_databases(dataset.catalogs)
    keep = set(tune if split == "tune" else holdout if split == "holdout" else dataset.catalogs)
    dataset.questions = [q for q in dataset.questions if q.db_id in keep]
    dataset.catalogs = {k: v for k, v in dataset.catalogs.items() if k in keep}
    dataset.database_files = {k: v for k, v in dataset.database_files.items() if k in keep}
    indexes, values, _, _ = build_indexes(dataset, default_embedder())
    settings = DirectiveSettings(min_tables=0)
    rows: list[list[float]] = []
    labels: list[float] = []
    for q in dataset.questions:
        catalog = dataset.catalogs[q.db_id]
        try:
            gold = gold_tables(q.sql, catalog)
        except Exception:
            continue
        # The model for questions without knowledge learns from questions that carry their knowledge in
        # their own words: the knowledge is appended to the question.
        question = f"{q.question} {q.evidence}" if drop_knowledge else q.question
        evidence = "" if drop_knowledge else q.evidence
        scored = score_tables(question, evidence, catalog, indexes[q.db_id], values.get(q.db_id), settings)
        for table, entry in scored.board.items():
            rows.append([entry.features.get(f, 0.0) for f in FEATURES])
            labels.append(1.0 if table in gold else 0.0)
    return np.array(rows), np.array(labels)


def fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    positive_weight: float = 3.0,
    l2: float = 1e-3,
) -> npt.NDArray[np.float64]:
    """Weights (bias last) of a class-weighted, L2-regularised logistic regression, by gradient descent."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    sample = np.where(y > 0, positive_weight, 1.0)
    sample /= sample.sum()
    ridge = l2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    for _ in range(50):  # Newton steps
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ ((p - y) * sample) + ridge @ w
        hessian = (xb * (sample * p * (1 - p))[:, None]).T @ xb + ridge
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bird-dev")
    parser.add_argument("--positive-weight", type=float, default=3.0)
    args = parser.parse_args()
    for name, drop in (("DEFAULT_WEIGHTS", False), ("QUESTION_WEIGHTS", True)):
        x, y = collect(args.dataset, "tune", drop_knowledge=drop)
        w = fit(x, y, args.positive_weight)
        # No tuning database ships its data, so the value-index feature cannot be fitted: it takes the weight
        # of the same literal found through the value descriptions.
        w[FEATURES.index("value_mention")] = max(w[FEATURES.index("value")], 1.0)
        print(f"{name}: tuple[tuple[str, float], ...] = (")
        print(f'    ("bias", {w[-1]:.3f}),')
        for feature, value in zip(FEATURES, w[:-1], strict=True):
            print(f'    ("{feature}", {value:.3f}),')
        print(")")


if __name__ == "__main__":
    main()
