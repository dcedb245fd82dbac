"""Running the server: --version, --log-level, /health, SIGTERM drains calls in flight, the database from the
environment, and a warning when serving beyond this machine without a policy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures.engines import build_sqlite
from fixtures.serving import ROOT, connected, free_port, health, http_server, stdio_params, stdio_server_of, text_of
from sophrosyne import __version__

# About a second of work for SQLite: long enough to be in flight when SIGTERM comes.
ONE_SECOND = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT COUNT(*) FROM c"
QUIET = {"SOPHROSYNE_DIRECTIVES": "none"}


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("ops") / "hr.sqlite")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sophrosyne", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"sophrosyne {__version__}"


def test_log_level_sends_logs_to_stderr(hr: Path) -> None:
    result = run("--log-level", "debug", "sql", str(hr), "SELECT 1")
    assert result.returncode == 0
    assert "DEBUG" in result.stderr and "DEBUG" not in result.stdout
    bad = run("--log-level", "loud", "sql", str(hr), "SELECT 1")
    assert bad.returncode == 2 and "--log-level must be one of" in bad.stderr


def test_the_database_may_come_from_the_environment(hr: Path) -> None:
    result = run("sql", "SELECT COUNT(*) AS n FROM departments", "--json", env={"SOPHROSYNE_DATABASE": str(hr)})
    assert result.returncode == 0 and '"rows": [\n    [\n      5' in result.stdout


def test_health_and_sigterm_draining_a_call_in_flight_over_http(hr: Path) -> None:
    # A plain POST, as the stateless server takes any request on its own: the SDK's client also keeps other
    # connections, whose closing at shutdown it reports as its own failure.
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "execute_sql", "arguments": {"sql": ONE_SECOND}},
        }
    ).encode()
    with http_server(str(hr), env=QUIET) as (process, port), ThreadPoolExecutor(1) as pool:
        status = health(port)
        assert status["status"] == "ok" and status["version"] == __version__
        assert set(status["sources"]) == {"hr"} and status["sources"]["hr"] in ("ready", "loading")
        assert status["calls_in_flight"] == 0
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp",
            data=call,
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        pending = pool.submit(lambda: urllib.request.urlopen(request, timeout=30).read().decode())
        deadline = time.monotonic() + 10
        while health(port)["calls_in_flight"] == 0:
            assert time.monotonic() < deadline, "the call never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        body = pending.result(timeout=20)
        assert '"id":7' in body and "1000000" in body and '"isError":true' not in body
        # uvicorn ends by the signal it was sent, once the calls are answered.
        assert process.wait(timeout=15) in (0, -signal.SIGTERM)


def test_sigterm_drains_a_call_in_flight_over_stdio(hr: Path) -> None:
    with connected(stdio_params(str(hr), env=QUIET)) as session:
        session.call("execute_sql", {"sql": "SELECT 1"})
        server = stdio_server_of(os.getpid())
        pending = session.start("execute_sql", {"sql": ONE_SECOND})
        time.sleep(0.3)
        os.kill(server, signal.SIGTERM)
        result = pending.result(timeout=20)
        assert not result.is_error and "1000000" in text_of(result)


def test_serving_http_beyond_loopback_without_a_policy_warns(hr: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sophrosyne",
            "serve",
            str(hr),
            "--http",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        cwd=ROOT,
        env={**os.environ, **QUIET},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    with process:
        try:
            assert process.stderr is not None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any("without a policy" in line for line in lines):
                lines.append(process.stderr.readline())
        finally:
            process.terminate()
            process.wait(timeout=15)
    assert any("without a policy" in line and "0.0.0.0" in line for line in lines), lines


def test_a_server_collects_cycles_less_often() -> None:
    """A server's start builds millions of long-lived objects: its collector runs every 50,000 allocations."""
    import gc

    from sophrosyne.serve.run import SERVER_GC_THRESHOLD, collect_less_often

    before = gc.get_threshold()
    try:
        collect_less_often()
        assert gc.get_threshold() == (SERVER_GC_THRESHOLD, *before[1:]) and before[0] < SERVER_GC_THRESHOLD
    finally:
        gc.set_threshold(*before)
