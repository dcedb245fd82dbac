"""The Python sandbox: each isolation promise has a test that a program breaking it fails, beside one that works."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sophrosyne.agent.python_exec import PythonExecutor
from sophrosyne.agent.tools import Rows, environment_rows
from sophrosyne.environment import Environment
from sophrosyne.errors import ProgramFailed, QueryFailed
from sophrosyne.settings import Settings

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


def no_sql(query: str) -> Rows:
    raise AssertionError(f"unexpected sql({query!r})")


def run(code: str, **settings: float) -> list[list[object]]:
    return PythonExecutor(Settings(**settings)).run(code, no_sql).rows


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.3)
    yield server
    server.close()


def test_cannot_open_a_socket(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\nresult = 'connected'"
    with pytest.raises(ProgramFailed, match="PermissionError: \\[Errno 1\\] Operation not permitted"):
        run(code)
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing arrived
    with pytest.raises(ProgramFailed, match="Operation not permitted"):
        run("import socket\nsocket.socket(socket.AF_UNIX)\nresult = 1")


def test_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    open_to_all = tmp_path / "shared"
    open_to_all.mkdir(mode=0o777)
    os.chmod(tmp_path, 0o777)
    target = open_to_all / "escaped.txt"
    with pytest.raises(ProgramFailed, match="PermissionError"):
        run(f"open({str(target)!r}, 'w').write('x')\nresult = 1")
    with pytest.raises(ProgramFailed, match="PermissionError"):
        run("open('/tmp/escaped-from-sandbox.txt', 'w').write('x')\nresult = 1")
    assert not target.exists() and not Path("/tmp/escaped-from-sandbox.txt").exists()
    # Its own folder is writable.
    assert run("open('notes.txt', 'w').write('kept')\nresult = open('notes.txt').read()") == [["kept"]]


def test_cannot_read_the_database_file_directly(tmp_path: Path) -> None:
    path = tmp_path / "secret.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE salaries (employee TEXT, amount REAL)")
        db.executemany("INSERT INTO salaries VALUES (?, ?)", [("ana", 100.0), ("bo", 250.0)])
    db.close()
    os.chmod(path, 0o644)
    with pytest.raises(ProgramFailed, match="PermissionError"):
        run(f"result = len(open({str(path)!r}, 'rb').read())")
    with pytest.raises(ProgramFailed, match="unable to open database file"):
        run(f"import sqlite3\nresult = sqlite3.connect({str(path)!r}).execute('SELECT 1').fetchall()")
    # Through sql(), the parent runs the query down the secured path and the program gets a DataFrame.
    env = Environment.open(path)
    code = "df = sql('SELECT employee, amount FROM salaries')\nresult = df.amount.sum()"
    program = PythonExecutor().run(code, lambda query: environment_rows(env, query))
    assert program.rows == [[350.0]]
    assert program.sql_calls == ["SELECT employee, amount FROM salaries"]
    env.db.close()


def test_writes_through_sql_are_refused_by_the_guard(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x INTEGER)").connection.close()
    env = Environment.open(path)
    code = "try:\n    sql('DROP TABLE t')\nexcept RuntimeError as exc:\n    result = str(exc)"
    rows = PythonExecutor().run(code, lambda query: environment_rows(env, query)).rows
    assert "is not allowed" in str(rows[0][0])
    env.db.close()


def test_cannot_exceed_its_memory_limit() -> None:
    assert run("block = bytearray(100 * 1024 * 1024)\nresult = len(block)", python_memory_mb=512) == [[104857600]]
    with pytest.raises(ProgramFailed, match="memory limit") as error:
        run("block = bytearray(1024 * 1024 * 1024)\nresult = 1", python_memory_mb=512)
    assert error.value.kind == "memory"


def _sandboxes_alive() -> list[str]:
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"sophrosyne.agent.sandbox" in (entry / "cmdline").read_bytes():
                alive.append(entry.name)
        except OSError:
            continue
    return alive


def test_cannot_outlive_its_time_limit() -> None:
    # It tries to leave its process group and to start a process that would survive it; both are refused,
    # and the busy loop is stopped at the wall-time limit with everything it started.
    code = (
        "import os, threading, time\n"
        "for attempt in (os.setsid, os.fork):\n"
        "    try:\n"
        "        attempt()\n"
        "    except PermissionError:\n"
        "        print('refused', attempt.__name__)\n"
        "threading.Thread(target=time.sleep, args=(60,)).start()\n"
        "while True:\n"
        "    pass\n"
    )
    started = time.monotonic()
    with pytest.raises(ProgramFailed, match="time limit") as error:
        run(code, python_wall_s=1.5, python_cpu_s=30)
    assert error.value.kind == "timeout"
    assert time.monotonic() - started < 4
    assert _sandboxes_alive() == []


def test_cpu_limit_stops_a_busy_program() -> None:
    with pytest.raises(ProgramFailed, match="CPU seconds") as error:
        run("while True:\n    pass", python_wall_s=20, python_cpu_s=1)
    assert error.value.kind == "cpu"


def test_a_program_error_comes_back_with_its_line() -> None:
    with pytest.raises(ProgramFailed, match="line 2") as error:
        run("x = 1\nresult = x / 0")
    assert "ZeroDivisionError" in str(error.value)
    with pytest.raises(ProgramFailed, match="assign the answer"):
        run("x = 1")


def test_sql_errors_reach_the_program_as_exceptions() -> None:
    def failing(query: str) -> Rows:
        raise QueryFailed("no such table: nope", hint="Call list_tables.")

    code = "try:\n    sql('SELECT * FROM nope')\nexcept RuntimeError as exc:\n    result = str(exc)"
    rows = PythonExecutor().run(code, failing).rows
    assert rows == [["sql() failed: no such table: nope Hint: Call list_tables."]]


def test_a_layer_that_cannot_be_set_up_means_no_python() -> None:
    # A parent that may not create namespaces (here: a seccomp filter refusing unshare) gets a clear refusal.
    script = (
        "from sophrosyne.agent import isolation\n"
        "from sophrosyne.agent.python_exec import PythonExecutor\n"
        "from sophrosyne.errors import SandboxUnavailable\n"
        "isolation.install_seccomp({272: 1}, threads_only=False)\n"
        "try:\n"
        "    PythonExecutor().run('result = 1', lambda q: None)\n"
        "except SandboxUnavailable as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60).stdout
    assert "Python is disabled: the sandbox cannot be set up here (namespaces" in out
    assert "Operation not permitted" in out
