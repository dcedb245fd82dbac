"""The lexicon saved in the cache folder: read back equal to the derived one, derived again when the schema (or a
damaged entry) says so, kept to a few entries, written once by processes sharing the folder; and the answers of
list_tables the same with the cache cold and warm."""

from __future__ import annotations

import copy
import json
import sqlite3
import threading
from dataclasses import fields
from pathlib import Path

import pytest

from sophrosyne.bench.data.files import load_catalogs
from sophrosyne.environment import Environment
from sophrosyne.index import lexicon as lexicons
from sophrosyne.index.lexicon import Lexicon, lexicon_for, lexicon_key, saved_lexicon
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table, load_bird_descriptions
from sophrosyne.settings import Settings

FIXTURES = Path(__file__).parents[1] / "fixtures" / "directives"


def shop() -> Catalog:
    """A fresh catalog object each time (a lexicon is kept per catalog object in memory)."""
    catalog = copy.deepcopy(load_catalogs(FIXTURES / "tables.json")["shop"])  # the reader keeps the one it read
    load_bird_descriptions(catalog, FIXTURES / "descriptions" / "shop" / "database_description")
    return catalog


def same(a: Lexicon, b: Lexicon) -> None:
    for field in fields(Lexicon):
        assert getattr(a, field.name) == getattr(b, field.name), field.name


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "lexicon").glob("*.json"))


def test_a_saved_lexicon_is_read_back_equal_to_the_derived_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    derived = saved_lexicon(shop(), tmp_path)
    assert len(entries(tmp_path)) == 1
    same(derived, lexicons._lexicon_for(shop()))

    def refuse(catalog: Catalog) -> Lexicon:
        raise AssertionError("derived although a lexicon of this catalog was saved")

    monkeypatch.setattr(lexicons, "_lexicon_for", refuse)
    catalog = shop()
    read = saved_lexicon(catalog, tmp_path)
    same(read, derived)
    assert lexicon_for(catalog) is read  # what directives ask for is the one read


def test_a_changed_schema_gets_a_lexicon_of_its_own(tmp_path: Path) -> None:
    before = saved_lexicon(shop(), tmp_path)
    changed = shop()
    table = next(iter(changed.tables.values()))
    table.columns.append(Column(name="favourite_colour_code", type="TEXT"))
    assert lexicon_key(changed) != lexicon_key(shop())
    after = saved_lexicon(changed, tmp_path)
    added = (table.name, "favourite_colour_code")
    assert added in after.visible and added not in before.visible
    same(after, lexicons._lexicon_for(changed))
    # A key inferred later (a join confirmed by values) changes the join graph, so the key too.
    joined = copy.deepcopy(changed)
    first, second = list(joined.tables.values())[:2]
    first.foreign_keys.append(ForeignKey([first.columns[0].name], second.name, [], inferred=True))
    assert lexicon_key(joined) != lexicon_key(changed)
    same(saved_lexicon(joined, tmp_path), lexicons._lexicon_for(joined))
    assert len(entries(tmp_path)) == 3


def test_a_damaged_entry_is_derived_again_and_overwritten(tmp_path: Path) -> None:
    saved_lexicon(shop(), tmp_path)
    [entry] = entries(tmp_path)
    for damage in ("{not json", json.dumps({"tables": ["a"]}), json.dumps({"tables": [], "pairs": [[7, "x"]]})):
        entry.write_text(damage)
        same(saved_lexicon(shop(), tmp_path), lexicons._lexicon_for(shop()))
        assert json.loads(entry.read_text())["tables"] == list(shop().tables)


def test_the_folder_keeps_only_the_entries_used_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicons, "KEEP_LEXICONS", 2)
    catalogs = []
    for n in range(4):
        catalog = shop()
        catalog.tables[f"extra_{n}"] = Table(name=f"extra_{n}", columns=[Column(name="id", type="INTEGER")])
        catalogs.append(catalog)
        saved_lexicon(catalog, tmp_path)
    kept = {p.stem for p in entries(tmp_path)}
    assert kept == {lexicon_key(c)[:24] for c in catalogs[-2:]}


