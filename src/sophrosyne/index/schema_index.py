"""The offline schema index of one database: one document per column, BM25 + dense vectors, fused by RRF."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt

from sophrosyne.base.memory import release_free_memory
from sophrosyne.base.names import added_words
from sophrosyne.base.words import split_identifier, tokenize
from sophrosyne.errors import ConfigError
from sophrosyne.index.cache import building, clean_stale, reason, tell_once, temp_prefix, unavailable
from sophrosyne.index.embedders import Embedder, default_embedder
from sophrosyne.index.fusion import reciprocal_rank_fusion
from sophrosyne.index.lexicon import catalog_abbreviations, short_name
from sophrosyne.index.vectors import VectorIndex, held_type
from sophrosyne.schema.catalog import Catalog

logger = logging.getLogger("sophrosyne.index")

INDEX_VERSION = 3  # 2: a large index's vectors saved as float16; 3: names spelled out (`base/names.py`)
logging.getLogger("bm25s").setLevel(logging.WARNING)
Progress = Callable[[str, int, int], None]
"""Called as progress(stage, done, total) while an index is built."""


@dataclass(frozen=True)
class ColumnHit:
    """A column that matches a query, with its table and fused score (higher is better)."""

    table: str
    column: str
    score: float


@dataclass(frozen=True, slots=True)  # no __dict__ each: a warehouse has 160,000 of them
class ColumnDoc:
    """What the index knows of one column."""

    table: str
    column: str
    readable_name: str = ""
    description: str = ""
    value_description: str = ""
    # The words spelling out adds to the table's name and to the column's (`base/names.py`): derived from the
    # catalog, so neither saved nor compared.
    table_spelled: str = field(default="", compare=False)
    column_spelled: str = field(default="", compare=False)

    @property
    def table_text(self) -> str:
        """The table as words: a qualified warehouse name by its dataset and table, not its project; the words
        spelling out adds after them (`dim dept (department)`)."""
        words = " ".join(split_identifier(".".join(self.table.split(".")[-2:])))
        return f"{words} ({self.table_spelled})" if self.table_spelled else words

    @property
    def name_text(self) -> str:
        words = " ".join(split_identifier(self.column))
        readable = self.readable_name or self.column_spelled
        return f"{self.table_text} {words} ({readable})" if readable else f"{self.table_text} {words}"

    @property
    def embed_text(self) -> str:
        text = self.name_text
        if self.description:
            text += f": {self.description}"
        return text[:400]

    @property
    def bm25_tokens(self) -> list[str]:
        names = tokenize(f"{self.table_text} {self.column} {self.readable_name or self.column_spelled}")
        # Names count twice: a word in the name says more than the same word deep in a description.
        return names + names + tokenize(self.description) + tokenize(self.value_description[:300])


def column_documents(catalog: Catalog, *, spelled: bool = True) -> list[ColumnDoc]:
    """One document per column. Without `spelled`, the documents as a saved index holds them: the words spelling
    out adds are read only while an index is built (its texts), and deriving them cost a cached start 0.3 s of
    CPU at 5,000 tables."""
    if not spelled:
        return [
            ColumnDoc(table.name, c.name, c.readable_name, c.description, c.value_description)
            for table in catalog.tables.values()
            for c in table.columns
        ]
    taught = catalog_abbreviations(catalog)
    docs = []
    for table in catalog.tables.values():
        # Only the words spelling out adds: a name's own words are in its document already, and said twice they
        # weighed twice in BM25 (Spider dev lost 0.0012 of prune that way).
        table_spelled = added_words(short_name(table), taught)
        for c in table.columns:
            column_spelled = added_words(c.name.rsplit(".", 1)[-1], taught)
            texts = (c.readable_name, c.description, c.value_description)
            docs.append(ColumnDoc(table.name, c.name, *texts, table_spelled, column_spelled))
    return docs


def _write_docs(path: Path, docs: list[ColumnDoc], chunk: int = 10_000) -> None:
    """The documents as one JSON list of rows, written a chunk at a time (one string of them all, at the end
    of a build, was tens of MB more at the moment the build held the most)."""
    with path.open("w") as out:
        out.write("[")
        for start in range(0, len(docs), chunk):
            part = docs[start : start + chunk]
            rows = [(d.table, d.column, d.readable_name, d.description, d.value_description) for d in part]
            out.write(("," if start else "") + json.dumps(rows)[1:-1])
        out.write("]")


def table_order(docs: list[ColumnDoc]) -> str:
    """A hash of the tables of `docs` in their order, with each one's count of columns."""
    digest = hashlib.sha256()
    previous, count = None, 0
    for doc in docs:
        if doc.table != previous:
            if previous is not None:
                digest.update(f"{previous}\0{count}\0".encode())
            previous, count = doc.table, 0
        count += 1
    digest.update(f"{previous}\0{count}".encode())
    return digest.hexdigest()


