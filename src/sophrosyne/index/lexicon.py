"""The name lexicon of a catalog: normalised table and column names, their words, and the join graph."""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sophrosyne.base import names, words
from sophrosyne.base.memo import per_object
from sophrosyne.base.names import schema_abbreviations, spelled_out
from sophrosyne.base.version import __version__
from sophrosyne.base.words import stemmed, tokenize
from sophrosyne.index.cache import building, read_json, write_json
from sophrosyne.schema.catalog import Catalog, Table

LEXICON_VERSION = 1  # of the saved form
# Saved lexicons kept in the cache folder (the newest): each schema served has one, of a few MB at 5,000 tables.
KEEP_LEXICONS = 16


@dataclass
class Lexicon:
    """Names, words and join paths of one (role-restricted) catalog, for exact-name matching."""

    tables: list[str]
    table_phrases: dict[str, list[str]]  # table -> normalised spellings of its name
    columns: dict[str, list[tuple[str, str]]]  # normalised column name -> (table, column)
    raw_columns: dict[str, list[tuple[str, str]]]  # lower-cased column name -> (table, column)
    # Tables joined by a key: declared ones (and columns named like a primary key); inferred ones only where
    # the schema declares none. Declared keys win: a schema that declares keys is trusted to declare its joins
    # for directives (the tools still show inferred joins, marked).
    graph: dict[str, set[str]]
    value_words: dict[str, set[str]]  # word of a value description -> tables
    name_words: set[str]  # stemmed words of table and column names
    table_words: dict[str, set[str]]  # table -> stemmed words of its name and column names
    visible: set[tuple[str, str]]  # (table, column) the caller may see
    join_columns: dict[tuple[str, str], str]  # foreign-key column -> the table it points at
    max_phrase_words: int = 1  # the most words a table or column spelling has

    # Inverted maps, derived once per lexicon: a question looks its words up in them instead of visiting every
    # table (a warehouse has thousands).
    @cached_property
    def position(self) -> dict[str, int]:
        """Table -> its place in the catalog."""
        return {t: i for i, t in enumerate(self.tables)}

    @cached_property
    def phrase_tables(self) -> dict[str, list[str]]:
        """Spelling of a table's name -> the tables spelled so."""
        found: dict[str, list[str]] = {}
        for table, phrases in self.table_phrases.items():
            for phrase in phrases:
                found.setdefault(phrase, []).append(table)
        return found

    @cached_property
    def compact_tables(self) -> dict[str, list[str]]:
        """Spelling of a table's name without its spaces -> the tables spelled so."""
        found: dict[str, list[str]] = {}
        for table, phrases in self.table_phrases.items():
            for phrase in phrases:
                found.setdefault(phrase.replace(" ", ""), []).append(table)
        return found

    @cached_property
    def word_rows(self) -> dict[str, npt.NDArray[np.int64]]:
        """Word of `table_words` -> the places (in `tables`) of the tables that have it, in catalog order."""
        found: dict[str, list[int]] = {}
        for row, table in enumerate(self.tables):
            for word in self.table_words.get(table, ()):
                found.setdefault(word, []).append(row)
        return {word: np.array(rows, np.int64) for word, rows in found.items()}

    @cached_property
    def table_array(self) -> npt.NDArray[np.object_]:
        """`tables` as an array, to pick many by their places at once."""
        return np.array(self.tables, dtype=object)

    @cached_property
    def column_phrases(self) -> dict[str, int]:
        """Column spellings of several words -> their place among `columns`."""
        return {p: i for i, p in enumerate(p for p in self.columns if " " in p)}

    def grams(self, text: str) -> set[str]:
        """Every run of up to `max_phrase_words` words of a normalised text: the spellings it may contain."""
        words = text.split()
        size = self.max_phrase_words
        return {" ".join(words[i : i + n]) for n in range(1, size + 1) for i in range(len(words) - n + 1)}


_LEXICONS: dict[tuple[object, ...], Lexicon] = {}


def short_name(table: Table) -> str:
    """A qualified warehouse name (`project.dataset.table`) by its last part: how a question writes it."""
    return table.name.rsplit(".", 1)[-1]


@per_object(limit=256)
def catalog_abbreviations(catalog: Catalog) -> dict[str, str]:
    """The abbreviations this catalog teaches (`schema_abbreviations`): its names beside its descriptions."""
    return schema_abbreviations(
        (
            [short_name(t), *t.column_names],
            " ".join([t.description, *(f"{c.readable_name} {c.description}" for c in t.columns)]),
        )
        for t in catalog.tables.values()
    )


