"""`serve --http --workers 2`: both forked workers answer, a killed worker is replaced, another server cannot take
the port, SIGTERM drains a call in flight and ends every process of the server within a bound, and the audit
log has one record per call (none from the parent that loaded the workers)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures.engines import build_sqlite
from fixtures.serving import ROOT, call_tool, free_port, health
from sophrosyne.audit import read_records

# About three seconds of work for SQLite: in flight when SIGTERM comes.
THREE_SECONDS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT COUNT(*) FROM c"
)
# Connections held open at once: the kernel spreads them over the workers' sockets by their ports, so all of them
# landing on one worker of two has odds of 2 in 2**24.
CONNECTIONS = 24


def children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def server_side_owner(server_port: int, client_port: int, pids: set[int]) -> int | None:
    """The worker holding the server's end of the connection from `client_port` (by the socket's inode)."""
    wanted = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
        if int(local, 16) == server_port and int(remote, 16) == client_port:
            wanted = f"socket:[{fields[9]}]"
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                    return pid
            except OSError:
                continue
    return None


def ready(process: subprocess.Popen[bytes], port: int, workers: int) -> set[int]:
    """Once /health answers and `workers` workers run: their pids."""
    deadline = time.monotonic() + 90
    while True:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        try:
            if health(port)["sources"] and len(children(process.pid)) == workers:
                return children(process.pid)
        except OSError:
            pass
        assert time.monotonic() < deadline, "the server did not answer /health with its workers within 90 s"
        time.sleep(0.1)


def post(port: int, sql: str, ident: int) -> str:
    return call_tool(port, "execute_sql", {"sql": sql}, ident)


@pytest.mark.slow
def test_two_forked_workers_answer_are_replaced_and_end_on_sigterm(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "hr.sqlite")
    port = free_port()
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "sophrosyne", "serve", str(db), "--http", "--port", str(port), "--workers", "2"]
    audit = tmp_path / "audit.jsonl"
    env = {**os.environ, "SOPHROSYNE_CACHE_DIR": str(tmp_path / "cache"), "SOPHROSYNE_DIRECTIVES": "directives"}
    env["SOPHROSYNE_AUDIT_LOG"] = str(audit)
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    every: set[int] = set()
    try:
        workers = ready(process, port, 2)
        every |= workers

        # Both workers answer: connections held at once reach both, and each is answered.
        held = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(CONNECTIONS)]
        owners = set()
        for connection in held:
            connection.request("GET", "/health")
            response = connection.getresponse()
            assert response.status == 200 and json.loads(response.read())["status"] == "ok"
            owners.add(server_side_owner(port, connection.sock.getsockname()[1], workers))
        for connection in held:
            connection.close()
        assert owners == workers, f"connections reached {owners}, the workers are {workers}"
        for ident in range(1, 8):
            assert '"isError":true' not in post(port, "SELECT COUNT(*) AS n FROM departments", ident)

        # Another server cannot join the port (a SO_REUSEPORT bind would have): it is told the port is busy.
        second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode != 0 and f"port {port} on 127.0.0.1 is in use" in second.stderr, second.stderr

        # A killed worker is replaced, and the new one answers.
        killed = min(workers)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while (replaced := children(process.pid)) == workers or len(replaced) != 2:
            assert time.monotonic() < deadline, f"no new worker after {killed} was killed: {replaced}"
            time.sleep(0.05)
        assert killed not in replaced
        every |= replaced
        for ident in range(8, 20):  # fresh connections: some reach the new worker's socket
            assert '"isError":true' not in post(port, "SELECT COUNT(*) AS n FROM departments", ident)
        assert f"worker {killed} ended (signal SIGKILL)" in log.read_text()

        # SIGTERM: the call in flight is answered whole, then every process of the server ends.
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(post, port, THREE_SECONDS, 99)
            time.sleep(1.0)
            assert pending.running()
            process.send_signal(signal.SIGTERM)
            body = pending.result(timeout=30)
            answered = time.monotonic()
        assert '"id":99' in body and "3000000" in body and '"isError":true' not in body, body
        assert process.wait(timeout=20) == 0
        took = time.monotonic() - answered
        assert took < 3.0, f"the server took {took:.1f} s to end after its last answer"
        left = [pid for pid in every if alive(pid)]
        assert not left, f"processes left: {left}"
        records = list(read_records(audit))
        assert None not in records and [r.tool for r in records if r] == ["execute_sql"] * 20  # 7 + 12 + 1 calls
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in every:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
