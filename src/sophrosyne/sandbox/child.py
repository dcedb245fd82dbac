"""The sandbox child: sets up every isolation layer, then runs one Python program whose `sql()` asks the parent."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import sysconfig
import traceback
from typing import Any, BinaryIO

from sophrosyne.sandbox import isolation

# The parent starts `python -I -S -c BOOT READ_FD WRITE_FD`: no site hooks, no environment variables
# read by Python, and the parent's own import path, so the child loads exactly the parent's packages.
BOOT = "import sys, json; sys.path[:] = json.loads(sys.argv[3]); from sophrosyne.sandbox.child import main; main()"
SYSTEM_READ = ["/usr/lib", "/lib", "/lib64", "/usr/lib64", "/etc/ld.so.cache", "/usr/share/zoneinfo", "/etc/localtime"]
# Packages a program may use; they are imported before the layers close, so only their folders stay readable.
PRELOAD = ("pandas", "numpy")
# Loaded too when the caller has a Parquet export to read.
PARQUET = ("pyarrow",)


class Channel:
    """JSON lines to and from the parent over two pipes."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.reader: BinaryIO = os.fdopen(read_fd, "rb")
        self.writer: BinaryIO = os.fdopen(write_fd, "wb", buffering=0)

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps(message, default=str).encode() + b"\n")

    def receive(self) -> dict[str, Any]:
        line = self.reader.readline()
        if not line:
            os._exit(5)  # the parent is gone
        message: dict[str, Any] = json.loads(line)
        return message


def main() -> None:
    channel = Channel(int(sys.argv[1]), int(sys.argv[2]))
    config = json.loads(channel.reader.readline())
    try:
        isolation.check_platform()
        isolation.enter_namespaces()
    except isolation.Unavailable as exc:
        channel.send({"kind": "unavailable", "message": str(exc)})
        os._exit(3)
    pid = os.fork()
    if pid:
        # Outside the new PID namespace: wait for the program's process and pass on how it ended.
        channel.reader.close()
        channel.writer.close()
        isolation.die_with_parent()
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
    run(channel, config)


def run(channel: Channel, config: dict[str, Any]) -> None:
    """PID 1 of the new namespace: when it ends, the kernel ends everything it started."""
    try:
        isolation.die_with_parent()
        exports: dict[str, dict[str, Any]] = config.get("exports") or {}
        parquet = any(e["format"] == "parquet" for e in exports.values())
        modules = {name: __import__(name) for name in (*PRELOAD, *(PARQUET if parquet else ()))}
        if parquet:
            __import__("pyarrow.parquet")  # its modules load now: their folder is read-only from here on
        os.chdir(config["folder"])
        # The caller's own export folder, read-only: exports of other callers are in folders it cannot read.
        read = readable_paths() + ([config["export_folder"]] if exports else [])
        isolation.set_limits(config["memory_mb"], config["cpu_s"], config["files_mb"])
        isolation.drop_capabilities()
        isolation.restrict_paths(read, [config["folder"], "/dev/null"])
        isolation.install_seccomp()
    except isolation.Unavailable as exc:
        channel.send({"kind": "unavailable", "message": str(exc)})
        os._exit(3)
    # PID 1 of a namespace ignores signals it has no handler for: without this, only the hard CPU limit's
    # SIGKILL a second later would stop it.
    signal.signal(signal.SIGXCPU, lambda number, frame: os._exit(128 + signal.SIGXCPU))
    channel.send({"kind": "ready"})
    channel.send(execute(config["code"], channel, modules["pandas"], config["output_chars"], exports))
    os._exit(0)


