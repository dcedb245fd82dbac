"""A server's connection pool holds a connection for every worker thread and Python program at once: with
SQLAlchemy's default (5, and 10 more after a wait of up to 30 s) a flood of one client's slow calls took every
connection, and the calls the fair share let other clients run waited on the pool instead."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from fixtures.engines import built
from sophrosyne.database import open_database
from sophrosyne.engines.pools import BACKGROUND_CONNECTIONS
from sophrosyne.settings import Settings

pytestmark = pytest.mark.engine


@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_every_worker_thread_and_program_gets_a_connection_at_once(engine: str, tmp_path: Path) -> None:
    settings = Settings()
    limits = settings.limits
    at_once = limits.worker_threads + limits.python_programs
    assert at_once > 15  # SQLAlchemy's default pool and overflow: 5 + 10
    with built(engine, tmp_path, "pool") as url, closing(open_database(url, settings=settings)) as db:
        server = db.pool.server
        assert server is not None
        assert server.pool.size() == at_once  # type: ignore[attr-defined]
        held = []
        try:
            # Every call slot busy at once, and the background work's too. Nothing is handed back while they are
            # taken, so a pool too small would not make one wait but fail it (SQLAlchemy's TimeoutError after its
            # wait): holding them all proves there was room for each. (A bound on the time it took failed on a
            # machine at load 20, where 44 MariaDB connections took more than 10 s to open.)
            for _ in range(at_once + BACKGROUND_CONNECTIONS):
                held.append(db.pool.acquire())
            assert server.pool.checkedout() >= at_once  # type: ignore[attr-defined]
        finally:
            for raw in held:
                db.pool.release(raw)
