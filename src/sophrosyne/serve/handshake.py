"""An MCP client's handshake over stdio answered at once, as this server answered it last time, while the SDK
and the database layer load (one to three seconds on a busy machine, past many clients' patience)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import queue
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, NoReturn

# The answers depend on the versions, the options the server runs with and the protocol version asked for,
# never on anything else the client says. `initialize` opens a session up to protocol 2025-11-25;
# `server/discover` is how clients of 2026-07-28 begin.
_HANDSHAKES = ("initialize", "server/discover")
_EARLY = (*_HANDSHAKES, "tools/list")
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
PARENT_CHECK_S = 0.5  # how often a stdio server looks whether the client that started it is still there
TOLD_WAIT_S = 10.0  # longest a server whose client left during start-up waits to have said what it serves


def leave_now(code: int = 0) -> NoReturn:
    """End the process at once, its output flushed, once its client has gone. A server holds millions of objects
    (catalog, indexes, lexicon) that the interpreter would free one by one and collect at exit: 0.6-1 s at the
    demo's size, seconds on a large schema, for nobody. The audit log writes each record as it comes, and the
    database servers see their connections close."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def snapshot_path(argv: list[str]) -> Path:
    """Where the answers of a server started with `argv` are kept (the cache folder, without reading the
    settings: they load slowly, and this runs before anything else)."""
    from importlib.util import find_spec

    from sophrosyne.base.version import __version__

    # The newest source file of the package, and the SDK's install: an edited, upgraded or reinstalled
    # server is another server (reading the SDK's version from its metadata would cost a tenth of a second).
    package = Path(__file__).parent.parent
    built = max(p.stat().st_mtime_ns for p in package.rglob("*.py"))
    sdk = find_spec("mcp")
    sdk_built = Path(sdk.origin).stat().st_mtime_ns if sdk and sdk.origin else 0
    # What else decides the answers: the settings' variables (a SOPHROSYNE_ALLOW_EXPORTS changes the tools), the
    # folder relative paths are read from, and each file the arguments name (a policy's declared tools, its roles)
    # as it is now. Only a hash of them is written.
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("SOPHROSYNE_"))
    key = json.dumps([__version__, sdk_built, sys.version_info[:2], built, argv, os.getcwd(), settings, _files(argv)])
    cache = Path(os.environ.get("SOPHROSYNE_CACHE_DIR") or Path.home() / ".cache" / "sophrosyne")
    return cache / "handshake" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _files(argv: list[str]) -> list[tuple[str, int, int]]:
    """Each file an argument names (`--policy p.toml`, `--config=c.toml`, a database), with its modification
    time and size."""
    found = []
    for arg in argv:
        for part in dict.fromkeys((arg, arg.split("=", 1)[-1])):
            path = Path(part)
            with contextlib.suppress(OSError, ValueError):
                if path.is_file():
                    stat = path.stat()
                    found.append((str(path.resolve()), stat.st_mtime_ns, stat.st_size))
    return found


