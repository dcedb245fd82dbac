"""The value index: distinct short text values, for grounding literals ("Fellwar Stone" is a cards.name)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from sqlglot import exp

from sophrosyne.base.memory import release_free_memory
from sophrosyne.base.text import normalize
from sophrosyne.base.words import stem
from sophrosyne.index.cache import building, clean_stale, temp_prefix, unavailable
from sophrosyne.index.postings import Postings, PostingsBuilder, read_file, write_file
from sophrosyne.schema.catalog import Catalog, is_text_type

if TYPE_CHECKING:
    from sophrosyne.database import Database

logger = logging.getLogger("sophrosyne.index")
# The saved file's format: 1 was JSON of Python dicts (`<key>.json`); 3 is `postings.py`'s arrays, mapped,
# with forms pointing at values (2, a draft of it, pointed them at columns).
VALUES_VERSION = 3
_OLDER = re.compile(r"^[0-9a-f]{24}\.(?:json|v\d+)$")  # a finished entry of some version, not a temp file


_MONTH_NAMES = (
    "jan january|feb february|mar march|apr april|may|jun june|jul july|aug august|sep sept september|"
    "oct october|nov november|dec december"
)
_MONTHS = {m: i + 1 for i, names in enumerate(_MONTH_NAMES.split("|")) for m in names.split()}
_ISO = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[ t].*)?$")
_US = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_WORDY = re.compile(r"^(?:(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)|([a-z]+)\s+(\d{1,2})(?:st|nd|rd|th)?),?\s+(\d{4})$")
_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")


def _date_form(text: str) -> str | None:
    """`January 7, 2021`, `7 Jan 2021`, `01/07/2021`, `2021/1/7` and `2021-01-07 00:00:00` as `2021-01-07`."""
    year = month = day = 0
    if match := _ISO.match(text):
        year, month, day = int(match[1]), int(match[2]), int(match[3])
    elif match := _US.match(text):
        month, day, year = int(match[1]), int(match[2]), int(match[3])
    elif match := _WORDY.match(text):
        day = int(match[1] or match[4])
        month = _MONTHS.get(match[2] or match[3] or "", 0)
        year = int(match[5])
    if not (1 <= month <= 12 and 1 <= day <= 31 and year):
        return None
    return f"{year:04d}-{month:02d}-{day:02d}"


def value_form(value: str) -> str:
    """A spelling-blind form of a value, for a second lookup when the exact one fails: case, punctuation,
    spacing, plurals (`Labradors`, `labrador`), thousands separators and trailing zeros (`1,000.0`), and
    dates written differently (`Jan 7, 2021`, `2021-01-07`) all fold to one form."""
    text = normalize(value)
    date = _date_form(text)
    if date is not None:
        return date
    if _NUMBER.match(text):
        number = text.replace(",", "")
        return number.rstrip("0").rstrip(".") if "." in number else number.lstrip("+")
    return "".join(stem(w) for w in re.findall(r"[a-z]+|\d+", text))


@dataclass
class ValueBudget:
    """Limits on what the value index reads: time overall, distinct values per column, value length."""

    seconds: float = 20.0
    per_column: int = 5000
    max_chars: int = 80
    total: int = 2_000_000


@dataclass
class ValueIndex:
    """Normalised distinct value -> the columns holding it, and each value's spelling-blind form -> the values
    of that form. Both are `Postings`: flat arrays, a binary search per lookup (a few µs),
    mapped from the cache file rather than read into Python objects."""

    columns: list[tuple[str, str]] = field(default_factory=list)
    values: Postings = field(default_factory=Postings.empty)
    forms: Postings = field(default_factory=Postings.empty)
    complete: bool = True  # False when a budget stopped the reading (saved with it: `sophrosyne index` redoes it)
    build_s: float = 0.0
    unsaved: str | None = field(default=None, compare=False)  # why it is kept in memory only

    def lookup(self, literal: str, forms: bool = True) -> list[tuple[str, str]]:
        """Columns holding the literal as written (case and spacing aside), else (with `forms`) in another
        form of it."""
        ids = self.values.get(normalize(literal)) or (self.form_ids(value_form(literal)) if forms else [])
        return [self.columns[i] for i in ids]

    def form_ids(self, form: str) -> list[int]:
        """The columns holding a value of this spelling-blind form: each value's in the order the values were
        read, each column once."""
        held: list[int] = []
        for position in self.forms.get(form):
            held.extend(i for i in self.values.ids_of(position) if i not in held)
        return held

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def build(cls, catalog: Catalog, fetch: Any, budget: ValueBudget | None = None) -> ValueIndex:
        """Read distinct values with `fetch(table, column, limit) -> iterable of values` within the budget."""
        budget = budget or ValueBudget()
        started = time.perf_counter()
        index = cls()
        held = PostingsBuilder()
        for table in catalog.tables.values():
            for column in table.columns:
                if not is_text_type(column.type):
                    continue
                if time.perf_counter() - started > budget.seconds or held.at_least(budget.total):
                    index.complete = False
                    break
                col_id = len(index.columns)
                index.columns.append((table.name, column.name))
                try:
                    rows: Iterable[Any] = fetch(table.name, column.name, budget.per_column)
                    for value in rows:
                        if not isinstance(value, str) or not value.strip() or len(value) > budget.max_chars:
                            continue
                        held.add(normalize(value), col_id)
                except Exception:  # one unreadable column must not stop the index
                    index.complete = False
        index.values, first_seen = held.finish()
        del held
        index.forms = _forms_of(index.values, first_seen)
        release_free_memory()
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
        """Written to a file of its own, then renamed into place: a reader never sees half a file. A write that
        fails (a full disk) removes its temp file; one killed leaves it to `clean_stale`. What an older
        version saved for the same schema is removed: it would never be read again."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=temp_prefix(path), dir=path.parent)
        os.close(handle)
        try:
            header = {"version": VALUES_VERSION, "complete": self.complete, "columns": self.columns}
            write_file(Path(name), header, {"values": self.values, "forms": self.forms})
            os.replace(name, path)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        # Saved, the index reads its arrays from the file as a loaded one does: mapped pages, not the process's
        # own memory (the built arrays, 20 MB at 20,000 tables, are freed).
        with contextlib.suppress(OSError, ValueError):
            _, tables = read_file(path, ("values", "forms"))
            self.values, self.forms = tables["values"], tables["forms"]
            release_free_memory()
        for older in path.parent.glob(f"{path.name.split('.')[0]}.*"):
            if _OLDER.search(older.name) and older.name != path.name:
                older.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> ValueIndex:
        """The saved index, its arrays mapped from the file (ValueError if the file is not of this version)."""
        header, tables = read_file(Path(path), ("values", "forms"))
        if header.get("version") != VALUES_VERSION:
            raise ValueError(f"{path} holds a value index of version {header.get('version')}")
        columns = [(str(t), str(c)) for t, c in header["columns"]]
        return cls(columns, tables["values"], tables["forms"], bool(header["complete"]))


