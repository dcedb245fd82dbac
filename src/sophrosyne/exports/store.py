"""Exports on disk: a private folder per caller, each file named by an id no one can guess, with its record beside
it; kept within an age, a count per caller and a total size, the oldest going first."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from sophrosyne.errors import ConfigError, UnknownExport
from sophrosyne.settings import Settings

Format = Literal["csv", "parquet"]
MIME_TYPES: dict[str, str] = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
# secrets.token_urlsafe(16): 128 random bits in 22 characters of [A-Za-z0-9_-]; nothing else is ever an id, so an
# id can name no other path.
ID = re.compile(r"[A-Za-z0-9_-]{22}")
# A label the caller gives (the download's file name): letters, digits, dot, dash and underscore, never leading dot.
_LABEL_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
LABEL_CHARS = 64
# The caller of the Python API and of a local (stdio) server.
LOCAL = "local"
# Whose exports a call makes and reads: set by the server for each request (serve/exports.py), LOCAL otherwise.
_caller: ContextVar[str] = ContextVar("sophrosyne_export_caller", default=LOCAL)
# A partial file older than the longest export plus this is a crashed export's: removed by the sweep.
_STALE_PART_S = 60.0


def caller() -> str:
    """The caller the current call's exports belong to."""
    return _caller.get()


@contextmanager
def calling_as(owner: str) -> Iterator[None]:
    """Make and read exports as `owner` in the block (a server sets its request's caller here)."""
    token = _caller.set(owner)
    try:
        yield
    finally:
        _caller.reset(token)


@dataclass(frozen=True)
class ExportRecord:
    """One finished export: what it holds and where (the path is the server's, shown to a local caller only)."""

    id: str
    format: Format
    label: str
    rows: int
    columns: list[str]
    bytes: int
    created: float  # seconds since the epoch
    truncated: bool
    source: str
    role: str
    path: Path = field(compare=False)

    @property
    def mime_type(self) -> str:
        return MIME_TYPES[self.format]

    @property
    def file_name(self) -> str:
        """The name a download is saved as: the label with the format's suffix."""
        return f"{self.label}.{self.format}"

    def expires(self, keep_s: float) -> float:
        return self.created + keep_s


@dataclass
class Pending:
    """An export being written: its id, its partial file (open, private) and the final path it will take."""

    id: str
    format: Format
    part: Path
    final: Path
    file: BinaryIO


def new_label(label: str | None, fallback: str) -> str:
    """A label safe as a file name in any download: unsafe characters become `_`, at most LABEL_CHARS."""
    cleaned = _LABEL_CHARS.sub("_", label or "").strip("._")[:LABEL_CHARS]
    return cleaned or fallback


