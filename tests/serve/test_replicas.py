"""Two replicas of `serve --http` behind a balancer (this test round-robins itself), sharing one cache folder and
one audit log: every call is answered by either, the index is built once, and the audit has one whole record
per call, records over 4 KB included."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures.engines import build_sqlite
from fixtures.serving import ROOT, call_tool, free_port, health
from sophrosyne.audit import read_records

CALLS = 120
# A statement whose audit record is over 4 KB (PIPE_BUF): a long comment the guard lets through.
LONG_SQL = "SELECT COUNT(*) AS n FROM employees -- " + "x" * 5000
MIX = [
    ("list_tables", {"question": "who took leave in March?"}),
    ("execute_sql", {"sql": "SELECT dept_name FROM departments ORDER BY dept_name"}),
    ("describe_table", {"table": "employees"}),
    ("execute_sql", {"sql": LONG_SQL}),
]


def replica(db: Path, cache: Path, audit: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = ["-m", "sophrosyne", "--log-level", "info", "serve", str(db), "--http", "--port", str(port)]
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, *command],
            cwd=ROOT,
            env={**os.environ, "SOPHROSYNE_CACHE_DIR": str(cache), "SOPHROSYNE_AUDIT_LOG": str(audit)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    return process, port


def ready(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 90
    while True:
        assert process.poll() is None, f"a replica exited with {process.returncode}"
        try:
            if health(port)["sources"]:
                return
        except OSError:
            assert time.monotonic() < deadline, "a replica did not answer /health within 90 s"
            time.sleep(0.1)


def call(port: int, number: int) -> str:
    name, arguments = MIX[number % len(MIX)]
    return call_tool(port, name, arguments, number, timeout=60)


@pytest.mark.slow
def test_two_replicas_share_a_cache_and_an_audit_log(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "hr.sqlite")
    cache, audit = tmp_path / "cache", tmp_path / "audit.jsonl"
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    replicas = [replica(db, cache, audit, log) for log in logs]
    try:
        for process, port in replicas:
            ready(process, port)
        ports = [port for _, port in replicas]
        with ThreadPoolExecutor(8) as pool:
            bodies = list(pool.map(lambda n: call(ports[n % 2], n), range(CALLS)))
        for number, body in enumerate(bodies):
            assert f'"id":{number}' in body and '"isError":true' not in body, body[:300]
    finally:
        for process, _ in replicas:
            process.terminate()
        for process, _ in replicas:
            process.wait(30)
    records = list(read_records(audit))
    assert None not in records  # no torn or interleaved line
    calls = [r for r in records if r is not None and r.tool in {name for name, _ in MIX}]
    assert len(calls) == CALLS
    assert sum(len(r.arguments.get("sql", "")) > 4096 for r in calls) == CALLS // len(MIX)
    built = sum(log.read_text().count("built the schema index") for log in logs)
    assert built == 1, [log.read_text()[-2000:] for log in logs]
