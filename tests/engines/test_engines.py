"""Engine records: names, the light path for file engines, native read-only connections and the SQLite catalog."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from fixtures.engines import build_duckdb, build_sqlite
from sophrosyne import engines
from sophrosyne.database import open_database
from sophrosyne.engines.pools import FilePool
from sophrosyne.errors import QueryFailed
from sophrosyne.schema.catalog import Catalog

DEMO = Path(__file__).parents[2] / "src" / "sophrosyne" / "data" / "demo.sqlite"
HEAVY = ["sqlalchemy", "numpy", "mcp", "sophrosyne.index", "sophrosyne.directives.moderator"]


@pytest.mark.parametrize(
    ("name", "record"),
    [
        ("sqlite", engines.SQLite),
        ("duckdb", engines.DuckDB),
        ("postgres", engines.PostgreSQL),
        ("postgresql", engines.PostgreSQL),
        ("mysql", engines.MySQL),
        ("MariaDB", engines.MySQL),
    ],
)
def test_each_engine_is_one_record_under_all_its_names(name: str, record: type[engines.Engine]) -> None:
    found = engines.named(name)
    assert isinstance(found, record)
    assert engines.for_dialect(name) is found


def test_another_sqlglot_dialect_gets_the_cautious_defaults() -> None:
    trino = engines.for_dialect("Trino")
    assert type(trino) is engines.Engine and trino.name == "trino"
    assert engines.named("trino") is None
    assert trino.reads_file_names  # a table named like a file may be read as one
    assert trino.default_schema is None and trino.fence_limit is None and not trino.fence_materialized


def test_file_suffixes_choose_the_file_engine() -> None:
    assert isinstance(engines.for_file(Path("a.SQLITE3")), engines.SQLite)
    assert isinstance(engines.for_file(Path("a.db")), engines.SQLite)
    assert isinstance(engines.for_file(Path("a.duckdb")), engines.DuckDB)
    assert engines.for_file(Path("a.csv")) is None


def light_path_modules(target: Path) -> dict[str, Any]:
    """Run execute_sql in a fresh interpreter and report which heavy modules it imported."""
    code = (
        "import json, sys\n"
        "from sophrosyne.environment import Environment\n"
        "env = Environment.open(sys.argv[1])\n"
        "assert env.execute_sql('SELECT 1').rows == [[1]]\n"
        f"print(json.dumps({{'imported': [m for m in {HEAVY!r} if m in sys.modules], "
        "'catalog_read': env.db.catalog_ready}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_running_sql_on_a_file_reads_no_catalog_and_loads_no_heavy_module(kind: str, tmp_path: Path) -> None:
    """A file engine runs on its own driver: no SQLAlchemy, no numpy, no index, no MCP, no catalog read."""
    target = DEMO if kind == "sqlite" else build_duckdb(tmp_path / "hr.duckdb")
    assert light_path_modules(target) == {"imported": [], "catalog_read": False}


def test_native_sqlite_connections_keep_every_read_only_layer(tmp_path: Path) -> None:
    database = open_database(build_sqlite(tmp_path / "hr.sqlite"))
    try:
        assert database.driver == "sqlite3"
        assert database.display_url == f"sqlite:///{(tmp_path / 'hr.sqlite').resolve()}"
        assert database.run("PRAGMA query_only").rows == [(1,)]
        with pytest.raises(QueryFailed, match="too many attached databases"):
            database.run(f"ATTACH DATABASE '{tmp_path / 'x.db'}' AS x")
        assert not (tmp_path / "x.db").exists()
        # Functions queries rely on: a Unicode LOWER, and REGEXP and floor() as SQLAlchemy's driver gave them.
        assert database.run("SELECT lower('ÉCOLE'), 'abc' REGEXP 'b+', floor(2.7), floor(NULL)").rows == [
            ("école", 1, 2, None)
        ]
    finally:
        database.close()


def test_native_duckdb_connections_keep_every_read_only_layer(tmp_path: Path) -> None:
    database = open_database(build_duckdb(tmp_path / "hr.duckdb"))
    try:
        assert database.driver == "duckdb"
        settings = database.run(
            "SELECT current_setting('access_mode'), current_setting('enable_external_access'), "
            "current_setting('python_enable_replacements')"
        ).rows
        assert [(str(a).lower(), b, c) for a, b, c in settings] == [("read_only", False, False)]
    finally:
        database.close()


def test_file_pool_reuses_connections_and_serves_threads(tmp_path: Path) -> None:
    database = open_database(build_sqlite(tmp_path / "hr.sqlite"))
    pool = database.pool
    assert isinstance(pool, FilePool)
    try:
        with ThreadPoolExecutor(max_workers=8) as threads:
            counts = list(threads.map(lambda _: database.run("SELECT COUNT(*) FROM notes").rows[0][0], range(64)))
        assert counts == [8] * 64
        assert 1 <= len(pool._idle) <= FilePool.keep
        first = pool.acquire()
        pool.release(first)
        assert pool.acquire() is first  # an idle connection is handed out again, not a new one
        pool.release(first)
    finally:
        database.close()
    assert pool._idle == []


# -- the SQLite catalog, read natively, is what SQLAlchemy's inspector read ---------------------------------

ZOO = [
    'CREATE TABLE "kinds" (a INT(10), b varchar(255), c VARCHAR (10), d NUMERIC(10,2), e decimal, f, g blob, '
    "h DOUBLE PRECISION, i unsigned big int, j text NOT NULL, k nchar(5), l CLOB(10), m boolean, n datetime, "
    "o date_char, p FLOAT(8), q weird type, r VARCHAR(10, 2), s NUMERIC(+7), t VARCHAR(0), u BLOBBY, "
    "x DECIMAL(-1, 0), y TEXT(007), "
    "v INTEGER GENERATED ALWAYS AS (a + 1) VIRTUAL, w TEXT AS (b || 'x') STORED)",
    "CREATE TABLE parent (x INTEGER, y TEXT, z TEXT, PRIMARY KEY (y, x))",
    "CREATE TABLE child (id INTEGER PRIMARY KEY AUTOINCREMENT, px INTEGER REFERENCES parent (x), "
    "py TEXT, pz TEXT REFERENCES parent, gone INTEGER REFERENCES missing, "
    "CONSTRAINT fk_pair FOREIGN KEY (py, px) REFERENCES parent (y, x), "
    "FOREIGN KEY (pz) REFERENCES parent (z), FOREIGN KEY (pz) REFERENCES parent (z))",
    'CREATE TABLE "Order Details" ("Order ID" INTEGER PRIMARY KEY, "Parent X" INTEGER, '
    'FOREIGN KEY ("Parent X") REFERENCES "parent" ("x")) WITHOUT ROWID',
    "CREATE VIRTUAL TABLE docs USING fts5(title, body)",
    "CREATE VIEW v_child AS SELECT c.id, p.y FROM child c JOIN parent p ON p.x = c.px",
]


def inspected(path: Path) -> dict[str, Any]:
    """The catalog as SQLAlchemy's inspector reads it (the reader Sophrosyne used before)."""
    import sqlalchemy as sa
    from sqlalchemy.engine.reflection import ObjectKind

    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unknown types and unparsed keys are reported as warnings
            inspector = sa.inspect(engine)
            kinds = {name: "table" for name in inspector.get_table_names()}
            kinds.update({name: "view" for name in inspector.get_view_names()})
            columns = inspector.get_multi_columns(kind=ObjectKind.ANY)
            pks = inspector.get_multi_pk_constraint()
            fks = inspector.get_multi_foreign_keys()
            tables = {}
            for (_, name), cols in columns.items():
                if name not in kinds or name.startswith("sqlite_"):
                    continue
                pk = list(dict(pks.get((None, name)) or {}).get("constrained_columns") or [])
                tables[name] = {
                    "kind": kinds[name],
                    "primary_key": pk,
                    "columns": [(c["name"], _type(c["type"]), bool(c["nullable"]), c["name"] in pk) for c in cols],
                    "foreign_keys": [
                        (fk["constrained_columns"], fk["referred_table"], fk["referred_columns"])
                        for fk in fks.get((None, name), [])
                        if fk.get("referred_table")
                    ],
                }
            return dict(sorted(tables.items()))
    finally:
        engine.dispose()


