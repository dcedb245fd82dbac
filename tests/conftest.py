"""Shared fixtures: the HR test schema on four engines, and an Environment over each."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

# Each xdist worker imports every test module: where PYTHONDONTWRITEBYTECODE is set (this machine's environment
# sets it) pytest rewrote every module's asserts again in each worker, and Python compiled the sources again in
# each worker and server process. Kept from one run to the next instead: collecting on three workers took 18.9
# CPU-s, then 11.3. (__pycache__ is ignored by git and by the build.) Set before the sources are imported.
sys.dont_write_bytecode = False

from fixtures.engines import built, engine_params  # noqa: E402
from sophrosyne.environment import Environment  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def index_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Offline indexes go to a temporary folder, for this process and the servers it spawns; PostgreSQL
    schemas other than a test's own (other tests', on a shared server) are not read unless a test asks."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOPHROSYNE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        patch.setenv("SOPHROSYNE_SCHEMAS", "search_path")
        yield


@pytest.fixture(scope="module", params=engine_params())
def engine(request: pytest.FixtureRequest) -> str:
    """The engine name: sqlite, duckdb, postgres or mariadb."""
    return str(request.param)


@pytest.fixture(scope="module")
def target(engine: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The HR test schema built on `engine`, dropped afterwards: a file path or a URL."""
    module = request.module.__name__.rsplit(".", 1)[-1].replace("test_", "")
    with built(engine, tmp_path_factory.mktemp(f"{engine}_{module}"), f"soph_{module}") as where:
        yield where


@pytest.fixture(scope="module")
def env(target: str) -> Iterator[Environment]:
    """An Environment over the HR test schema, one per engine and module."""
    environment = Environment.open(target)
    yield environment
    environment.db.close()