def table_spellings(table: Table, taught: dict[str, str]) -> list[str]:
    """The normalised spellings of a table's name: whole, by its last part, without a shard's date, and
    spelled out (`DIM_DEPT` -> "department")."""
    short = short_name(table)
    dateless = short.rstrip("0123456789_")
    spellings = {stemmed(table.name), stemmed(short), stemmed(dateless), stemmed(spelled_out(dateless, taught))}
    return sorted(s for s in spellings if s)


@per_object(limit=256)
def lexicon_for(catalog: Catalog) -> Lexicon:
    """The lexicon of a catalog, cached by its names, descriptions and keys (and by the catalog itself: a
    catalog does not change once read, and hashing a warehouse's names costs milliseconds per question)."""
    return _lexicon_for(catalog)


def _lexicon_for(catalog: Catalog) -> Lexicon:
    signature = tuple(
        (
            t.name,
            tuple((c.name, c.readable_name, c.description, c.value_description) for c in t.columns),
            t.description,
            tuple((tuple(fk.columns), fk.ref_table, fk.inferred) for fk in t.foreign_keys),
            tuple(t.primary_key),
        )
        for t in catalog.tables.values()
    )
    key = (hash(signature), len(signature))
    cached = _LEXICONS.get(key)
    if cached is not None:
        return cached
    columns: dict[str, list[tuple[str, str]]] = {}
    raw: dict[str, list[tuple[str, str]]] = {}
    graph: dict[str, set[str]] = {t: set() for t in catalog.tables}
    declares = any(not fk.inferred for t in catalog.tables.values() for fk in t.foreign_keys)
    table_phrases: dict[str, list[str]] = {}
    value_words: dict[str, set[str]] = {}
    visible: set[tuple[str, str]] = set()
    taught = catalog_abbreviations(catalog)
    # Each name spelled out once: a warehouse repeats its column names in table after table (160,000 columns).
    spelled: dict[str, str] = {}
    named: dict[str, frozenset[str]] = {}

    def spell(name: str) -> str:
        if name not in spelled:
            spelled[name] = stemmed(spelled_out(name, taught))
        return spelled[name]

    def words_of(name: str) -> frozenset[str]:
        """The words of a name and of its last part spelled out."""
        if name not in named:
            named[name] = frozenset(tokenize(name)) | frozenset(tokenize(spell(name.rsplit(".", 1)[-1])))
        return named[name]

    for table in catalog.tables.values():
        table_phrases[table.name] = table_spellings(table, taught)
        for column in table.columns:
            # One tuple per column, held by every map below: a warehouse has 160,000 columns.
            pair = (table.name, column.name)
            visible.add(pair)
            spellings = {stemmed(column.name), stemmed(column.readable_name), spell(column.name)}
            for spelling in spellings - {""}:
                columns.setdefault(spelling, []).append(pair)
            raw.setdefault(column.name.lower(), []).append(pair)
            for word in set(tokenize(column.value_description)):
                value_words.setdefault(word, set()).add(table.name)
        for fk in table.foreign_keys:
            ref = catalog.table(fk.ref_table)
            if ref is not None and ref.name != table.name and not (fk.inferred and declares):
                graph[table.name].add(ref.name)
                graph[ref.name].add(table.name)
    # Where the schema declares no foreign key, a column named like another table's one-column primary key
    # joins the two (`customers.CustomerID` <- `yearmonth.CustomerID`). Siblings that merely share a
    # column, or share plain `id` keys, are not joined.
    keys = {t.primary_key[0].lower(): t.name for t in catalog.tables.values() if len(t.primary_key) == 1}
    for name, holders in raw.items():
        owner = keys.get(name)
        if owner is None or name == "id" or len(holders) < 2:
            continue
        for other, _ in holders:
            if other != owner:
                graph[owner].add(other)
                graph[other].add(owner)
    table_words = {
        t.name: set().union(*(words_of(n) for n in [t.name, *t.column_names, *(c.readable_name for c in t.columns)]))
        for t in catalog.tables.values()
    }
    name_words = set().union(*table_words.values()) if table_words else set()
    join_columns = {
        (t.name, c): ref.name
        for t in catalog.tables.values()
        for fk in t.foreign_keys
        for c in fk.columns
        if (ref := catalog.table(fk.ref_table)) is not None and ref.name != t.name
    }
    lexicon = Lexicon(
        list(catalog.tables),
        table_phrases,
        columns,
        raw,
        graph,
        value_words,
        name_words,
        table_words,
        visible,
        join_columns,
        max(
            (p.count(" ") + 1 for p in [*columns, *(q for ps in table_phrases.values() for q in ps)]),
            default=1,
        ),
    )
    if len(_LEXICONS) > 256:
        _LEXICONS.clear()
    _LEXICONS[key] = lexicon
    return lexicon