class ExportStore:
    """The export folder of one server (or Python process): every state is on disk, so any thread, process
    or later start sees the same exports. Another caller's export reads exactly like a missing one."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        limits = settings.exports
        self.root = limits.export_dir or settings.paths.cache_dir / "exports"

    # -- folders -------------------------------------------------------------------------------------------

    def _private_root(self) -> Path:
        """The root folder, made private (0700) if new; an existing one others may write to is refused."""
        root = self.root
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = os.stat(root, follow_symlinks=False)
        except OSError as exc:
            raise ConfigError(f"cannot use the export folder {root}: {exc.strerror}.", hint=_FOLDER_HINT) from None
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise ConfigError(
                f"the export folder {root} is not a private folder of this user (a symbolic link, another owner, "
                "or writable by others).",
                hint=_FOLDER_HINT,
            )
        return root

    def folder(self, owner: str, *, create: bool = False) -> Path:
        """The caller's folder: named by a hash of the caller, so no caller's name is a path."""
        digest = hashlib.sha256(f"sophrosyne-export-owner:{owner}".encode()).hexdigest()[:32]
        path = self._private_root() / digest
        if create:
            with contextlib.suppress(FileExistsError):
                path.mkdir(mode=0o700)
        return path

    # -- writing -------------------------------------------------------------------------------------------

    @contextmanager
    def writing(self, owner: str, format: Format) -> Iterator[Pending]:
        """A new export's partial file, open for writing (0600, never an existing file); removed unless the
        block ends with `finish`. The sweep runs first, so the bounds hold before anything is written."""
        self.sweep()
        folder = self.folder(owner, create=True)
        export_id = secrets.token_urlsafe(16)
        part = folder / f"{export_id}.{format}.part"
        descriptor = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        pending = Pending(export_id, format, part, folder / f"{export_id}.{format}", os.fdopen(descriptor, "wb"))
        try:
            yield pending
        finally:
            if not pending.file.closed:
                pending.file.close()
            with contextlib.suppress(FileNotFoundError):
                part.unlink()  # what `finish` did not move: a failed, cancelled or refused export

    def finish(
        self,
        pending: Pending,
        *,
        label: str,
        rows: int,
        columns: list[str],
        truncated: bool,
        source: str,
        role: str,
    ) -> ExportRecord:
        """Close the file and publish it: its record first (written whole, then renamed), then the file."""
        pending.file.close()
        size = pending.part.stat().st_size
        record = ExportRecord(
            id=pending.id,
            format=pending.format,
            label=label,
            rows=rows,
            columns=columns,
            bytes=size,
            created=time.time(),
            truncated=truncated,
            source=source,
            role=role,
            path=pending.final,
        )
        saved = {k: v for k, v in asdict(record).items() if k != "path"}
        _write_private(pending.final.with_name(f"{pending.id}.json"), json.dumps(saved).encode())
        os.replace(pending.part, pending.final)
        self.sweep()
        return record

    # -- reading -------------------------------------------------------------------------------------------

    def get(self, owner: str, export_id: str) -> ExportRecord:
        """The caller's export `export_id`; UnknownExport for an id of another form, another caller's
        export, one that expired (removed now) or one never made: all are told alike."""
        if not isinstance(export_id, str) or not ID.fullmatch(export_id):
            raise _unknown(export_id)
        record = _read_record(self.folder(owner) / f"{export_id}.json")
        if record is None:
            raise _unknown(export_id)
        if record.expires(self.settings.exports.export_keep_s) <= time.time():
            _remove(record)
            raise _unknown(export_id)
        return record

    def listed(self, owner: str) -> list[ExportRecord]:
        """The caller's exports, newest first (the expired ones removed first)."""
        self.sweep()
        folder = self.folder(owner)
        if not folder.is_dir():
            return []
        records = [r for p in folder.glob("*.json") if (r := _read_record(p)) is not None]
        return sorted(records, key=lambda r: r.created, reverse=True)

    def remove(self, owner: str, export_id: str) -> None:
        _remove(self.get(owner, export_id))

    # -- bounds --------------------------------------------------------------------------------------------

    def sweep(self) -> None:
        """Remove what is past the bounds: expired exports, each caller's beyond `export_count`, then the
        oldest of all while their bytes pass `export_total_bytes`; and partial files a crash left behind."""
        limits = self.settings.exports
        now = time.time()
        root = self._private_root()
        kept: list[ExportRecord] = []
        for folder in root.iterdir():
            if not folder.is_dir() or folder.is_symlink():
                continue
            mine = []
            for path in folder.iterdir():
                if path.suffix == ".json":
                    record = _read_record(path)
                    if record is None:
                        continue
                    if record.expires(limits.export_keep_s) <= now:
                        _remove(record)
                    else:
                        mine.append(record)
                elif path.suffix == ".part" and _age(path, now) > limits.export_timeout_s + _STALE_PART_S:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            mine.sort(key=lambda r: r.created, reverse=True)
            for record in mine[limits.export_count :]:
                _remove(record)
            kept.extend(mine[: limits.export_count])
        total = sum(r.bytes for r in kept)
        for record in sorted(kept, key=lambda r: r.created):
            if total <= limits.export_total_bytes:
                break
            _remove(record)
            total -= record.bytes


_FOLDER_HINT = "Set export_dir to a folder only the server's user can write to (it is made 0700 when new)."


def _unknown(export_id: object) -> UnknownExport:
    shown = export_id if isinstance(export_id, str) and ID.fullmatch(export_id) else "given"
    return UnknownExport(
        f"no export `{shown}` of yours: it expired, or the id is wrong.",
        hint="Run export_sql again; exports are kept for a while, then removed.",
    )


def _write_private(path: Path, data: bytes) -> None:
    """Write a file whole, readable by this user only, then rename it into place."""
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.replace(temporary, path)


def _read_record(path: Path) -> ExportRecord | None:
    """The record of an export whose file is there; None for anything else (a half-removed export)."""
    try:
        data = json.loads(path.read_bytes())
        final = path.with_name(f"{data['id']}.{data['format']}")
        if data["id"] != path.stem or data["format"] not in MIME_TYPES or not final.is_file():
            return None
        return ExportRecord(**data, path=final)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remove(record: ExportRecord) -> None:
    # The record first: an export is gone for readers as soon as its record is.
    for path in (record.path.with_name(f"{record.id}.json"), record.path):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
