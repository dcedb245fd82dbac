"""Reciprocal rank fusion: each ranking adds 1 / (k + rank) to its items, for one query or many at once."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

K = TypeVar("K", bound=Hashable)
Ranking = npt.NDArray[np.int64]
"""Item ids of each query's ranking (rows: queries), best first; -1 where a ranking has no item at that rank."""

# The constant of the RRF paper (Cormack, Clarke and Büttcher, 2009): deep rankings of many columns, where the
# top few ranks should not drown the agreement of the two retrievers. Directives use their own, smaller k.
RRF_K = 60


_SORTED_UP_TO = 2048  # up to so many items a row, a full sort costs less than a partition and a loop over rows


def top_ranked(scores: npt.NDArray[np.floating[Any]], depth: int, positive_only: bool = False) -> Ranking:
    """Each row's `depth` best-scoring items, best first (ties in item order); with `positive_only`, an item
    scoring zero or less is no rank (-1)."""
    rows, size = scores.shape
    if size <= _SORTED_UP_TO or depth >= size or depth <= 0 or rows == 0:
        order: Ranking = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
        if positive_only:
            order = np.where(np.take_along_axis(scores, order, axis=1) > 0, order, -1)
        return order
    # A full sort of every row costs tens of milliseconds at 100,000 columns: only the items scoring at least
    # the depth-th best (ties included, so the stable order among them is the full sort's) are sorted.
    negated = -scores
    kth = np.partition(negated, depth - 1, axis=1)[:, depth - 1]
    order = np.full((rows, depth), -1, np.int64)
    for row in range(rows):
        candidates = np.flatnonzero(negated[row] <= kth[row])
        if positive_only:
            candidates = candidates[scores[row, candidates] > 0]
        best = candidates[np.argsort(negated[row, candidates], kind="stable")[:depth]]
        order[row, : len(best)] = best
    return order


def fuse_rankings(
    rankings: Sequence[Ranking], size: int, k: int = RRF_K, dtype: type[np.floating[Any]] = np.float64
) -> npt.NDArray[np.floating[Any]]:
    """Fused scores (queries x `size` items): the sum over rankings of 1 / (k + rank), rank starting at 1.

    Each ranking lists an item at most once per query. `dtype` is the precision the sums are kept in."""
    queries = rankings[0].shape[0] if rankings else 0
    fused = np.zeros((queries, size), dtype)
    for ranking in rankings:
        contribution = dtype(1.0) / (k + np.arange(1, ranking.shape[1] + 1, dtype=dtype))
        rows, ranks = np.nonzero(ranking >= 0)
        fused[rows, ranking[rows, ranks]] += contribution[ranks]
    return fused


def reciprocal_rank_fusion(rankings: Iterable[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Items of one query's rankings by fused score, best first; ties keep first-seen order."""
    lists = [list(ranking) for ranking in rankings]
    ids: dict[K, int] = {}
    for ranking in lists:
        for item in ranking:
            ids.setdefault(item, len(ids))
    if not ids:
        return []
    depth = max(len(ranking) for ranking in lists)
    arrays = [np.array([[ids[i] for i in ranking] + [-1] * (depth - len(ranking))], np.int64) for ranking in lists]
    fused = fuse_rankings(arrays, len(ids), k)[0]
    items = list(ids)
    return [(items[i], float(fused[i])) for i in np.argsort(-fused, kind="stable")]
