"""benchmarks/plausible_db.py: tables named domain x entity x qualifier, 5-12 columns, the same for a seed."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "plausible_db.py"


@pytest.fixture(scope="module")
def plausible() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plausible_db", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["plausible_db"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _schema(path: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()


def test_tables_are_plausible_and_the_same_for_a_seed(plausible: ModuleType, tmp_path: Path) -> None:
    first = plausible.build_plausible(tmp_path / "a.sqlite", tables=40, seed=3)
    again = plausible.build_plausible(tmp_path / "b.sqlite", tables=40, seed=3)
    other = plausible.build_plausible(tmp_path / "c.sqlite", tables=40, seed=4)
    assert _schema(Path(first.path)) == _schema(Path(again.path)) != _schema(Path(other.path))
    with closing(sqlite3.connect(first.path)) as conn:
        for name, _ in _schema(Path(first.path)):
            domain, entity = name.split("_")[0], name.split("_", 1)[1]
            assert domain in plausible.DOMAINS
            assert any(entity == e or entity.startswith(f"{e}_") for e in plausible.ENTITIES)
            columns = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
            assert 5 <= len(columns) <= 12, (name, columns)
            assert 3 <= conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] < 30
    # Built once: the same parameters reuse the file, another file is never overwritten.
    assert plausible.build_plausible(tmp_path / "a.sqlite", tables=40, seed=3).reused
    foreign = tmp_path / "foreign.sqlite"
    with closing(sqlite3.connect(foreign)) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(SystemExit, match="not built by this script"):
        plausible.build_plausible(foreign, tables=40, seed=3)


def test_domains_narrow_the_names(plausible: ModuleType, tmp_path: Path) -> None:
    shape = plausible.build_plausible(tmp_path / "s.sqlite", tables=20, seed=11, domains=["sales", "billing"])
    assert {name.split("_")[0] for name, _ in _schema(Path(shape.path))} <= {"sales", "billing"}
