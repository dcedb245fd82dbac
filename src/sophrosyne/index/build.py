"""Build (or reuse) the offline schema and value index of one database, as `sophrosyne index` does."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sophrosyne.database import open_database
from sophrosyne.index.cache import joins_folder, unavailable
from sophrosyne.index.embedders import embedder_named
from sophrosyne.index.schema_index import Progress, index_folder, load_or_build
from sophrosyne.index.values import ValueBudget, load_or_build_values, values_path
from sophrosyne.schema.catalog import Catalog, load_bird_descriptions
from sophrosyne.settings import Settings


@dataclass(frozen=True)
class IndexReport:
    """What an index run produced: sizes, time, and where the index lives."""

    columns: int
    tables: int
    values: int | None  # None when the value index was not asked for
    seconds: float
    folder: Path


def index_database(
    target: str,
    settings: Settings,
    *,
    descriptions: Path | None = None,
    values: bool = True,
    value_seconds: float = 20.0,
    rebuild: bool = False,
    progress: Progress | None = None,
    indexed: Callable[[Catalog], Catalog] | None = None,
) -> IndexReport:
    """Index every column (BM25 + embeddings) and, with `values`, the distinct text values, into the cache.

    The index is keyed by a hash of the schema and descriptions, so it is reused while they are unchanged
    (a value index that a time limit cut short is read again); values are read through the database's timed
    read-only session like every other reader. CacheUnavailable when the cache cannot be written.
    `indexed` gives the catalog whose columns are indexed, as a server's directives index them (shard groups
    folded, in the layer above); the whole catalog without it.
    """
    database = open_database(target, settings)
    try:
        catalog = database.catalog()
        if descriptions is not None:
            load_bird_descriptions(catalog, descriptions)
        columns = indexed(catalog) if indexed is not None else catalog
        embedder = embedder_named(settings.inference.embedder)
        folder = index_folder(settings.paths.cache_dir, columns, embedder)
        if rebuild:
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(joins_folder(settings.paths.cache_dir), ignore_errors=True)  # confirmed by the old data
            try:
                values_path(settings.paths.cache_dir, catalog).unlink(missing_ok=True)
            except OSError as exc:
                raise unavailable("the value index", settings.paths.cache_dir, exc) from None
        started = time.perf_counter()
        # Saving is what this command is for: a cache that cannot be written is an error here, not a note.
        index = load_or_build(columns, settings.paths.cache_dir, embedder=embedder, progress=progress, must_save=True)
        count = None
        if values:
            if progress:
                progress("values", 0, 1)
            count = len(
                load_or_build_values(catalog, settings.paths.cache_dir, database, ValueBudget(seconds=value_seconds))
            )
            if progress:
                progress("values", 1, 1)
        return IndexReport(len(index.docs), len(catalog.tables), count, time.perf_counter() - started, folder)
    finally:
        database.close()
