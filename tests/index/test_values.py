"""The value index's storage: flat arrays (not a Python object per value), mapped from a versioned cache file."""

from __future__ import annotations

import random
import sqlite3
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from sophrosyne.base.text import normalize
from sophrosyne.base.words import stem
from sophrosyne.database import open_database
from sophrosyne.index import postings
from sophrosyne.index.postings import Postings, PostingsBuilder
from sophrosyne.index.values import VALUES_VERSION, ValueIndex, load_or_build_values, value_form, values_path
from sophrosyne.schema.catalog import Catalog, Column, Table


def catalog_of(columns: int) -> Catalog:
    tables = {f"t{i}": Table(f"t{i}", [Column("name", "TEXT"), Column("n", "INTEGER")]) for i in range(columns)}
    return Catalog(tables=tables)


def words(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(['Fellwar', 'Stone', 'Lyon', 'Tea'])} {rng.randrange(10**6)} {i}" for i in range(count)]


Held = dict[str, list[int]]


def model(data: dict[tuple[str, str], list[str]], catalog: Catalog) -> tuple[Held, Held]:
    """What the index holds, computed the plain way: dicts of lists, in reading order."""
    values: Held = {}
    col_id = 0
    for table in catalog.tables.values():
        for column in table.columns:
            if column.type != "TEXT":
                continue
            for value in data.get((table.name, column.name), []):
                holders = values.setdefault(normalize(value), [])
                if not holders or holders[-1] != col_id:
                    holders.append(col_id)
            col_id += 1
    forms: Held = {}
    for value, ids in values.items():
        if form := value_form(value):
            held = forms.setdefault(form, [])
            held.extend(i for i in ids if i not in held)
    return values, forms


def shared_values(seed: int) -> tuple[Catalog, dict[tuple[str, str], list[str]]]:
    """Columns that share values in several spellings, so that forms gather ids out of order."""
    rng = random.Random(seed)
    catalog = catalog_of(40)
    pool = ["Labrador", "labradors", "LABRADOR ", "Jan 7, 2021", "2021-01-07", "1,000.0", "1000", "Straße", "naïve"]
    pool += [f"word{i}" for i in range(60)] + [f"Word{i}s" for i in range(60)]
    data = {(f"t{i}", "name"): rng.sample(pool, rng.randrange(1, 30)) for i in range(40)}
    return catalog, data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lookups_match_dicts_of_lists(seed: int) -> None:
    catalog, data = shared_values(seed)
    index = ValueIndex.build(catalog, lambda t, c, n: data.get((t, c), []))
    values, forms = model(data, catalog)
    assert len(index) == len(values) and len(index.forms) == len(forms)
    assert all(index.values.get(v) == ids for v, ids in values.items())
    assert all(index.form_ids(f) == ids for f, ids in forms.items())
    assert any(ids != sorted(ids) for ids in forms.values())  # the order of first finding is kept, not sorted
    for literal in ["labradors", "Labradors", "7 Jan 2021", "1000", "nothing", "", "WORD3S"]:
        expected = values.get(normalize(literal)) or forms.get(value_form(literal), [])
        assert index.lookup(literal) == [index.columns[i] for i in expected]
        assert index.lookup(literal, forms=False) == [index.columns[i] for i in values.get(normalize(literal), [])]


def test_strings_that_share_a_hash_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every string given the same 64-bit lookup hash: lookups still find each one's own ids."""
    real = postings._digest
    monkeypatch.setattr(postings, "_digest", lambda raw: b"\x07" * 8 + real(raw)[8:])
    catalog, data = shared_values(3)
    index = ValueIndex.build(catalog, lambda t, c, n: data.get((t, c), []))
    values, forms = model(data, catalog)
    assert len(set(index.values.hashes.tolist())) == 1
    assert all(index.values.get(v) == ids for v, ids in values.items())
    assert all(index.form_ids(f) == ids for f, ids in forms.items())
    assert index.values.get("not there") == []


