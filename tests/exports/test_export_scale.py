"""The export benchmark (benchmarks/exports.py): its comparison at 2,000 rows on SQLite and DuckDB in the default
suite (in process), and the whole benchmark at 1,000,000 rows on every engine when run on purpose (-m slow):
files equal to the engine's own export (and to a reduced copy's for a restricted role), RSS growth under
100 MB, the answer under 600 tokens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sophrosyne.environment import Environment
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import Role, TableRule

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import exports as bench  # noqa: E402  # the benchmark's own functions, from its folder


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_small_exports_equal_the_engines_own(engine: str, tmp_path: Path) -> None:
    full, reduced = bench.build(engine, tmp_path, 2000, False), bench.build(engine, tmp_path, 2000, True)
    settings = Settings(export_dir=tmp_path / "exports", directives="none")
    role = Role("analyst", tables={"big": TableRule(row_filter=bench.FILTER, hidden=[bench.HIDDEN])})
    for restricted, want in ((None, bench.engine_export(engine, full, tmp_path)), (role, None)):
        expected = want if want is not None else bench.engine_export(engine, reduced, tmp_path)
        with Environment.open(full, settings=settings, role=restricted) as env:
            for format in ("csv", "parquet"):
                output = env.export_sql(bench.SQL, format=format)  # type: ignore[arg-type]
                assert output.path is not None
                assert bench.same(bench.file_rows(output.path), expected), (engine, format, restricted)
                assert len(expected) - 1 == output.rows == (1000 if restricted else 2000)


@pytest.mark.slow
@pytest.mark.engine
def test_a_million_rows_on_every_engine() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/exports.py", "--rows", "1000000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=3600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"all_equal": true' in done.stdout and '"exports": 16' in done.stdout
