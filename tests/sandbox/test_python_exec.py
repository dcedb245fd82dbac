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
from typing import Any

import pytest

from sophrosyne.environment import Environment
from sophrosyne.errors import ProgramFailed, QueryFailed
from sophrosyne.sandbox.executor import PythonExecutor
from sophrosyne.sandbox.rows import Rows, environment_rows
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
    code = (
        "import socket\n"
        "result = []\n"
        f"for attempt in (lambda: socket.create_connection(('127.0.0.1', {port}), timeout=1),\n"
        "                lambda: socket.socket(socket.AF_UNIX)):\n"
        "    try:\n"
        "        attempt()\n"
        "        result.append('opened')\n"
        "    except OSError as exc:\n"
        "        result.append(exc.strerror)\n"
    )
    assert run(code) == [["Operation not permitted"], ["Operation not permitted"]]
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing arrived


def test_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    open_to_all = tmp_path / "shared"
    open_to_all.mkdir(mode=0o777)
    os.chmod(tmp_path, 0o777)
    target = open_to_all / "escaped.txt"
    code = (
        "result = []\n"
        f"for path in ({str(target)!r}, '/tmp/escaped-from-sandbox.txt', 'notes.txt'):\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        result.append('written')\n"
        "    except OSError as exc:\n"
        "        result.append(exc.strerror)\n"
    )
    # Outside: refused (even where the permission bits would allow it); its own folder: written.
    assert run(code) == [["Permission denied"], ["Permission denied"], ["written"]]
    assert not target.exists() and not Path("/tmp/escaped-from-sandbox.txt").exists()


def test_cannot_read_the_database_file_directly(tmp_path: Path) -> None:
    path = tmp_path / "secret.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE salaries (employee TEXT, amount REAL)")
        db.executemany("INSERT INTO salaries VALUES (?, ?)", [("ana", 100.0), ("bo", 250.0)])
    db.close()
    os.chmod(path, 0o644)
    code = (
        "import sqlite3\n"
        "result = []\n"
        f"for attempt in (lambda: open({str(path)!r}, 'rb').read(),\n"
        f"                lambda: sqlite3.connect({str(path)!r}).execute('SELECT * FROM salaries').fetchall()):\n"
        "    try:\n"
        "        attempt()\n"
        "        result.append('read')\n"
        "    except (OSError, sqlite3.Error) as exc:\n"
        "        result.append(str(exc).split(':')[0])\n"
    )
    assert run(code) == [["[Errno 13] Permission denied"], ["unable to open database file"]]
    # Through sql(), the parent runs each query down the secured path: reads come back as a DataFrame,
    # writes are refused by the guard.
    env = Environment.open(path)
    code = (
        "try:\n"
        "    sql('DROP TABLE salaries')\n"
        "except RuntimeError as exc:\n"
        "    refused = str(exc)\n"
        "df = sql('SELECT employee, amount FROM salaries')\n"
        "result = [[df.amount.sum(), refused]]\n"
    )
    program = PythonExecutor().run(code, lambda query: environment_rows(env, query))
    assert program.rows[0][0] == 350.0
    assert "`DROP` is not allowed" in str(program.rows[0][1])
    assert program.sql_calls == ["DROP TABLE salaries", "SELECT employee, amount FROM salaries"]
    env.db.close()


def test_cannot_exceed_its_memory_limit() -> None:
    code = "small = bytearray(100 * 1024 * 1024)\nprint('100 MB is fine')\nlarge = bytearray(1024 * 1024 * 1024)"
    with pytest.raises(ProgramFailed, match="memory limit") as error:
        run(code, python_memory_mb=512)
    assert error.value.kind == "memory"
    assert error.value.output == "100 MB is fine\n"


def _alive_in_group(group: int) -> list[str]:
    """The processes of one process group, zombies aside (other tests' sandboxes run beside this one)."""
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z" and int(fields[2]) == group:
                    alive.append(entry.name)
        except (OSError, IndexError, ValueError):
            continue
    return alive


def test_cannot_outlive_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
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
    started_children: list[int] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        process = real_popen(*args, **kwargs)
        started_children.append(process.pid)
        return process

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    started = time.monotonic()
    with pytest.raises(ProgramFailed, match="time limit") as error:
        run(code, python_wall_s=1.0, python_cpu_s=30)
    assert error.value.kind == "timeout"
    assert time.monotonic() - started < 3
    [group] = started_children  # the sandbox leads its own group: every process it started is in it
    assert _alive_in_group(group) == []


def test_cpu_limit_stops_a_busy_program() -> None:
    with pytest.raises(ProgramFailed, match="CPU seconds") as error:
        run("while True:\n    pass", python_wall_s=20, python_cpu_s=1)
    assert error.value.kind == "cpu"


def test_a_program_error_comes_back_with_its_line() -> None:
    with pytest.raises(ProgramFailed, match="line 2") as error:
        run("x = 1\nresult = x / 0")
    assert "ZeroDivisionError" in str(error.value)


def test_sql_errors_reach_the_program_as_exceptions() -> None:
    def failing(query: str) -> Rows:
        raise QueryFailed("no such table: nope", hint="Call list_tables.")

    code = "try:\n    sql('SELECT * FROM nope')\nexcept RuntimeError as exc:\n    result = str(exc)"
    rows = PythonExecutor().run(code, failing).rows
    assert rows == [["sql() failed: no such table: nope Hint: Call list_tables."]]


def test_a_layer_that_cannot_be_set_up_means_no_python() -> None:
    # A parent that may not create namespaces (here: a seccomp filter refusing unshare) gets a clear refusal.
    script = (
        "from sophrosyne.sandbox import isolation\n"
        "from sophrosyne.sandbox.executor import PythonExecutor\n"
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


def test_results_become_tables() -> None:
    import pandas as pd

    from sophrosyne.sandbox.child import to_table

    frame = pd.DataFrame({"day": pd.to_datetime(["2025-11-01"]), "n": [pd.NA]}, dtype=object)
    assert to_table(frame, pd) == (["day", "n"], [["2025-11-01", None]])
    assert to_table(pd.Series([3, 4], index=["a", "b"], name="n"), pd) == (["index", "n"], [["a", 3], ["b", 4]])
    assert to_table([(1, "x")], pd) == (["column_1", "column_2"], [[1, "x"]])
    assert to_table(7, pd) == (["result"], [[7]])
    with pytest.raises(ValueError, match="assign the answer"):
        to_table(None, pd)
