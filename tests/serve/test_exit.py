"""A stdio server goes when its client goes: at once when stdin closes, and when the client is killed outright
while something else holds stdin open; the processes it started (DuckDB's) go with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

from fixtures.engines import build_duckdb
from fixtures.serving import children_of

# The promise (issue 35) is 0.5 s: measured p50 0.07 s, max 0.26 s at load 12; max 0.54 s with four servers
# starting beside it at load 15. Of that, 5-50 ms go from end-of-file to the exit call, the rest to the kernel's
# tear-down of a 200 MB process, which waits for a core: 2 of 67 repetitions beside two CPU burners at load 22
# took over 0.5 s. The test allows twice the promise for the suite's own load.
EXIT_BOUND_S = 1.0
# A killed parent is seen at the next look (every 0.5 s): p50 0.43 s, max 0.64 s over 40 runs at load 12.
PARENT_BOUND_S = 2.0
# DuckDB's processes end as their connections close, a child at its watching thread's next wake (1 s).
CHILDREN_BOUND_S = 3.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def send(wire: IO[bytes], message: dict[str, object]) -> None:
    wire.write((json.dumps(message) + "\n").encode())
    wire.flush()


def test_the_server_exits_at_once_when_its_client_closes_stdin() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "sophrosyne", "serve", "demo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        send(server.stdin, INITIALIZE)
        assert json.loads(server.stdout.readline())["id"] == 1
        send(server.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        # A tool call answered: the SDK runs and the schema and indexes are loaded (what makes a slow exit).
        send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_tables"}})
        while json.loads(server.stdout.readline()).get("id") != 2:
            pass
        closed = time.monotonic()
        server.stdin.close()
        assert server.wait(30) == 0
        assert time.monotonic() - closed < EXIT_BOUND_S
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def test_the_server_exits_when_its_client_is_killed_and_stdin_stays_open() -> None:
    read, write = os.pipe()  # this test holds the write end: stdin never closes
    answers, answered = os.pipe()
    # The client: a process that starts the server on these pipes, says its pid, and waits.
    script = (
        "import subprocess, sys; server = subprocess.Popen([sys.executable, '-m', 'sophrosyne', 'serve', 'demo'], "
        f"stdin={read}, stdout={answered}, stderr=subprocess.DEVNULL); print(server.pid, flush=True); server.wait()"
    )
    client = subprocess.Popen(
        [sys.executable, "-c", script], pass_fds=(read, answered), stdout=subprocess.PIPE, text=True
    )
    assert client.stdout is not None
    pid = int(client.stdout.readline())
    os.close(answered)
    try:
        os.write(write, (json.dumps(INITIALIZE) + "\n").encode())
        with os.fdopen(os.dup(answers), "rb") as wire:
            assert json.loads(wire.readline())["id"] == 1  # the server runs, and watches its parent
        client.send_signal(signal.SIGKILL)
        client.wait()
        killed = time.monotonic()
        while _alive(pid) and time.monotonic() - killed < 30:
            time.sleep(0.05)
        assert not _alive(pid)
        assert time.monotonic() - killed < PARENT_BOUND_S
    finally:
        client.stdout.close()
        for fd in (read, write, answers):
            os.close(fd)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_the_processes_a_server_started_end_with_it(tmp_path: Path) -> None:
    """DuckDB's zygote and a child running a long statement are gone soon after stdin closes."""
    db = build_duckdb(tmp_path / "hr.duckdb")
    server = subprocess.Popen(
        [sys.executable, "-m", "sophrosyne", "serve", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "SOPHROSYNE_DIRECTIVES": "none", "SOPHROSYNE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        send(server.stdin, INITIALIZE)
        assert json.loads(server.stdout.readline())["id"] == 1
        send(server.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        long = "SELECT SUM(a.range * b.range) AS s FROM range(200000) a, range(200000) b"
        call = {"name": "execute_sql", "arguments": {"sql": long}}
        send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        started = time.monotonic()
        while len(tree := _tree(server.pid)) < 3:  # the server, the zygote, the child that runs the statement
            assert time.monotonic() - started < 30, f"DuckDB's processes never started: {tree}"
            time.sleep(0.05)
        closed = time.monotonic()
        server.stdin.close()
        assert server.wait(30) == 0
        assert time.monotonic() - closed < EXIT_BOUND_S  # a call in flight is given up, not waited for
        while any(_alive(pid) for pid in tree) and time.monotonic() - closed < 30:
            time.sleep(0.05)
        assert [pid for pid in tree if _alive(pid)] == []
        assert time.monotonic() - closed < CHILDREN_BOUND_S
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def _tree(pid: int) -> list[int]:
    """The process and all it started, and they started."""
    found = [pid]
    for child in children_of(pid):
        found += _tree(child)
    return found


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, reaped by init any moment, does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
