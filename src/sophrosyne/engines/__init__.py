"""One record per database engine (read-only sessions, timeouts, plans, estimates, fences, catalogs), the way
sqlglot gives each dialect one class: adding an engine means adding its module (the record and its catalog
reading, as sqlite.py) and its tests."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from sophrosyne.engines import mysql_dialect  # noqa: F401 - sqlglot's `mysql` dialect as MariaDB needs it
from sophrosyne.engines.base import CONNECT_TIMEOUT_S, OPEN_WAIT_S, CatalogSource, Cursor, Engine, FileEngine, Row
from sophrosyne.engines.duckdb import DuckDB
from sophrosyne.engines.mysql import MySQL
from sophrosyne.engines.postgres import PostgreSQL
from sophrosyne.engines.servers import ServerEngine
from sophrosyne.engines.spark import Spark
from sophrosyne.engines.sqlite import SQLite

__all__ = [
    "CONNECT_TIMEOUT_S",
    "ENGINES",
    "OPEN_WAIT_S",
    "CatalogSource",
    "Cursor",
    "DuckDB",
    "Engine",
    "FileEngine",
    "MySQL",
    "PostgreSQL",
    "Row",
    "SQLite",
    "ServerEngine",
    "Spark",
    "file_suffixes",
    "for_dialect",
    "for_file",
    "named",
]

ENGINES: tuple[Engine, ...] = (SQLite(), DuckDB(), PostgreSQL(), MySQL(), Spark())
_NAMED = {name: engine for engine in ENGINES for name in (engine.name, *engine.aliases)}


def named(name: str) -> Engine | None:
    """The engine Sophrosyne runs on under this name or alias (case-insensitive), or None."""
    return _NAMED.get(name.lower())


@lru_cache(maxsize=64)
def for_dialect(dialect: str) -> Engine:
    """The record of a sqlglot dialect: an engine's own, or the cautious defaults for any other dialect."""
    return named(dialect) or Engine(dialect.lower())


def for_file(path: Path) -> FileEngine | None:
    """The file engine that opens files with this suffix, or None."""
    suffix = path.suffix.lower()
    return next((e for e in ENGINES if isinstance(e, FileEngine) and suffix in e.file_suffixes), None)


def file_suffixes() -> list[str]:
    return [s for e in ENGINES if isinstance(e, FileEngine) for s in e.file_suffixes]
