"""The offline schema index: tokens, fusion, vectors, save/load, cache keyed by the schema, values, embedders."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fixtures.openai_server import scripted_server
from sophrosyne.base.words import split_identifier, stem, stemmed, tokenize
from sophrosyne.bench.data.files import load_catalogs
from sophrosyne.database import open_database
from sophrosyne.index import (
    ColumnHit,
    OpenAIEmbedder,
    SchemaIndex,
    ValueIndex,
    WordLlamaEmbedder,
    load_or_build,
    reciprocal_rank_fusion,
    schema_key,
)
from sophrosyne.index.cache import building
from sophrosyne.index.schema_index import column_documents
from sophrosyne.index.values import load_or_build_values
from sophrosyne.index.vectors import VectorIndex
from sophrosyne.schema.catalog import Catalog, load_bird_descriptions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "directives"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    shop = load_catalogs(FIXTURES / "tables.json")["shop"]
    load_bird_descriptions(shop, FIXTURES / "descriptions" / "shop" / "database_description")
    return shop


@pytest.fixture(scope="module")
def index(catalog: Catalog) -> SchemaIndex:
    return SchemaIndex.build(catalog)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("customer_id", ["customer", "id"]),
        ("setCode", ["set", "code"]),
        ("HTTPServerName", ["http", "server", "name"]),
        ("T1.customer_id2", ["t", "1", "customer", "id", "2"]),
        ("Free Meal Count (K-12)", ["free", "meal", "count", "k", "12"]),
        ("A11", ["a", "11"]),
    ],
)
def test_split_identifier(name: str, expected: list[str]) -> None:
    assert split_identifier(name) == expected


def test_tokenize_drops_stopwords_and_stems() -> None:
    assert tokenize("What are the names of the schools in cities?") == ["name", "school", "city"]
    assert stem("classes") == "class" and stem("status") == "status" and stem("bus") == "bus"
    assert stemmed("set_translations") == stemmed("Set Translations") == "set translation"


def test_reciprocal_rank_fusion_rewards_agreement() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "a", "d"]], k=60)
    assert [item for item, _ in fused][:2] in (["a", "b"], ["b", "a"])
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert [item for item, _ in fused][-1] in ("c", "d")


def test_search_finds_columns_by_words_and_meaning(index: SchemaIndex, catalog: Catalog) -> None:
    hits = index.search("product name", k=3)
    assert hits and isinstance(hits[0], ColumnHit)
    assert (hits[0].table, hits[0].column) == ("products", "productName")
    assert index.search("membership level", k=1)[0].column == "loyalty_tier"  # from the description
    restricted = Catalog(tables={k: v for k, v in catalog.tables.items() if k != "products"})
    assert all(h.table != "products" for h in index.search("product name", k=5, visible=restricted))


def test_save_load_round_trip(index: SchemaIndex, tmp_path: Path) -> None:
    index.save(tmp_path / "ix")
    loaded = SchemaIndex.load(tmp_path / "ix")
    assert loaded.key == index.key
    assert loaded.search("supplier country", k=3) == index.search("supplier country", k=3)


def test_a_load_takes_the_documents_of_its_catalog_when_their_order_is_the_saved_one(
    index: SchemaIndex, catalog: Catalog, tmp_path: Path
) -> None:
    index.save(tmp_path / "ix")
    assert not any("docs" in line for line in (tmp_path / "ix" / "manifest.json").read_text().split(", "))
    mine = column_documents(catalog)
    assert SchemaIndex.load(tmp_path / "ix", docs=mine).docs is mine  # not read again from the file
    reordered = column_documents(Catalog(tables=dict(reversed(list(catalog.tables.items())))))
    assert reordered != mine
    loaded = SchemaIndex.load(tmp_path / "ix", docs=reordered)  # another order: the saved documents
    assert loaded.docs == index.docs and loaded.search("product name", k=3) == index.search("product name", k=3)
    # A manifest that holds the documents itself (as saved before) is still read.
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    manifest["docs"] = [asdict(d) for d in index.docs]
    (tmp_path / "ix" / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "ix" / "docs.json").unlink()
    assert SchemaIndex.load(tmp_path / "ix", docs=reordered).docs == index.docs


def test_load_or_build_reuses_and_rebuilds_on_schema_change(catalog: Catalog, tmp_path: Path) -> None:
    first = load_or_build(catalog, tmp_path)
    again = load_or_build(catalog, tmp_path)
    assert again.key == first.key and again.build_s == 0.0  # loaded, not built
    changed = load_catalogs(FIXTURES / "tables.json")["shop"]
    changed.tables["stores"].columns[1].description = "the shop's sign"
    assert schema_key(changed, "x") != schema_key(catalog, "x")
    rebuilt = load_or_build(changed, tmp_path)
    assert rebuilt.key != first.key and rebuilt.build_s > 0
    assert len(list((tmp_path / "schema").iterdir())) == 2


def test_vector_index_search_is_exact_and_survives_save_and_load(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(vectors)
    queries = vectors[:20] + 0.01
    scores, ids = index.search(queries, 5)
    best = np.argsort(-(queries @ vectors.T), axis=1)[:, :5]
    assert (ids == best).all() and (ids[:, 0] == np.arange(20)).all()
    assert np.allclose(scores, np.take_along_axis(queries @ vectors.T, best, axis=1), atol=1e-5)
    (tmp_path / "vectors.faiss").write_bytes(b"an approximate index an older version saved beside")
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path)
    assert (loaded.search(queries, 5)[1] == ids).all()


def test_a_large_matrix_is_held_in_half_precision_and_scored_in_full(tmp_path: Path) -> None:
    from sophrosyne.index.vectors import HALF_ABOVE_BYTES, held_type

    assert held_type(1000, 256) is np.float32
    assert held_type(HALF_ABOVE_BYTES // (4 * 256) + 1, 256) is np.float16  # 20,000 tables: 158,544 x 256
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(10_000, 32)).astype(np.float32)  # more rows than one widened block
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    half = vectors.astype(np.float16)
    index = VectorIndex(half)
    assert index.vectors.dtype == np.float16 and index.vectors.nbytes == vectors.nbytes // 2
    queries = vectors[:20] + 0.01
    # Each score is the float32 product with the rows as held, within 1e-3 of the float32 matrix's.
    exact = queries @ half.astype(np.float32).T
    assert np.allclose(index.all_scores(queries), exact, atol=1e-6)
    assert np.abs(index.all_scores(queries) - queries @ vectors.T).max() < 1e-3
    ids = index.search(queries, 5)[1]
    assert (ids[:, 0] == np.arange(20)).all()
    assert (ids == np.argsort(-exact, axis=1)[:, :5]).all()
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path)
    assert loaded.vectors.dtype == np.float16 and (loaded.search(queries, 5)[1] == ids).all()


def test_value_index_grounds_literals_within_budget(catalog: Catalog, tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (customer_id INTEGER, full_name TEXT, city TEXT, loyalty_tier TEXT)")
        db.executemany(
            "INSERT INTO customers VALUES (?, ?, ?, ?)", [(1, "Ann Lee", "Lyon", "gold"), (2, "Bo", "Nice", "x" * 500)]
        )
        db.execute("CREATE TABLE products (product_id INTEGER, productName TEXT, category TEXT, supplier_id INTEGER)")
        db.execute("INSERT INTO products VALUES (1, 'Tea', 'Drinks', 1)")
    values = ValueIndex.from_sqlite(catalog, path)
    assert values.lookup("lyon") == [("customers", "city")]
    assert values.lookup("  Tea ") == [("products", "productName")]
    assert values.lookup("x" * 500) == []  # longer than the budget's max_chars
    assert not values.complete  # tables missing from the file are reported as incomplete
    database = open_database(path)
    try:
        # Read through the database's timed read-only sessions, then from the cache.
        cached = load_or_build_values(catalog, tmp_path / "cache", database)
        assert cached.lookup("Drinks") == [("products", "category")]
        assert load_or_build_values(catalog, tmp_path / "cache", database).lookup("Drinks") == cached.lookup("Drinks")
    finally:
        database.close()


def test_wordllama_embeddings_are_unit_vectors_and_batch_independent() -> None:
    embedder = WordLlamaEmbedder()
    texts = ["customer city", "", "unit price of an order item"]
    small = embedder.embed(texts)
    large = embedder.embed(texts * 40)[:3]
    assert np.allclose(small, large, atol=1e-5)
    assert np.allclose(np.linalg.norm(small[[0, 2]], axis=1), 1.0, atol=1e-5)


WORDLLAMA_CHECK = """
import json, sys
from pathlib import Path
import numpy as np
from sophrosyne.index.embedders import WordLlamaEmbedder
texts = ["customer city", "", "unit price of an order item", "Ünïcödé Straße", "x" * 300]
ours, batched = WordLlamaEmbedder().embed(texts), WordLlamaEmbedder().embed(texts * 30)[: len(texts)]
loaded = {"wordllama": "wordllama" in sys.modules, "requests": "requests" in sys.modules}
import wordllama
from wordllama import WordLlama
theirs = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True, dim=256).embed(texts)
norms = np.linalg.norm(theirs, axis=1, keepdims=True)
theirs = np.divide(theirs, norms, out=np.zeros_like(theirs), where=norms > 0)
print(json.dumps({**loaded, "diff": float(max(abs(ours - theirs).max(), abs(batched - theirs).max()))}))
"""


def test_wordllama_vectors_match_the_package_and_need_no_import_of_it() -> None:
    # In a process of its own: importing wordllama sets up logging at INFO, and the point is what is imported.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", WORDLLAMA_CHECK], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["wordllama"] is False and found["requests"] is False
    assert found["diff"] < 1e-5


def _embeddings(path: str, body: dict[str, Any]) -> dict[str, Any]:
    data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
    return {"data": list(reversed(data)), "model": body["model"]}


@pytest.fixture()
def embeddings_server() -> Iterator[str]:
    with scripted_server(_embeddings) as (url, _):
        yield url


def test_openai_embedder_against_a_scripted_server(embeddings_server: str, catalog: Catalog) -> None:
    embedder = OpenAIEmbedder(embeddings_server, "text-embedding-3-large", api_key="k", batch_size=4)
    vectors = embedder.embed(["ab", "abcd", "a"])
    assert vectors.shape == (3, 3)
    assert vectors[1, 0] > vectors[0, 0] > vectors[2, 0]  # order kept although the server reversed it
    index = SchemaIndex.build(catalog, embedder=embedder)
    assert index.search("city", k=1)[0].column == "city"


def test_index_command_builds_then_reuses(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sophrosyne.cli.app import app

    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE stores (store_id INTEGER PRIMARY KEY, store_name TEXT)")
        db.execute("INSERT INTO stores VALUES (1, 'Harbour')")
    env = {"SOPHROSYNE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    first = CliRunner().invoke(app, ["index", str(path)], env=env)
    assert first.exit_code == 0, first.output
    assert "indexed 2 columns of 1 table and 1 distinct value " in first.output
    assert len(list((tmp_path / "cache" / "schema").iterdir())) == 1
    again = CliRunner().invoke(app, ["index", str(path)], env=env)
    assert again.exit_code == 0 and "indexed 2 columns" in again.output
    missing = CliRunner().invoke(app, ["index", str(tmp_path / "nope.sqlite")], env=env)
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_the_index_command_builds_what_a_server_loads_with_shards_and_undeclared_keys(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sophrosyne.cli.app import app
    from sophrosyne.environment import Environment
    from sophrosyne.settings import Settings

    path = tmp_path / "events.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (customer_id INTEGER, full_name TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?)", [(1, "Ada"), (2, "Grace")])
        for day in range(1, 6):  # a shard group, which directives fold into one table
            db.execute(f"CREATE TABLE events_2024010{day} (event_id INTEGER, customer_id INTEGER, kind TEXT)")
            db.execute(f"INSERT INTO events_2024010{day} VALUES ({day}, 1, 'login')")
    cache = tmp_path / "cache"
    done = CliRunner().invoke(app, ["index", str(path)], env={"SOPHROSYNE_CACHE_DIR": str(cache), "COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "of 6 tables" in done.output
    # The joins a server would infer within its budget, checked to the end by the command and saved.
    assert "inferred 1 join the schema does not declare: 1 confirmed by values" in done.output
    env = Environment.open(path, settings=Settings(cache_dir=cache))
    try:
        listed = env.list_tables(question="Which kinds of events did Ada have?")
        assert listed.directive_note is None or "still" not in listed.directive_note
        # Loaded, not built: the server's directives index the folded catalog, with joins it infers, and the
        # command built exactly that one.
        assert env.moderator.index.build_s == 0.0
        joins = env.moderator.prepared.joins
        assert joins.complete and joins.confirmed == 1 and len(list((cache / "joins").iterdir())) == 1
        assert len(list((cache / "schema").iterdir())) == 1
    finally:
        env.close()


@pytest.mark.parametrize("chunk", [1, 2, 10_000])
def test_documents_written_a_chunk_at_a_time_read_back_whole(index: SchemaIndex, tmp_path: Path, chunk: int) -> None:
    from sophrosyne.index.schema_index import ColumnDoc, _write_docs

    _write_docs(tmp_path / "docs.json", index.docs, chunk=chunk)
    assert [ColumnDoc(*row) for row in json.loads((tmp_path / "docs.json").read_text())] == index.docs
    _write_docs(tmp_path / "none.json", [], chunk=chunk)
    assert json.loads((tmp_path / "none.json").read_text()) == []


def test_processes_sharing_a_cache_build_an_index_once(catalog: Catalog, tmp_path: Path) -> None:
    """Two builders at once (threads here: each takes the lock through a descriptor of its own, as processes
    do): one builds, the other waits for it and reads what it saved."""
    with ThreadPoolExecutor(2) as pool:
        indexes = list(pool.map(lambda _: load_or_build(catalog, tmp_path), range(2)))
    assert sorted(index.build_s > 0 for index in indexes) == [False, True]
    assert indexes[0].key == indexes[1].key


def test_a_build_lock_is_held_until_its_holder_leaves(tmp_path: Path) -> None:
    entry = tmp_path / "schema" / "0123"
    entry.parent.mkdir()
    held, waited = threading.Event(), threading.Event()

    def second() -> None:
        with building(entry):
            waited.set()

    with building(entry):
        held.set()
        other = threading.Thread(target=second)
        other.start()
        assert not waited.wait(0.3)  # the second waits while the first builds
    assert waited.wait(10)
    other.join()
    assert list((tmp_path / "schema").iterdir()) == []  # the locks live apart from the entries
