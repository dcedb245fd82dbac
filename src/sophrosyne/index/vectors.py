"""Vector search over unit vectors: exact numpy when small, FAISS IVF when large."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sophrosyne.index.embedders import Vectors

EXACT_LIMIT = 20_000


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
    """Inner-product search; above `exact_limit` vectors it builds a FAISS IVF-Flat index."""

    def __init__(
        self, vectors: Vectors, exact_limit: int = EXACT_LIMIT, nprobe: int = 16, ivf: object | None = None
    ) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.nprobe = nprobe
        self._faiss: object | None = ivf
        if ivf is None and len(self.vectors) > exact_limit:
            self._faiss = self._build_ivf(self.vectors)

    @property
    def kind(self) -> str:
        return "exact" if self._faiss is None else "ivf"

    def _build_ivf(self, vectors: Vectors) -> object:
        import faiss

        dim = vectors.shape[1]
        lists = max(16, min(1024, int(np.sqrt(len(vectors)) * 1.0)))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, lists, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(0)
        sample = vectors[rng.choice(len(vectors), size=min(len(vectors), lists * 40), replace=False)]
        index.train(sample)
        index.add(vectors)
        index.nprobe = self.nprobe
        return index

    def search(self, queries: Vectors, k: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Scores and row ids of the k best vectors per query (ids are -1 where fewer exist)."""
        k = max(1, min(k, len(self.vectors)))
        if len(self.vectors) == 0:
            return np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64)
        if self._faiss is not None:
            scores, ids = self._faiss.search(np.ascontiguousarray(queries, dtype=np.float32), k)  # type: ignore[attr-defined]
            return scores.astype(np.float32), ids.astype(np.int64)
        sims = queries @ self.vectors.T
        if k < sims.shape[1]:
            part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            part = np.tile(np.arange(sims.shape[1]), (len(queries), 1))
        order = np.take_along_axis(part, np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1), axis=1)
        return np.take_along_axis(sims, order, axis=1).astype(np.float32), order.astype(np.int64)

    def all_scores(self, queries: Vectors) -> npt.NDArray[np.float32]:
        """Similarity of each query to every vector (exact; for small per-database indexes)."""
        return (queries @ self.vectors.T).astype(np.float32)

    def save(self, folder: Path) -> None:
        np.save(folder / "vectors.npy", self.vectors)
        if self._faiss is not None:
            import faiss

            faiss.write_index(self._faiss, str(folder / "vectors.faiss"))  # type: ignore[call-overload]

    @classmethod
    def load(cls, folder: Path, exact_limit: int = EXACT_LIMIT) -> VectorIndex:
        ivf: object | None = None
        if (folder / "vectors.faiss").exists():
            import faiss

            ivf = faiss.read_index(str(folder / "vectors.faiss"))
            ivf.nprobe = 16  # type: ignore[attr-defined]
        return cls(np.load(folder / "vectors.npy"), exact_limit=exact_limit, ivf=ivf)
