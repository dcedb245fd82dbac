"""The Environment's life: one secured path, and close() that leaves no connection or background work behind."""

from __future__ import annotations

import threading

import pytest

from sophrosyne.environment import Environment
from sophrosyne.errors import ConnectionFailed
from sophrosyne.settings import Settings
from sophrosyne.sql.secure import Secured, SecurePath


def test_the_tools_read_through_one_secure_path() -> None:
    env = Environment.open("demo")
    try:
        assert isinstance(env.secure, SecurePath)
        secured = env.secure.run("SELECT 1 AS one", limit=1)
        assert isinstance(secured, Secured)
        assert [list(row) for row in secured.result.rows] == [[1]]
        assert secured.executed == "SELECT 1 AS one"
    finally:
        env.close()


def test_close_closes_the_database_and_is_idempotent() -> None:
    env = Environment.open("demo")
    view = env.for_role(env.role)
    env.close()
    env.close()  # a second close does nothing
    with pytest.raises(ConnectionFailed, match="was closed"):
        view.execute_sql("SELECT 1")


def test_close_waits_for_the_indexes_built_in_the_background() -> None:
    before = set(threading.enumerate())
    with Environment.open("demo", settings=Settings(directives="directives")) as env:
        env.warm()
        started = [t for t in threading.enumerate() if t not in before and t.name == "sophrosyne-warm"]
    assert env.db.closed
    assert not any(t.is_alive() for t in started)
