"""Every connect to a server is bounded: a host that accepts the connection and never answers, a name that does
not resolve in time, fail within the connect timeout with the host, the port and what to check."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from fixtures.engines import MARIADB, unreachable
from sophrosyne.database import open_database
from sophrosyne.engines.servers import resolve
from sophrosyne.errors import ConnectionFailed
from sophrosyne.settings import Settings

# Short, so that the test is fast; PostgreSQL's libpq waits 2 s at least.
TIMEOUT_S = 1.0


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 whose listener accepts every connection and never sends or reads a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()
        for conn in held:
            conn.close()
        thread.join(2)


@pytest.mark.parametrize(
    ("scheme", "bound_s"),
    [("postgresql", 2.0), ("mysql", TIMEOUT_S), ("mariadb", TIMEOUT_S), ("spark", TIMEOUT_S)],
)
def test_a_server_that_accepts_and_never_answers_fails_within_the_connect_timeout(
    silent_port: int, scheme: str, bound_s: float
) -> None:
    if scheme == "spark":
        pytest.importorskip("impala")
    url = f"{scheme}://someone@127.0.0.1:{silent_port}/db"
    open_database(url, probe=False).close()  # the drivers imported first: their import is not the wait measured
    started = time.monotonic()
    with pytest.raises(ConnectionFailed) as caught:
        open_database(url, Settings(connect_timeout_s=TIMEOUT_S))
    elapsed = time.monotonic() - started
    # One attempt's wait and some slack; before, MySQL/MariaDB and Spark waited for ever.
    assert bound_s <= elapsed + 0.3 and elapsed < bound_s + 1.5, elapsed
    message, hint = caught.value.message, caught.value.hint or ""
    assert f"no answer from 127.0.0.1:{silent_port} within {TIMEOUT_S:g} s" in message
    assert f"Check that the server runs and answers at 127.0.0.1:{silent_port}" in hint
    assert "connect_timeout_s (now 1 s)" in hint


def test_the_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOPHROSYNE_CONNECT_TIMEOUT_S", "2.5")
    assert Settings.load().limits.connect_timeout_s == 2.5


def test_a_name_that_does_not_resolve_in_time_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow_lookup(*args: object, **kwargs: object) -> list[object]:
        release.wait(5)  # a resolver that never answers (released at the end, not to outlive the test)
        return []

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    started = time.monotonic()
    try:
        with pytest.raises(ConnectionFailed, match=r"the name db\.example\.org was not resolved within 0\.3 s"):
            resolve("db.example.org", 0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 1.0
    resolve("127.0.0.1", 0.3)  # addresses and Unix sockets are not looked up
    resolve("/var/run/postgresql", 0.3)


def test_a_name_that_does_not_resolve_fails_with_the_url_and_what_to_check() -> None:
    with pytest.raises(ConnectionFailed) as caught:
        open_database("mysql://root@no-such-host.invalid:3306/db", Settings(connect_timeout_s=TIMEOUT_S))
    assert caught.value.message.startswith("cannot connect to mysql+pymysql://root@no-such-host.invalid:3306/db")
    assert "the name no-such-host.invalid does not resolve" in caught.value.message


def test_an_open_mariadb_connection_waits_for_statements_not_for_the_connect_timeout() -> None:
    """The login's reads and writes are bounded by the connect timeout; once open, by the longest statement."""
    import pymysql

    try:
        pymysql.connect(**MARIADB, connect_timeout=3).close()
    except pymysql.MySQLError as exc:
        unreachable("MariaDB", str(exc))
    db = open_database("mysql://root@127.0.0.1:3306/mysql", Settings(connect_timeout_s=TIMEOUT_S, timeout_s=30))
    try:
        raw = db.pool.acquire()
        try:
            driver = raw.driver_connection
            assert driver.connect_timeout == TIMEOUT_S
            assert driver._read_timeout == driver._write_timeout == 120 + TIMEOUT_S  # the catalog's reading, 120 s
        finally:
            db.pool.release(raw)
    finally:
        db.close()
