"""A database closed while a connection is out (a background reading, a statement in flight) leaves none open:
the connection is shut as it comes back, whichever way it was taken. SQLAlchemy put such a connection back into
its disposed pool, open, and psycopg warned when the garbage collector found it, tests later (CI, stop 31)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from fixtures.engines import engine_params
from sophrosyne.database import open_database

SERVERS = [p for p in engine_params() if not isinstance(p, str)]  # the server engines, marked `engine`
FILES = [p for p in engine_params() if isinstance(p, str)]


def is_open(dbapi_connection: Any) -> bool:
    """Whether the DB-API connection still answers (closed ones raise, each driver its own error)."""
    try:
        cursor = dbapi_connection.cursor()
        cursor.execute("SELECT 1")
        cursor.fetchall()
        return True
    except Exception:
        return False


@pytest.mark.parametrize("engine", SERVERS, indirect=True)
def test_a_connection_handed_back_while_the_database_closes_is_shut(target: str) -> None:
    from sqlalchemy import event

    db = open_database(target)
    returning, seen = threading.Event(), []

    def slow_return(dbapi_connection: Any, record: Any) -> None:
        # The statement's connection is on its way back to the pool when the database closes.
        if threading.current_thread().name == "statement" and dbapi_connection is not None:
            seen.append(dbapi_connection)
            returning.set()
            time.sleep(0.3)

    event.listen(db.pool.engine, "checkin", slow_return)
    statement = threading.Thread(target=db.run, args=("SELECT 1",), name="statement")
    statement.start()
    assert returning.wait(10)
    db.close()
    statement.join(10)
    assert seen and not is_open(seen[0]), "the connection went back, open, into the pool that was disposed of"


@pytest.mark.parametrize("engine", SERVERS, indirect=True)
def test_the_engine_s_own_connections_are_shut_once_the_database_is_closed(target: str) -> None:
    db = open_database(target)
    engine = db.pool.engine
    # As the catalog's inspector takes them: from the engine, not through the database's sessions.
    with engine.connect() as out:
        taken = out.connection.dbapi_connection
        db.close()
    with engine.connect() as late:  # a background reading that outlived its database
        after = late.connection.dbapi_connection
    assert not is_open(taken) and not is_open(after)


@pytest.mark.parametrize("engine", FILES, indirect=True)
def test_a_file_connection_handed_back_after_close_is_shut(target: str) -> None:
    db = open_database(target)
    raw = db.pool.acquire()
    db.pool.close()
    db.pool.release(raw)
    assert not is_open(raw)
    assert not db.pool._idle
