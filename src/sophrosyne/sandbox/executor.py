"""Python executor: runs a program in an isolated child process whose `sql()` goes through the secured path."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sophrosyne.errors import ProgramFailed, SandboxUnavailable, SophrosyneError
from sophrosyne.sandbox.child import BOOT
from sophrosyne.sandbox.rows import Rows
from sophrosyne.settings import Settings

SqlRunner = Callable[[str], Rows]


@dataclass(frozen=True)
class Exports:
    """A caller's exports a program may read: their folder, and by id each file's path, format and counts."""

    folder: Path
    files: dict[str, dict[str, Any]]


# Only what Python needs to start: no credentials, no database URLs, no model keys reach the child.
CHILD_ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
MESSAGE_LIMIT = 32 * 1024 * 1024  # one line from the child; more is a broken or hostile program
FILES_MB = 64


@dataclass
class ProgramResult:
    columns: list[str]
    rows: list[list[Any]]
    output: str
    sql_calls: list[str]
    ms: float


class PythonExecutor:
    """Runs one program per call in a fresh sandbox: new network, IPC, UTS and PID namespaces, no
    capabilities, CPU/memory/file rlimits, Landlock (read only the interpreter and its packages, write only
    its own temporary folder), a seccomp filter (no sockets, no new processes), and a wall-time kill of its
    process group. A layer that cannot be set up means the program does not run (SandboxUnavailable)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()

    def run(self, code: str, sql: SqlRunner, exports: Exports | None = None) -> ProgramResult:
        """Run `code`; its `sql(query)` calls `sql` here in the parent; its answer is its `result` variable.
        `exports`: the caller's exports its `export(id)` may read, and their folder (read-only to it)."""
        started = time.perf_counter()
        folder = tempfile.mkdtemp(prefix="sophrosyne-py-")
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        config = {
            "code": code,
            "folder": folder,
            "memory_mb": self.settings.sandbox.memory_mb,
            "cpu_s": self.settings.sandbox.cpu_s,
            "files_mb": FILES_MB,
            "output_chars": self.settings.sandbox.output_chars,
        }
        if exports is not None and exports.files:
            config["export_folder"] = str(exports.folder)
            config["exports"] = exports.files
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", BOOT, str(to_child_r), str(from_child_w), json.dumps(sys.path)],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=CHILD_ENVIRONMENT,
            cwd=folder,
            start_new_session=True,  # its own process group, killed whole at the wall-time limit
        )
        os.close(to_child_r)
        os.close(from_child_w)
        calls: list[str] = []
        finished = False
        try:
            os.write(to_child_w, json.dumps(config).encode() + b"\n")
            message = self._converse(process, from_child_r, to_child_w, sql, calls)
            finished = True
        except ProgramFailed as exc:
            finished = exc.kind in ("error", "memory")  # the child reported it and is ending by itself
            raise
        finally:
            _stop(process, finished)
            os.close(to_child_w)
            os.close(from_child_r)
            shutil.rmtree(folder, ignore_errors=True)
        ms = (time.perf_counter() - started) * 1000
        return ProgramResult(message["columns"], message["rows"], message.get("output", ""), calls, ms)

    def _converse(
        self, process: subprocess.Popen[bytes], reader: int, writer: int, sql: SqlRunner, calls: list[str]
    ) -> dict[str, Any]:
        deadline = time.monotonic() + self.settings.sandbox.wall_s
        buffer = b""
        ready = False
        while True:
            newline = buffer.find(b"\n")
            if newline < 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ProgramFailed(
                        f"the program ran past its {self.settings.sandbox.wall_s:g} s time limit and was stopped.",
                        kind="timeout",
                        hint="Do less work in Python: filter and aggregate in the SQL you pass to sql().",
                    )
                readable, _, _ = select.select([reader], [], [], remaining)
                if not readable:
                    continue
                chunk = os.read(reader, 1 << 16)
                if not chunk:
                    raise self._ended(process, ready)
                buffer += chunk
                if len(buffer) > MESSAGE_LIMIT:
                    raise ProgramFailed("the program sent more than 32 MB at once.", kind="error")
                continue
            line, buffer = buffer[:newline], buffer[newline + 1 :]
            message = json.loads(line)
            kind = message.get("kind")
            if kind == "ready":
                ready = True
            elif kind == "sql":
                calls.append(str(message.get("query", "")))
                os.write(writer, _answer(sql, str(message.get("query", ""))) + b"\n")
            elif kind == "unavailable":
                raise SandboxUnavailable(
                    f"Python is disabled: the sandbox cannot be set up here ({message.get('message')}).",
                    hint="Run on Linux x86_64 with Landlock and namespaces (as root or with user namespaces).",
                )
            elif kind == "failed":
                what = str(message.get("what", "error"))
                text, output = str(message.get("message", "")), str(message.get("output", ""))
                if what == "error":  # the program's traceback, which may quote the database's values
                    raise ProgramFailed("the program raised an error:", quoted=text, kind=what, output=output)
                raise ProgramFailed(text, kind=what, output=output)
            elif kind == "done":
                return dict(message)

    def _ended(self, process: subprocess.Popen[bytes], ready: bool) -> SophrosyneError:
        code = process.wait()
        if not ready:
            return SandboxUnavailable(f"Python is disabled: the sandbox ended while starting (exit {code}).")
        if code == 128 + signal.SIGXCPU or code == 128 + signal.SIGKILL:
            return ProgramFailed(
                f"the program used its {self.settings.sandbox.cpu_s:g} CPU seconds and was stopped.", kind="cpu"
            )
        return ProgramFailed(f"the program ended without an answer (exit {code}).", kind="killed")


def _answer(sql: SqlRunner, query: str) -> bytes:
    try:
        rows = sql(query)
    except SophrosyneError as exc:
        return json.dumps({"kind": "error", "message": str(exc)}).encode()
    payload = {"kind": "rows", "columns": rows.columns, "rows": rows.rows, "truncated": rows.truncated}
    payload["notes"] = rows.notes
    return json.dumps(payload, default=str).encode()


def _stop(process: subprocess.Popen[bytes], finished: bool) -> None:
    """End the sandbox and return only when none of its processes is left. A child that answered ends by
    itself; otherwise its whole process group is killed (its PID namespace dies with its first process)."""
    if finished:
        try:
            process.wait(timeout=2)
            return
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 5
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.005)


def _group_alive(group: int) -> bool:
    """Whether a process of the group still runs (zombies, already dead, wait for init to reap them)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


_checked: dict[str, SandboxUnavailable | None] = {}


def check_sandbox(settings: Settings | None = None) -> None:
    """Run a trivial program once per process; raise SandboxUnavailable if the sandbox cannot be set up."""
    if "result" not in _checked:
        try:
            PythonExecutor(settings).run("result = 1", lambda query: Rows([], []))
            _checked["result"] = None
        except SandboxUnavailable as exc:
            _checked["result"] = exc
    error = _checked["result"]
    if error is not None:
        raise error
