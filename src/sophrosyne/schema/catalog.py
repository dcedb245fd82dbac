"""What is in a database, as data: tables, columns, types, keys, descriptions, row estimates, table groups."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sophrosyne.base.text import counted

if TYPE_CHECKING:
    from sqlglot import exp

TEXT_TYPES = ("CHAR", "TEXT", "CLOB", "STRING", "VARCHAR", "NAME", "ENUM")


@lru_cache(maxsize=4096)  # a catalog's columns have a few dozen declared types, asked for once per column
def is_text_type(type_name: str) -> bool:
    """Whether a column of this declared type holds text (SQLite columns without a type count as text)."""
    upper = (type_name or "").upper()
    return not upper or any(t in upper for t in TEXT_TYPES)


@dataclass
class Column:
    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    readable_name: str = ""
    description: str = ""
    value_description: str = ""


@dataclass
class ForeignKey:
    columns: list[str]
    ref_table: str
    ref_columns: list[str]
    # Declared by the schema, or inferred from names and values (sophrosyne.schema.joins), with how sure that is.
    inferred: bool = False
    confidence: float = 1.0


@dataclass
class Table:
    name: str
    columns: list[Column]
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    description: str = ""
    row_estimate: int | None = None
    kind: str = "table"  # "table" or "view"
    schema: str | None = None
    # The name inside its schema, when `name` is qualified ("sales.orders") because the schema is not on
    # the search path; None when `name` is the name as the database knows it (which may hold a dot).
    local_name: str | None = None
    # A bounded count that reached its bound: the table has at least `row_estimate` rows.
    rows_at_least: bool = False
    # The catalog names of the tables this one inherits from (a PostgreSQL partition's parent, or INHERITS):
    # their rules reach it (policy/inheritance.py).
    parents: list[str] = field(default_factory=list)

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def identifier(self) -> str:
        """The table's own name in its schema, as SQL names it (with the schema when `local_name` is set)."""
        return self.local_name or self.name

    @property
    def rows_text(self) -> str:
        """The row estimate as a person reads it: "~1,200 rows", "at least 100,000 rows", "rows unknown"."""
        if self.row_estimate is None:
            return "rows unknown"
        rows = counted(self.row_estimate, "row")
        return f"at least {rows}" if self.rows_at_least else f"~{rows}"


def table_ref(table: Table) -> exp.Table:
    """A quoted reference to `table` for generated SQL (with its schema when its name is qualified)."""
    from sqlglot import exp

    schema = exp.to_identifier(table.schema, quoted=True) if table.local_name and table.schema else None
    return exp.Table(this=exp.to_identifier(table.identifier, quoted=True), db=schema)


@dataclass
class TableGroup:
    """Tables with the same columns whose names differ only by a date or number suffix."""

    pattern: str
    tables: list[str]


@dataclass
class Catalog:
    tables: dict[str, Table]
    dialect: str = "sqlite"
    # Derived once: a catalog does not change after it is read (a refresh builds a new one).
    _groups: list[TableGroup] | None = field(default=None, init=False, repr=False, compare=False)
    _incoming: dict[str, list[tuple[str, ForeignKey]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    # Lower-cased name -> name, made at the first lookup that is not exact, remade when tables come or go: a
    # miss (a key to a table folded into its shard group, or not visible) scanned every table each time.
    _lowered: tuple[int, dict[str, str]] | None = field(default=None, init=False, repr=False, compare=False)

    def table(self, name: str) -> Table | None:
        if name in self.tables:
            return self.tables[name]
        if self._lowered is None or self._lowered[0] != len(self.tables):
            names: dict[str, str] = {}
            for t in self.tables:
                names.setdefault(t.lower(), t)
            self._lowered = (len(self.tables), names)
        found = self._lowered[1].get(name.lower())
        return self.tables.get(found) if found is not None else None

    @property
    def table_names(self) -> list[str]:
        return list(self.tables)

    def references_to(self, table: str) -> list[tuple[str, ForeignKey]]:
        """Foreign keys of other tables that point at `table`."""
        if self._incoming is None:
            incoming: dict[str, list[tuple[str, ForeignKey]]] = {}
            for t in self.tables.values():
                for fk in t.foreign_keys:
                    incoming.setdefault(fk.ref_table.lower(), []).append((t.name, fk))
            self._incoming = incoming
        return list(self._incoming.get(table.lower(), []))

    def groups(self) -> list[TableGroup]:
        if self._groups is None:
            self._groups = group_tables(list(self.tables.values()))
        return self._groups


_DIGITS = re.compile(r"\d+")
# A date or number at the end, in parts or whole: `_2020_01`, `_20170801`, `-2019-q1` stops at the letter.
_TRAILING_NUMBER = re.compile(r"\d+(?:[_-]\d+)*$")


def group_tables(tables: list[Table], min_size: int = 3) -> list[TableGroup]:
    """Tables with the same columns whose names differ only in their numbers (`ga_sessions_20170801`,
    `sales_2019_q1`), or, among the rest, only in their last `_` part (`orders_us`, `orders_eu`)."""
    groups = _grouped(tables, _numbers_masked, min_size)
    taken = {name for g in groups for name in g.tables}
    groups += _grouped([t for t in tables if t.name not in taken], _last_part_masked, min_size)
    return sorted(groups, key=lambda g: g.pattern)


def _numbers_masked(name: str) -> str | None:
    masked = _DIGITS.sub("*", _TRAILING_NUMBER.sub("*", name))
    return masked if masked != name else None


def _last_part_masked(name: str) -> str | None:
    stem, sep, last = name.rpartition("_")
    return f"{stem}_*" if sep and stem and last else None


def _grouped(tables: list[Table], mask: Callable[[str], str | None], min_size: int) -> list[TableGroup]:
    buckets: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for table in tables:
        pattern = mask(table.name)
        if pattern is None:
            continue
        key = (pattern, tuple(c.name.lower() for c in table.columns))
        buckets.setdefault(key, []).append(table.name)
    return [
        TableGroup(pattern=pattern, tables=sorted(names))
        for (pattern, _), names in buckets.items()
        if len(names) >= min_size
    ]


def load_bird_descriptions(catalog: Catalog, folder: Path) -> None:
    """Fill column descriptions from BIRD's `database_description/<table>.csv` files, where present."""
    folder = Path(folder)
    for path in sorted(folder.glob("*.csv")):
        table = catalog.table(path.stem)
        if table is None:
            continue
        for row in _read_description_csv(path):
            name = (row.get("original_column_name") or "").strip()
            column = table.column(name) if name else None
            if column is None:
                continue
            readable = (row.get("column_name") or "").strip()
            if readable.lower() != name.lower():
                column.readable_name = readable
            column.description = (row.get("column_description") or "").strip()
            column.value_description = (row.get("value_description") or "").strip()


def _read_description_csv(path: Path) -> list[dict[str, str]]:
    raw = path.read_bytes()
    for encoding in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    rows = list(csv.DictReader(text.splitlines()))
    return [{(k or "").strip().lower(): (v or "") for k, v in row.items()} for row in rows]