@pytest.mark.slow  # 60,000 values built under tracemalloc: CI runs it on its own (.ci/run)
def test_the_value_index_takes_a_few_dozen_bytes_per_value() -> None:
    """No Python object per value: dicts of `str` -> `list[int]` (values and their forms) took 369 bytes a
    value besides the text's own bytes; the arrays take 73 (measured here, 60,000 values, 17 bytes each)."""
    count = 30_000
    catalog = catalog_of(3)
    data = {(f"t{i}", "name"): words(count, seed=i % 2) for i in range(3)}  # t0 and t2 hold the same values
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = ValueIndex.build(catalog, lambda t, c, n: data[(t, c)], budget=None)
        stem.cache_clear()  # the stemmer's own bounded cache is not the index
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    stored = len(index)
    assert stored == 2 * count
    text = sum(len(v.encode()) for v in {normalize(v) for vs in data.values() for v in vs})
    # The bound leaves margin above 73 and stays far below the 369 of Python objects.
    assert (held - text) / stored < 110, (held, text, stored)
    assert isinstance(index.values.hashes, np.ndarray) and isinstance(index.forms.ids, np.ndarray)


def test_saved_index_is_mapped_and_versioned(tmp_path: Path) -> None:
    catalog, data = shared_values(4)
    index = ValueIndex.build(catalog, lambda t, c, n: data.get((t, c), []))
    path = values_path(tmp_path, catalog)
    assert path.name.endswith(f".v{VALUES_VERSION}")
    index.save(path)
    assert not index.values.hashes.flags.owndata and not index.forms.ids.flags.owndata  # saved: read from the file
    loaded = ValueIndex.load(path)
    assert loaded.columns == index.columns and loaded.complete == index.complete
    for name in ("hashes", "blob", "ids"):
        array = getattr(loaded.values, name)
        assert not array.flags.owndata and not array.flags.writeable  # a view of the mapped file, not a copy
    values, forms = model(data, catalog)
    assert all(loaded.values.get(v) == ids for v, ids in values.items())
    assert all(loaded.form_ids(f) == ids for f, ids in forms.items())
    path.write_bytes(path.read_bytes().replace(b'"version": 3', b'"version": 9', 1))
    with pytest.raises(ValueError, match="version 9"):
        ValueIndex.load(path)
    path.write_bytes(b"")
    with pytest.raises(ValueError):
        ValueIndex.load(path)


def test_an_older_cache_is_read_again_and_removed(tmp_path: Path) -> None:
    """A cache saved by the JSON version (`<key>.json`) is not read: the values are read again, saved in
    this version's file, and the old file goes."""
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE products (name TEXT)")
        db.execute("INSERT INTO products VALUES ('Tea')")
    database = open_database(path)
    try:
        catalog = database.catalog()
        new = values_path(tmp_path / "cache", catalog)
        old = new.with_name(new.name.split(".")[0] + ".json")
        old.parent.mkdir(parents=True)
        old.write_text('{"columns": [["products", "name"]], "values": {"coffee": [0]}, "complete": true}')
        index = load_or_build_values(catalog, tmp_path / "cache", database)
        assert index.lookup("tea") == [("products", "name")] and index.lookup("coffee") == []
        assert new.exists() and not old.exists()
        assert ValueIndex.load(new).lookup("Tea") == [("products", "name")]
    finally:
        database.close()


def test_builder_keeps_each_id_once_in_first_order() -> None:
    builder = PostingsBuilder()
    for text, id_ in [("a", 3), ("b", 1), ("a", 1), ("a", 3), ("b", 1), ("a", 2), ("c", 0)]:
        builder.add(text, id_)
    table, first_seen = builder.finish()
    assert [table.get(t) for t in "abc"] == [[3, 1, 2], [1], [0]]
    assert sorted(first_seen.tolist()) == first_seen[np.argsort(first_seen)].tolist()
    assert [text for _, text in table.texts(np.argsort(first_seen))] == ["a", "b", "c"]
    assert Postings.empty().get("a") == [] and len(PostingsBuilder().finish()[0]) == 0