def test_processes_sharing_the_folder_derive_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    derivations = []
    derive = lexicons._lexicon_for

    def counted(catalog: Catalog) -> Lexicon:
        derivations.append(1)
        return derive(catalog)

    monkeypatch.setattr(lexicons, "_lexicon_for", counted)
    lexicons._LEXICONS.clear()
    found: list[Lexicon] = []
    # Each thread holds its own descriptor of the lock file: flock excludes them as it does processes.
    threads = [threading.Thread(target=lambda: found.append(saved_lexicon(shop(), tmp_path))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 4 and len(derivations) == 1
    for other in found[1:]:
        same(other, found[0])
    assert [p.name for p in (tmp_path / "lexicon").iterdir()] == [entries(tmp_path)[0].name]  # no temp left


QUESTIONS = [
    "Which customers in the north region paid their invoices late last month?",
    "How many refunds were issued per product category?",
    "List the suppliers of the products ordered most often.",
    "What is the average salary of the employees in each department?",
]


def build(path: Path, extra: bool = False) -> Path:
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT, region TEXT);
        CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
            paid_on TEXT, due_on TEXT, amount REAL);
        CREATE TABLE IF NOT EXISTS products (id INTEGER PRIMARY KEY, title TEXT, category TEXT,
            supplier_id INTEGER REFERENCES suppliers(id));
        CREATE TABLE IF NOT EXISTS suppliers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
        CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, product_id INTEGER REFERENCES products(id),
            customer_id INTEGER REFERENCES customers(id), quantity INTEGER);
        CREATE TABLE IF NOT EXISTS employees (id INTEGER PRIMARY KEY, name TEXT, salary REAL, department TEXT);
        CREATE TABLE IF NOT EXISTS shipments (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id));
        """
    )
    if extra:
        con.executescript("CREATE TABLE refunds (id INTEGER PRIMARY KEY, invoice_id INTEGER, category TEXT);")
    else:
        con.executescript(
            "INSERT INTO customers (name, region) VALUES ('Ada', 'north'), ('Bo', 'south');"
            "INSERT INTO employees (name, salary, department) VALUES ('Cy', 10.0, 'sales');"
        )
    con.commit()
    con.close()
    return path


def answers(db: Path, cache: Path) -> list[str]:
    """Each question's list_tables as the agent reads it, from a fresh environment on `cache`."""
    with Environment.open(db, settings=Settings.load(None, cache_dir=cache)) as env:
        env.warm(wait=True)
        return ["\n".join(env.list_tables(question=q).agent_lines("n")) for q in QUESTIONS]


def test_list_tables_answers_the_same_cold_and_warm_and_sees_a_changed_schema(tmp_path: Path) -> None:
    db = build(tmp_path / "shop.sqlite")
    cold = answers(db, tmp_path / "cache")
    assert len(entries(tmp_path / "cache")) == 1
    assert answers(db, tmp_path / "cache") == cold  # the lexicon read from the cache folder
    assert answers(db, tmp_path / "fresh") == cold
    build(db, extra=True)  # the schema changes: a table the refund question needs
    changed = answers(db, tmp_path / "cache")
    assert "- refunds [" in changed[1] and "- refunds [" not in cold[1]
    # The directives see it too: the question's word has a table now.
    assert "'refunds' found no table" in cold[1] and "'refunds' found no table" not in changed[1]
    assert changed == answers(db, tmp_path / "fresh-after")
    assert len(entries(tmp_path / "cache")) == 2


def test_completed_joins_save_the_lexicon_the_next_start_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sophrosyne index` completes the joins: the lexicon over them is saved too, so that a start on the folder
    (mounted read-only, say) derives none."""
    db = build(tmp_path / "shop.sqlite")
    settings = Settings.load(None, cache_dir=tmp_path / "cache")
    with Environment.open(db, settings=settings) as env:
        assert env.complete_joins().complete
    assert len(entries(tmp_path / "cache")) == 1

    def refuse(catalog: Catalog) -> Lexicon:
        raise AssertionError("derived although `sophrosyne index` saved it")

    monkeypatch.setattr(lexicons, "_lexicon_for", refuse)
    with Environment.open(db, settings=settings) as env:
        env.warm(wait=True)
        assert env.list_tables(question=QUESTIONS[0]).directives
