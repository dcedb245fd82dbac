"""A served DuckDB file is free for another process to write while the server is idle.

A DuckDB connection, even read-only, holds the file's lock: with connections kept for the next call, no
other process could open the file to write as long as the server ran. Idle connections now close after
DuckDB.idle_close_s; the next call opens one again.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from fixtures.engines import build_duckdb
from sophrosyne.environment import Environment

IDLE_S = 1.0  # DuckDB.idle_close_s

WRITE = """
import sys, duckdb
conn = duckdb.connect(sys.argv[1])
conn.execute("INSERT INTO notes VALUES (99, 'written while served', 'lock', NULL)")
conn.close()
"""


def write(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WRITE, str(path)], capture_output=True, text=True, timeout=60)


def test_the_idle_time_is_the_engines(tmp_path: Path) -> None:
    from sophrosyne.engines import DuckDB

    assert DuckDB.idle_close_s == IDLE_S


def test_another_process_writes_while_the_server_is_idle(tmp_path: Path) -> None:
    path = build_duckdb(tmp_path / "hr.duckdb")
    env = Environment.open(path)
    try:
        assert env.execute_sql("SELECT COUNT(*) FROM notes").rows == [[8]]
        env.describe_table("notes")
        time.sleep(IDLE_S + 0.5)  # idle: the server holds no connection
        written = write(path)
        assert written.returncode == 0, written.stderr[-1000:]
        # The server answers again afterwards, and reads what was written.
        assert env.execute_sql("SELECT COUNT(*) FROM notes").rows == [[9]]
        assert env.execute_sql("SELECT tag FROM notes WHERE note_id = 99").rows == [["lock"]]
    finally:
        env.db.close()


def test_connections_are_kept_between_calls_in_a_burst(tmp_path: Path) -> None:
    """The control: calls close together reuse one connection (opening one costs about 165 ms)."""
    env = Environment.open(build_duckdb(tmp_path / "hr.duckdb"))
    try:
        env.execute_sql("SELECT 1")
        opened = []
        original = env.db.pool.open  # type: ignore[attr-defined]

        def counting() -> object:
            opened.append(1)
            return original()

        env.db.pool.open = counting  # type: ignore[attr-defined]
        for _ in range(5):
            assert env.execute_sql("SELECT COUNT(*) FROM employees").rows == [[24]]
        assert opened == []
    finally:
        env.db.close()
