"""A real Spark Thrift server that stops answering (marker `spark`; scripts/spark_ci.sh starts the server): its
process is paused with SIGSTOP (the kernel still accepts connections on its port, nothing answers) and resumed
with SIGCONT after. A connect fails within connect_timeout_s with the host, the port and what to check; a
statement on an open connection ends within timeout_s and the grace of each call when the server stops midway,
and within the connect timeouts when it stopped before; the server answers next."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fixtures.engines import unreachable
from fixtures.spark import HOST, PORT
from sophrosyne.database import Database, open_database
from sophrosyne.engines.spark_dialect import ANSWER_GRACE_S
from sophrosyne.errors import ConnectionFailed, QueryFailed, SophrosyneError
from sophrosyne.settings import Settings

pytestmark = pytest.mark.spark

URL = f"spark://sophrosyne-tests@{HOST}:{PORT}/default"
CONNECT_S = 5.0
STATEMENT_S = 3.0
# A statement that runs for 20 s and then ends, however it is left: a query over a huge range left behind by a
# connection that died kept both of the server's cores busy after it was resumed.
SLEEPING = "SELECT reflect('java.lang.Thread', 'sleep', CAST(20000 AS BIGINT))"
SLACK_S = 6.0  # a loaded machine's scheduling and Python's own work, on top of each bound


def listener_pid(port: int) -> int | None:
    """The process holding the listening TCP socket of `port` on this machine (from /proc), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in inodes:
                return int(fd.parts[2])
        except OSError:
            continue
    return None


@pytest.fixture(scope="module")
def server_pid() -> int:
    if HOST not in ("127.0.0.1", "localhost"):
        pytest.skip(f"the Spark server at {HOST} is not on this machine: it cannot be paused")
    pid = listener_pid(PORT)
    if pid is None:
        unreachable("Spark Thrift", f"no process of this machine listens on port {PORT}")
    assert pid is not None
    return pid


@contextmanager
def paused(pid: int) -> Iterator[None]:
    """The server's process stopped until the block ends, then resumed whatever happened."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_connect_to_a_paused_server_fails_within_the_connect_timeout(server_pid: int) -> None:
    open_database(URL, probe=False).close()  # the driver imported first: its import is not the wait measured
    with paused(server_pid):
        started = time.monotonic()
        with pytest.raises(ConnectionFailed) as caught:
            open_database(URL, Settings(connect_timeout_s=CONNECT_S))
        elapsed = time.monotonic() - started
    assert elapsed < CONNECT_S + SLACK_S, elapsed
    message, hint = caught.value.message, caught.value.hint or ""
    assert f"no answer from {HOST}:{PORT} within {CONNECT_S:g} s" in message, message
    assert f"Check that the server runs and answers at {HOST}:{PORT}" in hint, hint


@pytest.fixture
def db() -> Iterator[Database]:
    """A database on the server, opened once the server answers (it may have just started, or resumed)."""
    database = open_database(URL, Settings(connect_timeout_s=CONNECT_S, timeout_s=60), probe=False)
    try:
        answer(database)
        yield database
    finally:
        database.close()


def answer(db: Database) -> None:
    """Wait until the server answers a statement; a minute at most."""
    deadline = time.monotonic() + 60
    while True:
        try:
            assert db.run("SELECT 41 + 1", limit=1, timeout_s=60).rows == [(42,)]
            return
        except SophrosyneError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_a_statement_whose_server_stops_answering_midway_ends_within_its_timeout(server_pid: int, db: Database) -> None:
    pause = threading.Timer(1.0, os.kill, (server_pid, signal.SIGSTOP))  # once the statement runs
    started = time.monotonic()
    try:
        pause.start()
        with pytest.raises(SophrosyneError) as caught:
            db.run(SLEEPING, limit=1, timeout_s=STATEMENT_S)
        elapsed = time.monotonic() - started
    finally:
        pause.cancel()
        os.kill(server_pid, signal.SIGCONT)
    # Before, each Thrift call waited 60 s, and impyla sent a status poll three times.
    assert elapsed < STATEMENT_S + ANSWER_GRACE_S + SLACK_S, elapsed
    assert "gave no answer by the statement's deadline" in str(caught.value), caught.value
    assert "check that the Thrift server runs" in str(caught.value)
    answer(db)  # resumed, it answers the next statement, on a connection the pool opened for the dead one


def test_a_statement_on_a_connection_to_a_paused_server_fails_within_the_connect_timeouts(
    server_pid: int, db: Database
) -> None:
    with paused(server_pid):
        started = time.monotonic()
        with pytest.raises((ConnectionFailed, QueryFailed)) as caught:
            db.run("SELECT 40 + 2", limit=1, timeout_s=STATEMENT_S)
        elapsed = time.monotonic() - started
    # The pool's check of the open connection (as long as opening may take), then one opening of another. In two
    # of four CI runs (2026-12-08) the pool's check passed on the paused server and the statement's own deadline
    # ended the call instead, as bounded and (since a timed-out call marks its connection dead) as clearly said;
    # why the check passed is not known yet.
    assert elapsed < 2 * CONNECT_S + SLACK_S, elapsed
    message = caught.value.message
    if isinstance(caught.value, ConnectionFailed):
        assert f"no answer from {HOST}:{PORT} within {CONNECT_S:g} s" in message, caught.value
    else:
        assert "gave no answer by the statement's deadline" in message, caught.value
        assert "check that the Thrift server runs" in message, caught.value
    answer(db)
