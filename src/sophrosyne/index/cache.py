"""The cache folder of the offline indexes: temp files named by their writer, stale ones cleaned, trouble told once.

An index is written to a temp file (or folder) of its own and renamed into place. A writer killed before the
rename leaves its temp behind; the name carries the writer's PID, so the next process that opens the cache
removes those whose writer is gone (and any older than `STALE_TEMP_S`, whatever wrote them). A cache that
cannot be written (full, read-only, not a folder) does not stop a server: the index is kept in memory, and
the cause is logged once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sophrosyne.errors import CacheUnavailable

logger = logging.getLogger("sophrosyne.index")

# A temp file no writer holds for this long is stale whatever its PID says (PIDs are reused; another host
# may share the folder): a save writes for seconds.
STALE_TEMP_S = 3600.0
_TEMP = re.compile(r"\.tmp-(\d+)-[^.]*$")
# What mkstemp/mkdtemp left before temp names carried their writer's PID: `<key>[.json].<8 random chars>`.
_OLD_TEMP = re.compile(r"^[0-9a-f]{24}(?:\.json)?\.[A-Za-z0-9_]{8}$")
_told: set[str] = set()
_told_lock = threading.Lock()


def temp_prefix(final: Path) -> str:
    """The prefix of a temp file or folder that will be renamed to `final`: it names this process."""
    return f"{final.name}.tmp-{os.getpid()}-"


def _writer_gone(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, owned by another user
        return False
    return False


def clean_stale(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the temp files and folders in `folder` whose writer is gone, or that are older than
    `STALE_TEMP_S`; the paths removed. A folder that cannot be listed is left as it is."""
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.search(entry.name)
        if match is None and not _OLD_TEMP.match(entry.name):
            continue
        try:
            old = now - entry.stat().st_mtime > STALE_TEMP_S
        except OSError:
            continue  # renamed or removed meanwhile
        if not (old or (match is not None and _writer_gone(int(match[1])))):
            continue
        try:
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError as exc:
            tell_once(f"could not remove the stale temp file {entry}: {exc}")
            continue
        removed.append(entry)
    if removed:
        logger.info("removed %d stale temp file(s) left in %s by writers that stopped", len(removed), folder)
    return removed


@contextlib.contextmanager
def building(final: Path) -> Iterator[None]:
    """Held while this process builds the entry `final`: another process that wants it (a worker, a replica on
    the same cache folder) waits here, then finds it saved and reads it instead of building it again. The lock
    is an flock on a file of the cache's `locks` folder: released by the kernel when its holder dies, however it
    dies, and honoured across hosts on NFSv4. A folder where no lock file can be made builds without one."""
    locks = final.parent.parent / "locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
        fd = os.open(locks / f"{final.parent.name}.{final.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        tell_once(f"no build lock in {locks} ({reason(exc)}): processes sharing the cache may build twice")
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would let two holders in)


def tell_once(message: str) -> None:
    """Log a warning once per process: a cache in trouble is told, not repeated at every call."""
    with _told_lock:
        if message in _told:
            return
        _told.add(message)
    logger.warning("%s", message)


def reason(exc: OSError) -> str:
    """Why the cache failed, as the system says it (`No space left on device`), without the path."""
    return exc.strerror or type(exc).__name__


def unavailable(what: str, where: Path | None, exc: OSError, done: str = "saved") -> CacheUnavailable:
    """The error that says which index could not be saved (or built) where (for the operator), why, and what
    to do. A client is not told the server's paths: `where` is None then."""
    place = f"in {where}" if where is not None else "with the cache folder"
    return CacheUnavailable(
        f"{what} could not be {done} {place}: {reason(exc)}.",
        hint="Set SOPHROSYNE_CACHE_DIR (cache_dir) to a writable folder with free space.",
    )


def joins_path(cache_dir: Path, key: str) -> Path:
    """Where the joins inferred for a schema of this key (`schema.joins.joins_key`) are kept."""
    return joins_folder(cache_dir) / f"{key[:24]}.json"


def joins_folder(cache_dir: Path) -> Path:
    return Path(cache_dir) / "joins"


def read_json(path: Path) -> Any:
    """A cached JSON entry, or None when there is none or it cannot be read (a damaged one is redone)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any) -> None:
    """Write a JSON entry through a temp file of this process renamed into place (a reader never sees half
    of one); a cache that cannot be written is told once and left as it is."""
    temp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(path.parent)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=temp_prefix(path), delete=False) as out:
            temp = out.name
            json.dump(data, out, separators=(",", ":"))
        os.replace(temp, path)
    except OSError as exc:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)  # a full disk keeps no half-written entry
        tell_once(f"could not save {path.parent.name} in {path.parent.parent} ({reason(exc)}): redone on each start")