def readable_paths() -> list[str]:
    """The standard library, the folders of the packages loaded so far (not this one: its data folder holds
    the demo database), and the system's shared libraries."""
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")}
    roots = sorted((p for p in sys.path if p and os.path.isdir(p)), key=len, reverse=True)
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or any(file.startswith(p + os.sep) for p in paths):
            continue
        root = next((r for r in roots if file.startswith(r + os.sep)), None)
        if root is None:
            continue
        top = file[len(root) + 1 :].split(os.sep)[0]
        if top.split(".")[0] in ("sophrosyne", "__main__"):
            continue
        paths.add(os.path.join(root, top))
        libs = os.path.join(root, top.split(".")[0] + ".libs")
        if os.path.isdir(libs):
            paths.add(libs)
    return sorted(paths | set(SYSTEM_READ))


def execute(
    code: str, channel: Channel, pd: Any, output_chars: int, exports: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Run the program; its answer is the variable `result` (a DataFrame, a Series, rows or a scalar). Its
    `export(id)` reads one of the caller's exports (export_sql) as a DataFrame; `exports()` lists them."""
    mine = exports or {}

    def export(export_id: str) -> Any:
        found = mine.get(str(export_id))
        if found is None:
            raise KeyError(f"no export {export_id!r} of yours; exports() lists them")
        if found["format"] == "parquet":
            return pd.read_parquet(found["path"])
        return pd.read_csv(found["path"], keep_default_na=False, na_values=[""])

    def listed() -> Any:
        columns = ["id", "format", "rows", "columns", "source", "created"]
        return pd.DataFrame([[i, *(e[c] for c in columns[1:])] for i, e in mine.items()], columns=columns)

    def sql(query: str) -> Any:
        channel.send({"kind": "sql", "query": str(query)})
        reply = channel.receive()
        if reply.get("kind") == "error":
            raise RuntimeError(f"sql() failed: {reply.get('message')}")
        for note in reply.get("notes") or []:
            print(f"sql(): {note}")
        frame = pd.DataFrame(reply["rows"], columns=reply["columns"])
        if reply.get("truncated"):
            print(f"sql(): only the first {len(frame)} rows came back (the row cap); aggregate in SQL instead.")
        return frame

    output = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "__main__", "sql": sql, "pd": pd, "export": export, "exports": listed}
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            exec(compile(code, "<program>", "exec"), namespace)
        columns, rows = to_table(namespace.get("result"), pd)
    except MemoryError:
        message = "the program ran out of its memory limit."
        return {"kind": "failed", "what": "memory", "message": message, "output": output.getvalue()[-2000:]}
    except BaseException as exc:  # the program's own error, reported to the model
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        shown = "".join(line for line in lines if "<program>" in line or line is lines[-1])
        return {"kind": "failed", "what": "error", "message": shown.strip(), "output": output.getvalue()[-2000:]}
    text = output.getvalue()
    if len(text) > output_chars:
        text = text[: output_chars - 40] + f"\n… ({len(text) - output_chars + 40} more characters cut)"
    return {"kind": "done", "columns": columns, "rows": rows, "output": text}


def to_table(value: Any, pd: Any) -> tuple[list[str], list[list[Any]]]:
    if value is None:
        raise ValueError("the program set no `result`: assign the answer (a DataFrame) to `result`.")
    if isinstance(value, pd.Series):
        value = value.reset_index() if not isinstance(value.index, pd.RangeIndex) else value.to_frame()
    if isinstance(value, pd.DataFrame):
        frame = value.astype(object).where(value.notna(), None)
        return [str(c) for c in frame.columns], [[plain(v) for v in row] for row in frame.itertuples(index=False)]
    if isinstance(value, list | tuple):
        rows = [list(r) if isinstance(r, list | tuple) else [r] for r in value]
        width = max((len(r) for r in rows), default=1)
        return [f"column_{i + 1}" for i in range(width)], [[plain(v) for v in r] for r in rows]
    return ["result"], [[plain(value)]]


def plain(value: Any) -> Any:
    """A JSON-friendly value: numpy scalars as Python numbers, midnight timestamps as dates."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "item") and callable(value.item):
        return plain(value.item())
    if hasattr(value, "isoformat"):
        text = str(value.isoformat())
        return text[:10] if text.endswith("T00:00:00") else text
    return str(value)