def schema_key(catalog: Catalog, embedder_name: str) -> str:
    """A hash of everything the index's documents hold (table and column names, readable names, descriptions),
    the embedder and the version: nothing else, so that joins inferred on one start and not on the next (a
    value check within a time budget) or a changed type keep the cached index.

    Streamed table by table into the hash (a JSON document of the whole catalog, sorted, cost 0.54 s of CPU
    at 20,000 tables; this costs about a fifth of that)."""
    digest = hashlib.sha256(repr((INDEX_VERSION, embedder_name)).encode())
    for t in sorted(catalog.tables.values(), key=lambda t: t.name):
        columns = [(c.name, c.readable_name, c.description, c.value_description) for c in t.columns]
        digest.update(repr((t.name, columns)).encode())
    return digest.hexdigest()


class SchemaIndex:
    """Hybrid column search over one database's schema."""

    def __init__(
        self, docs: list[ColumnDoc], bm25: bm25s.BM25, vectors: VectorIndex, embedder: Embedder, key: str
    ) -> None:
        self.docs = docs
        self.bm25 = bm25
        self.vectors = vectors
        self.embedder = embedder
        self.key = key
        self.build_s = 0.0
        self.unsaved: str | None = None  # why the index is kept in memory only (the cache could not be written)
        # What directives derive from this index per catalog (column maps, vocabulary vectors), kept with it so
        # that it lives and dies with the index. Keys hold ids; values hold the objects, checked on reading.
        self.derived: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self.tables = sorted({d.table for d in docs})
        position = {table: i for i, table in enumerate(self.tables)}  # not list.index: 5,000 tables, 40,000 docs
        self.doc_table = np.array([position[d.table] for d in docs], dtype=np.int64)

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        embedder: Embedder | None = None,
        progress: Progress | None = None,
        batch_size: int = 2048,
    ) -> SchemaIndex:
        started = time.perf_counter()
        embedder = embedder or default_embedder()
        docs = column_documents(catalog)
        total = len(docs)
        if progress:
            progress("bm25", 0, total)
        corpus = [d.bm25_tokens or ["_"] for d in docs] or [["_"]]
        # The vocabulary in first-seen order: bm25s builds it from a set, whose order changes with Python's hash
        # seed, and so would the order in which a query's term scores are summed (the last bits of a score).
        vocab = {token: i for i, token in enumerate(dict.fromkeys(t for tokens in corpus for t in tokens))}
        token_ids = [[vocab[t] for t in tokens] for tokens in corpus]
        del corpus  # not held beside the ids while bm25s indexes them
        bm25 = bm25s.BM25()
        bm25.index((token_ids, vocab), show_progress=False)
        del token_ids
        if progress:
            progress("bm25", total, total)
        # Each batch written into one matrix: batches joined at the end held the matrix twice for a moment
        # (155 MB more at 20,000 tables).
        matrix: npt.NDArray[Any] = np.zeros((0, 1), np.float32)
        for start in range(0, total, batch_size):
            batch = embedder.embed([d.embed_text for d in docs[start : start + batch_size]])
            if not start:
                matrix = np.empty((total, batch.shape[1]), held_type(total, batch.shape[1]))
            matrix[start : start + len(batch)] = batch
            if progress:
                progress("embed", min(start + batch_size, total), total)
        vectors = VectorIndex(matrix)
        index = cls(docs, bm25, vectors, embedder, schema_key(catalog, embedder.name))
        index.build_s = time.perf_counter() - started
        return index

    def save(self, folder: Path) -> None:
        """Write the index to `folder` whole or not at all: several processes or threads may save the same
        schema's index at once, each into a folder of its own, renamed into place."""
        folder = Path(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(folder), dir=folder.parent))
        try:
            self.bm25.save(str(tmp / "bm25"), show_progress=False)
            self.vectors.save(tmp)
            # The documents apart from the manifest: a start reads them from its catalog when the order of
            # its tables is the one saved (JSON of 160,000 documents held 50 MB more at 20,000 tables).
            _write_docs(tmp / "docs.json", self.docs)
            manifest = {"key": self.key, "embedder": self.embedder.name, "order": table_order(self.docs)}
            (tmp / "manifest.json").write_text(json.dumps(manifest))
            if (folder / "manifest.json").exists():
                shutil.rmtree(folder, ignore_errors=True)  # a stale or damaged entry of the same key
            try:
                tmp.rename(folder)
            except OSError:
                if not (folder / "manifest.json").exists():
                    raise
                # Another writer saved the same index first (same key, same content): keep theirs.
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, folder: Path, embedder: Embedder | None = None, docs: list[ColumnDoc] | None = None) -> SchemaIndex:
        """The saved index. `docs`, the documents of the catalog the caller holds, are taken as the saved ones
        when their tables come in the saved order (the key, checked by the caller, vouches for the rest)."""
        folder = Path(folder)
        try:
            manifest = json.loads((folder / "manifest.json").read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"no schema index in {folder}: {exc}.", hint="Run `sophrosyne index DB`.") from None
        embedder = embedder or default_embedder()
        if embedder.name != manifest["embedder"]:
            raise ConfigError(
                f"the index in {folder} was built with {manifest['embedder']}, not {embedder.name}.",
                hint="Rebuild it with `sophrosyne index DB` or pass the same embedder.",
            )
        if "docs" in manifest:  # saved before the documents had a file of their own
            docs = [ColumnDoc(**d) for d in manifest["docs"]]
        elif docs is None or table_order(docs) != manifest["order"]:
            docs = [ColumnDoc(*d) for d in json.loads((folder / "docs.json").read_text())]
        bm25 = bm25s.BM25.load(str(folder / "bm25"), show_progress=False)
        return cls(docs, bm25, VectorIndex.load(folder), embedder, manifest["key"])

    # -- search ---------------------------------------------------------------------------------------

    def bm25_scores(self, query: str) -> npt.NDArray[np.float32]:
        tokens = tokenize(query)
        if not tokens or not self.docs:
            return np.zeros(len(self.docs), np.float32)
        return np.asarray(self.bm25.get_scores(tokens), dtype=np.float32)

    def bm25_matrix(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """BM25 scores of several queries against every document (rows: queries)."""
        if not self.docs:
            return np.zeros((len(texts), 0), np.float32)
        vocab: dict[str, int] = self.bm25.vocab_dict
        counts = np.zeros((len(texts), len(vocab)), np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                column = vocab.get(token)
                if column is not None:
                    counts[row, column] += 1.0
        return self._bm25_postings(counts)

    def _bm25_postings(self, counts: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Query-term counts times BM25 weights, over the posting lists of the query's terms only: a query
        touches a few dozen terms of a vocabulary that runs to tens of thousands on a large schema."""
        scores = self.bm25.scores
        indptr, indices, data = scores["indptr"], scores["indices"], scores["data"]
        result = np.zeros((counts.shape[0], len(self.docs)), np.float32)
        for term in np.flatnonzero(counts.any(axis=0)):
            docs = indices[indptr[term] : indptr[term + 1]]
            weights = np.asarray(data[indptr[term] : indptr[term + 1]], np.float32)
            result[:, docs] += counts[:, term : term + 1] * weights[None, :]
        return result

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embedder.embed(list(texts))

    def search(self, query: str, k: int = 10, depth: int = 100, visible: Catalog | None = None) -> list[ColumnHit]:
        """The k best columns for a query: BM25 and dense rankings fused by reciprocal rank fusion.

        With `visible` (a role's restricted catalog), columns it does not hold never appear."""
        if not self.docs or not query.strip():
            return []
        allowed = None
        if visible is not None:
            allowed = {(t.name, c.name) for t in visible.tables.values() for c in t.columns}
        depth = max(k, depth)
        lexical = self.bm25_scores(query)
        lex_top = [int(i) for i in np.argsort(-lexical)[:depth] if lexical[i] > 0]
        _, dense_ids = self.vectors.search(self.embed([query]), depth)
        dense_top = [int(i) for i in dense_ids[0] if i >= 0]
        if allowed is not None:
            lex_top = [i for i in lex_top if (self.docs[i].table, self.docs[i].column) in allowed]
            dense_top = [i for i in dense_top if (self.docs[i].table, self.docs[i].column) in allowed]
        best = reciprocal_rank_fusion([lex_top, dense_top])[:k]
        return [ColumnHit(self.docs[i].table, self.docs[i].column, round(score, 6)) for i, score in best]


def index_folder(cache_dir: Path, catalog: Catalog, embedder: Embedder) -> Path:
    return _folder_of(cache_dir, schema_key(catalog, embedder.name))


def _folder_of(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / "schema" / key[:24]


def load_or_build(
    catalog: Catalog,
    cache_dir: Path,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    *,
    must_save: bool = False,
) -> SchemaIndex:
    """The cached index of this schema if one exists (same schema hash), else a new one, saved to the cache.

    A cache that cannot be written keeps the new index in memory (`unsaved` says why, logged once), unless
    `must_save` (`sophrosyne index`, whose work is the saving): then CacheUnavailable."""
    embedder = embedder or default_embedder()
    key = schema_key(catalog, embedder.name)
    folder = _folder_of(cache_dir, key)
    clean_stale(folder.parent)
    saved = _saved(folder, embedder, catalog, key)
    if saved is not None:
        return saved
    with building(folder):  # one build for the processes that share the cache folder; the others read it
        saved = _saved(folder, embedder, catalog, key)
        if saved is not None:
            return saved
        index = SchemaIndex.build(catalog, embedder=embedder, progress=progress)
        logger.info("built the schema index of %d columns in %.1f s", len(index.docs), index.build_s)
        release_free_memory()
        try:
            index.save(folder)
        except OSError as exc:
            if must_save:
                raise unavailable("the schema index", folder.parent, exc) from None
            index.unsaved = reason(exc)
            tell_once(f"the schema index could not be saved in {folder.parent} ({index.unsaved}): kept in memory only")
    return index


def _saved(folder: Path, embedder: Embedder, catalog: Catalog, key: str) -> SchemaIndex | None:
    """The index saved in `folder` for this key, or None (none, or damaged: it is rebuilt)."""
    if not (folder / "manifest.json").exists():
        return None
    try:
        index = SchemaIndex.load(folder, embedder, column_documents(catalog, spelled=False))
    except (ConfigError, OSError, ValueError, KeyError):
        return None
    return index if index.key == key else None
