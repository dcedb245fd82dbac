"""The value index: distinct short text values, for grounding literals ("Fellwar Stone" is a cards.name)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sophrosyne.catalog import Catalog, is_text_type

if TYPE_CHECKING:
    from sophrosyne.connection import Database


def normalize_value(value: str) -> str:
    return " ".join(value.lower().split())


@dataclass
class ValueBudget:
    """Limits on what the value index reads: time overall, distinct values per column, value length."""

    seconds: float = 20.0
    per_column: int = 5000
    max_chars: int = 80
    total: int = 2_000_000


@dataclass
class ValueIndex:
    """Normalised distinct value -> the columns holding it. Hash lookups: about 1 µs each."""

    columns: list[tuple[str, str]] = field(default_factory=list)
    values: dict[str, list[int]] = field(default_factory=dict)
    complete: bool = True
    build_s: float = 0.0

    def lookup(self, literal: str) -> list[tuple[str, str]]:
        ids = self.values.get(normalize_value(literal), [])
        return [self.columns[i] for i in ids]

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def build(cls, catalog: Catalog, fetch: Any, budget: ValueBudget | None = None) -> ValueIndex:
        """Read distinct values with `fetch(table, column, limit) -> iterable of values` within the budget."""
        budget = budget or ValueBudget()
        started = time.perf_counter()
        index = cls()
        for table in catalog.tables.values():
            for column in table.columns:
                if not is_text_type(column.type):
                    continue
                if time.perf_counter() - started > budget.seconds or len(index.values) >= budget.total:
                    index.complete = False
                    break
                col_id = len(index.columns)
                index.columns.append((table.name, column.name))
                try:
                    rows: Iterable[Any] = fetch(table.name, column.name, budget.per_column)
                    for value in rows:
                        if not isinstance(value, str) or not value.strip() or len(value) > budget.max_chars:
                            continue
                        holders = index.values.setdefault(normalize_value(value), [])
                        if not holders or holders[-1] != col_id:
                            holders.append(col_id)
                except Exception:  # one unreadable column must not stop the index
                    index.complete = False
        index.build_s = time.perf_counter() - started
        return index

    @classmethod
    def from_sqlite(cls, catalog: Catalog, path: Path, budget: ValueBudget | None = None) -> ValueIndex:
        connection = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
        connection.text_factory = lambda b: b.decode("utf-8", errors="replace")
        try:

            def fetch(table: str, column: str, limit: int) -> list[Any]:
                sql = (
                    f'SELECT DISTINCT "{column.replace(chr(34), chr(34) * 2)}" FROM '
                    f'"{table.replace(chr(34), chr(34) * 2)}" LIMIT {int(limit)}'
                )
                return [row[0] for row in connection.execute(sql)]

            return cls.build(catalog, fetch, budget)
        finally:
            connection.close()

    @classmethod
    def from_database(cls, catalog: Catalog, database: Database, budget: ValueBudget | None = None) -> ValueIndex:
        """Read through the database's timed read-only sessions: one SELECT DISTINCT per text column."""

        def fetch(table: str, column: str, limit: int) -> list[Any]:
            sql = (
                exp.select(exp.column(column, quoted=True))
                .distinct()
                .from_(exp.table_(table, quoted=True))
                .limit(limit)
                .sql(dialect=database.dialect)
            )
            return [row[0] for row in database.run(sql, limit=limit).rows]

        return cls.build(catalog, fetch, budget)

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps({"columns": self.columns, "values": self.values, "complete": self.complete}))

    @classmethod
    def load(cls, path: Path) -> ValueIndex:
        data = json.loads(Path(path).read_text())
        return cls([tuple(c) for c in data["columns"]], data["values"], data["complete"])


def values_path(cache_dir: Path, catalog: Catalog) -> Path:
    from sophrosyne.index.schema_index import schema_key

    return Path(cache_dir) / "values" / f"{schema_key(catalog, 'values')[:24]}.json"


def load_or_build_values(
    catalog: Catalog, cache_dir: Path, database: Database, budget: ValueBudget | None = None
) -> ValueIndex:
    """The cached value index of this schema, else one read from `database` and saved. Data changes do not
    change the key: rebuild with `sophrosyne index`."""
    path = values_path(cache_dir, catalog)
    if path.exists():
        try:
            return ValueIndex.load(path)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache entry is rebuilt below
    index = ValueIndex.from_database(catalog, database, budget)
    path.parent.mkdir(parents=True, exist_ok=True)
    index.save(path)
    return index