def _type(sa_type: Any) -> str:
    try:
        return str(sa_type)
    except Exception:
        return type(sa_type).__name__.upper()


def summary(catalog: Catalog) -> dict[str, Any]:
    return {
        name: {
            "kind": t.kind,
            "primary_key": t.primary_key,
            "columns": [(c.name, c.type, c.nullable, c.primary_key) for c in t.columns],
            "foreign_keys": [(fk.columns, fk.ref_table, fk.ref_columns) for fk in t.foreign_keys],
        }
        for name, t in catalog.tables.items()
    }


def test_sqlite_catalog_is_what_the_inspector_read(tmp_path: Path) -> None:
    path = tmp_path / "zoo.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        for statement in ZOO:
            conn.execute(statement)
        conn.execute("INSERT INTO child (px) VALUES (1)")  # fills sqlite_sequence
        conn.commit()
    database = open_database(path)
    try:
        catalog = database.catalog()
    finally:
        database.close()
    assert summary(catalog) == inspected(path)
    assert catalog.tables["docs"].column_names == ["title", "body"]  # hidden FTS columns left out
    assert "sqlite_sequence" not in catalog.tables


def test_hr_catalog_is_what_the_inspector_read(tmp_path: Path) -> None:
    path = build_sqlite(tmp_path / "hr.sqlite")
    database = open_database(path)
    try:
        assert summary(database.catalog()) == inspected(path)
    finally:
        database.close()