class EarlyStdio:
    """The stdio wire, taken at start: a thread answers `initialize` and `tools/list` from the snapshot the
    moment they arrive, and hands every message on to the SDK once it runs (`stdin`, `stdout` here). The
    SDK answers them again; those answers are not sent twice, and refresh the snapshot when they differ."""

    def __init__(self, path: Path, parent: int | None = None) -> None:
        """`parent`: the pid of the process that started this one, read as early as the process could (the
        default reads it now). It must be read before the reading thread starts: that thread answers the
        handshake at once, and a client killed right after it would leave init as the parent seen here, watched
        for ever (the server then outlived its client while something else held stdin open)."""
        parent = os.getppid() if parent is None else parent
        self.path = path
        self._saved: dict[str, Any] = _load(path)
        self._fresh: dict[str, Any] = json.loads(json.dumps(self._saved))
        # id -> (key of the answer in the snapshot, whether it was answered here)
        self._answered: dict[Any, tuple[str, bool]] = {}
        self._handshake_early = False
        self._version: object = None  # the protocol version of the handshake
        self._lock = threading.Lock()
        self._needs_sdk = False  # a message came that only the SDK answers (a tool call, say)
        self._told = threading.Event()  # the server has said on stderr what it serves
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._wake: Callable[[], object] | None = None  # tells the SDK's reader a line came (set by _Lines)
        # The wire moves to private descriptors; fd 1 then points at stderr, so that stray output of any
        # library lands in the log, never amid the protocol.
        self._wire_in = os.fdopen(os.dup(0), "rb")
        self._wire_out = os.fdopen(os.dup(1), "wb")
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(2, 1)
        threading.Thread(target=self._read, name="sophrosyne-stdin", daemon=True).start()
        threading.Thread(target=self._watch_parent, args=(parent,), name="sophrosyne-parent", daemon=True).start()

    def _read(self) -> None:
        for raw in self._wire_in:
            line = raw.decode("utf-8", errors="replace")
            if not self._answer_early(line) and '"id"' in line:
                self._needs_sdk = True
            self._put(line)
        if self._wake is None and not self._needs_sdk:
            # The client left before the SDK ran, and nothing it asked waits for an answer: once the server has
            # said what it serves (a person trying `serve < /dev/null` reads it), it goes without loading the SDK.
            self._told.wait(TOLD_WAIT_S)
            if self._wake is None:
                leave_now()
        self._put(None)

    def told(self) -> None:
        """The server has printed what it serves and its client configuration."""
        self._told.set()

    def _watch_parent(self, parent: int) -> None:
        """A client killed outright may leave stdin open (a grandparent holds it): its server goes too."""
        while os.getppid() == parent:
            threading.Event().wait(PARENT_CHECK_S)
        leave_now()

    def _put(self, line: str | None) -> None:
        self._lines.put(line)
        wake = self._wake
        if wake is not None:
            with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody reads any more
                wake()

    def _answer_early(self, line: str) -> bool:
        """Answer a handshake from the snapshot; whether the line was answered (or needs no answer) here."""
        if not any(f'"{method}"' in line for method in _EARLY):
            return False  # a tool call: parsed once, by the SDK
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") not in _EARLY or "id" not in message:
            return "id" not in message if isinstance(message, dict) else False
        method = str(message["method"])
        params: dict[str, Any] = message["params"] if isinstance(message.get("params"), dict) else {}
        meta: dict[str, Any] = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
        with self._lock:
            version = params.get("protocolVersion") or meta.get(_VERSION_META) or self._version
            key = f"{method} {version}"
            result = self._saved.get(key)
            if method == "tools/list" and not self._handshake_early:
                result = None  # the tools only after a handshake answered here: replies keep their order
            self._answered[message["id"]] = (key, result is not None)
            if method in _HANDSHAKES:
                self._version = version
            if result is None:
                return False  # the SDK answers, and its answer is kept for the next start
            self._handshake_early |= method in _HANDSHAKES
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return True

    def _send(self, message: dict[str, Any]) -> None:
        self._wire_out.write((json.dumps(message, separators=(",", ":")) + "\n").encode())
        self._wire_out.flush()

    # -- what the SDK's stdio transport reads and writes --------------------------------------------------

    @property
    def stdin(self) -> _Lines:
        return _Lines(self)

    @property
    def stdout(self) -> _Writer:
        return _Writer(self)

    def deliver(self, text: str) -> None:
        """One message from the SDK: sent, unless it answers what was answered early."""
        if not self._answered:  # nothing asked of the snapshot is waiting: a tool's answer goes straight out
            with self._lock:
                self._wire_out.write(text.encode())
                self._wire_out.flush()
            return
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        answered = None
        if isinstance(message, dict) and "id" in message and "result" in message:
            with self._lock:
                answered = self._answered.pop(message["id"], None)
        if answered is not None:
            key, early = answered
            self._keep(key, message["result"])
            if early:
                return
        with self._lock:
            self._wire_out.write(text.encode())
            self._wire_out.flush()

    def _keep(self, key: str, result: Any) -> None:
        if self._fresh.get(key) == result:
            return
        self._fresh[key] = result
        with contextlib.suppress(OSError):  # a read-only cache only costs the next start its speed
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps(self._fresh))
            partial.replace(self.path)


class _Lines:
    """The lines the client sent, for the SDK's stdin reader (an async iterator of str). The reading thread
    wakes the event loop itself when a line comes, so a message reaches the SDK without a worker thread's hop."""

    def __init__(self, early: EarlyStdio) -> None:
        self._early = early

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[str]:
        import asyncio

        loop = asyncio.get_running_loop()
        came = asyncio.Event()
        lines = self._early._lines
        self._early._wake = lambda: loop.call_soon_threadsafe(came.set)
        try:
            while True:
                try:
                    line = lines.get_nowait()
                except queue.Empty:
                    came.clear()
                    try:  # a line put between the two looks has its wake-up queued behind this clear
                        line = lines.get_nowait()
                    except queue.Empty:
                        await came.wait()
                        continue
                if line is None:
                    return
                yield line
        finally:
            self._early._wake = None


class _Writer:
    """The SDK's stdout: whole messages, one per write."""

    def __init__(self, early: EarlyStdio) -> None:
        self._early = early

    async def write(self, text: str) -> None:
        self._early.deliver(text)

    async def flush(self) -> None:
        return None


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