def _forms_of(values: Postings, first_seen: npt.NDArray[np.int64]) -> Postings:
    """Every value's spelling-blind form -> the values (their positions in `values`) of that form, in the order
    the values were read: a form holds values, not columns, so it costs one pair per value."""
    forms = PostingsBuilder()
    for position, value in values.texts(np.argsort(first_seen, kind="stable")):
        form = value_form(value)
        if form:
            forms.add(form, position)
    return forms.finish()[0]


def values_path(cache_dir: Path, catalog: Catalog) -> Path:
    from sophrosyne.index.schema_index import schema_key

    return Path(cache_dir) / "values" / f"{schema_key(catalog, 'values')[:24]}.v{VALUES_VERSION}"


def load_or_build_values(
    catalog: Catalog, cache_dir: Path, database: Database, budget: ValueBudget | None = None
) -> ValueIndex:
    """The cached value index of this schema when it is complete, else one read from `database` and saved
    (`sophrosyne index`: a partial one, saved by a server within its time limit, is read again). Data changes
    do not change the key: rebuild with `sophrosyne index --rebuild`."""
    path = values_path(cache_dir, catalog)
    clean_stale(path.parent)
    saved = _complete(path)
    if saved is not None:
        return saved
    with building(path):  # one reading of the values for the processes that share the cache folder
        saved = _complete(path)
        if saved is not None:
            return saved
        index = ValueIndex.from_database(catalog, database, budget)
        try:
            index.save(path)
        except OSError as exc:
            raise unavailable("the value index", path.parent, exc) from None
    return index


def _complete(path: Path) -> ValueIndex | None:
    """The complete value index saved at `path`, or None (none, partial or damaged: it is read again)."""
    if not path.exists():
        return None
    try:
        saved = ValueIndex.load(path)
    except (OSError, ValueError, KeyError):
        return None
    if not saved.complete:
        logger.info("the saved value index %s is partial: reading the values again", path)
        return None
    return saved