# Saved in the cache folder ---------------------------------------------------------------------------------------
# Deriving a lexicon cost a cached start 0.5 s of CPU at 5,000 tables, reading it back 0.2 s.


def saved_lexicon(catalog: Catalog, cache_dir: Path | None) -> Lexicon:
    """`lexicon_for(catalog)`, read from the cache folder when one was saved for a catalog of the same names,
    descriptions and keys (by the same code), else derived and saved there; None for `cache_dir` derives it
    only (a restricted role's catalog holds joins confirmed through its own view: never saved)."""
    known = lexicon_for.kept(catalog)
    if known is not None or cache_dir is None:
        return known if known is not None else lexicon_for(catalog)
    path = Path(cache_dir) / "lexicon" / f"{lexicon_key(catalog)[:24]}.json"
    lexicon = _read(path)
    if lexicon is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # the entries kept are the ones read lately (see _prune)
    else:
        with building(path):  # one derivation for the processes sharing the cache; the others read it
            lexicon = _read(path)
            if lexicon is None:
                lexicon = lexicon_for(catalog)
                write_json(path, _as_json(lexicon))
                _prune(path.parent, KEEP_LEXICONS)
    lexicon_for.keep(catalog, lexicon)
    return lexicon


def lexicon_key(catalog: Catalog) -> str:
    """A hash of what a lexicon is derived from: the catalog's names, descriptions and keys in its order, and
    the code and word lists that derive it (an edited or upgraded package derives again)."""
    sources = [Path(__file__), Path(names.__file__), Path(words.__file__)]
    sources += [Path(names.__file__).with_name(n) for n in ("abbreviations.tsv", "english_words.txt")]
    digest = hashlib.sha256(repr((LEXICON_VERSION, __version__, [_stamp(p) for p in sources])).encode())
    for name, t in catalog.tables.items():
        columns = [(c.name, c.readable_name, c.description, c.value_description) for c in t.columns]
        keys = [(fk.columns, fk.ref_table, fk.inferred) for fk in t.foreign_keys]
        digest.update(repr((name, t.name, columns, t.description, keys, t.primary_key)).encode())
    return digest.hexdigest()


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)


def _as_json(lexicon: Lexicon) -> dict[str, Any]:
    # Each column once, as (its table's place, its name); the maps of names hold places among them (the pairs
    # written out twice were two thirds of the file, and of the time to read it).
    place = {t: i for i, t in enumerate(lexicon.tables)}
    pairs = sorted(lexicon.visible, key=lambda p: (place[p[0]], p[1]))
    number = {p: i for i, p in enumerate(pairs)}
    return {
        "tables": lexicon.tables,
        "pairs": [[place[t], c] for t, c in pairs],
        "table_phrases": lexicon.table_phrases,
        "columns": {k: [number[p] for p in held] for k, held in lexicon.columns.items()},
        "raw_columns": {k: [number[p] for p in held] for k, held in lexicon.raw_columns.items()},
        "graph": {t: sorted(linked) for t, linked in lexicon.graph.items()},
        "value_words": {w: sorted(tables) for w, tables in lexicon.value_words.items()},
        "name_words": sorted(lexicon.name_words),
        "table_words": {t: sorted(found) for t, found in lexicon.table_words.items()},
        "join_columns": [[t, c, ref] for (t, c), ref in lexicon.join_columns.items()],
        "max_phrase_words": lexicon.max_phrase_words,
    }


def _read(path: Path) -> Lexicon | None:
    """The lexicon saved at `path`, or None (none, or damaged: derived again and overwritten)."""
    data = read_json(path)
    if not isinstance(data, dict):
        return None
    try:
        tables = list(data["tables"])
        pairs = [(tables[t], str(c)) for t, c in data["pairs"]]
        return Lexicon(
            tables,
            dict(data["table_phrases"]),
            {k: [pairs[i] for i in held] for k, held in data["columns"].items()},
            {k: [pairs[i] for i in held] for k, held in data["raw_columns"].items()},
            {t: set(linked) for t, linked in data["graph"].items()},
            {w: set(found) for w, found in data["value_words"].items()},
            set(data["name_words"]),
            {t: set(found) for t, found in data["table_words"].items()},
            set(pairs),
            {(t, c): ref for t, c, ref in data["join_columns"]},
            int(data["max_phrase_words"]),
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def _prune(folder: Path, keep: int) -> None:
    """Remove all but the `keep` entries of `folder` written or read last (one removed meanwhile by another
    process is fine)."""
    try:
        entries = [(e.stat().st_mtime_ns, e) for e in folder.iterdir() if e.suffix == ".json"]
    except OSError:
        return
    for _, entry in sorted(entries, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            os.unlink(entry)
