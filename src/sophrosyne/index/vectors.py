"""Vector search over unit vectors, exact with numpy.

No approximate index: directives score every question against every vector (`all_scores`) anyway, so the
matrix must be in memory, and a FAISS IVF copy of it beside doubled the index's memory (42 MB more at 5,000
tables) and its load time for a search that is exact here in 17 ms at 41,000 vectors and 75 ms at 160,000
(measured on 2 busy cores, one BLAS thread). A large matrix is held in float16, widened a block at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sophrosyne.index.embedders import Vectors

# A matrix past this size in float32 is held and saved as float16 instead: 158,544 columns at 256 dimensions
# are 162 MB in float32, a third of a 20,000-table server. float16 keeps 3 significant digits of each
# coordinate and moves a score by about 1e-4 (at the shipped threshold it changed no directive on any
# benchmark with every database so held), and each question pays for widening the rows back (about 1 ns a
# coordinate through the lookup table, 24 ms for 100,000 x 256, where numpy's cast took 32-38 ms). Below it,
# where every benchmark database is, nothing changes.
HALF_ABOVE_BYTES = 128 * 2**20
# Rows widened to float32 at once while scoring (4 MB at 256 dimensions).
_BLOCK = 4096


def held_type(rows: int, dimensions: int) -> type[np.floating[Any]]:
    """How a matrix of `rows` x `dimensions` is held: float32, or float16 past `HALF_ABOVE_BYTES`."""
    return np.float16 if rows * dimensions * 4 > HALF_ABOVE_BYTES else np.float32


@lru_cache(maxsize=1)
def _widened() -> npt.NDArray[np.float32]:
    """Every float16 bit pattern's float32 value: a lookup widens a block faster than numpy's cast."""
    return np.arange(2**16, dtype=np.uint16).view(np.float16).astype(np.float32)


@lru_cache(maxsize=1)
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread: a question's products are small, and OpenBLAS's threads, spinning on a busy
    machine, made a 14 x 379 product take 14 ms instead of 0.1 ms."""
    with _blas().limit(limits=1, user_api="blas"):
        yield


class VectorIndex:
    """Inner-product search over a matrix of unit vectors (rows: documents), float32 or, when large, float16
    (see `HALF_ABOVE_BYTES`): then each score is computed in float32 from rows widened a block at a time."""

    def __init__(self, vectors: Vectors | npt.NDArray[np.float16]) -> None:
        kind = np.float16 if vectors.dtype == np.float16 else np.float32
        self.vectors: npt.NDArray[Any] = np.ascontiguousarray(vectors, dtype=kind)

    @property
    def kind(self) -> str:
        return "exact"

    def search(self, queries: Vectors, k: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Scores and row ids of the k best vectors per query (ids are -1 where fewer exist)."""
        k = max(1, min(k, len(self.vectors)))
        if len(self.vectors) == 0:
            return np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64)
        sims = self._products(queries)
        if k < sims.shape[1]:
            part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            part = np.tile(np.arange(sims.shape[1]), (len(queries), 1))
        order = np.take_along_axis(part, np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1), axis=1)
        return np.take_along_axis(sims, order, axis=1).astype(np.float32), order.astype(np.int64)

    def all_scores(self, queries: Vectors) -> npt.NDArray[np.float32]:
        """Similarity of each query to every vector (exact; for small per-database indexes)."""
        return self._products(queries).astype(np.float32, copy=False)  # float32 already: no second matrix

    def _products(self, queries: Vectors) -> npt.NDArray[Any]:
        if self.vectors.dtype != np.float16:
            products: npt.NDArray[Any] = queries @ self.vectors.T
            return products
        queries = np.asarray(queries, dtype=np.float32)
        scores = np.empty((len(queries), len(self.vectors)), np.float32)
        bits, table = self.vectors.view(np.uint16), _widened()
        block = np.empty((min(_BLOCK, len(bits)), self.vectors.shape[1]), np.float32)
        for start in range(0, len(bits), _BLOCK):
            rows = bits[start : start + _BLOCK]
            np.take(table, rows, out=block[: len(rows)])
            np.matmul(queries, block[: len(rows)].T, out=scores[:, start : start + len(rows)])
        return scores

    def save(self, folder: Path) -> None:
        np.save(folder / "vectors.npy", self.vectors)

    @classmethod
    def load(cls, folder: Path) -> VectorIndex:
        # Mapped, not read: processes serving the same schema (workers, replicas on one host) share one copy.
        return cls(np.load(folder / "vectors.npy", mmap_mode="r"))
