"""Strings -> lists of column ids in flat arrays: the value index's storage, small in memory, mapped from its file.

A million values held as Python `str` keys with `list[int]` values cost about 190 bytes each; here a value
costs its UTF-8 bytes plus about 28 bytes of arrays: a sorted array of 64-bit hashes found by binary search,
the bytes of every string joined with their offsets (a hit is checked against the string itself, so a hash
shared by two strings never mixes them up), and the ids of all lists joined with theirs. Saved, the arrays
are written as they are and read back with `mmap`: a start maps the file instead of parsing it, and only
the pages a lookup touches are read.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

MAGIC = b"SOPHVIDX"
# The arrays of one table, in the order they are written.
_ARRAYS = ("hashes", "offsets", "blob", "starts", "ids")
# Strings turned into Python objects at once when a table is built or read whole.
_CHUNK = 16_384


def _digest(raw: bytes) -> bytes:
    """16 bytes: the first 8 are the lookup hash, all 16 tell strings apart while a table is built."""
    return hashlib.blake2b(raw, digest_size=16).digest()


def _hash(raw: bytes) -> int:
    return int.from_bytes(_digest(raw)[:8], "little")


@dataclass(frozen=True)
class Postings:
    """A read-only map of strings to the ids that hold them, in five arrays."""

    hashes: npt.NDArray[np.uint64]  # sorted: one per string
    offsets: npt.NDArray[np.int64]  # string i is blob[offsets[i]:offsets[i + 1]]
    blob: npt.NDArray[np.uint8]
    starts: npt.NDArray[np.int64]  # the ids of string i are ids[starts[i]:starts[i + 1]]
    ids: npt.NDArray[np.int32]

    @classmethod
    def empty(cls) -> Postings:
        zero = np.zeros(1, np.int64)
        return cls(np.zeros(0, np.uint64), zero, np.zeros(0, np.uint8), zero, np.zeros(0, np.int32))

    def __len__(self) -> int:
        return len(self.hashes)

    def get(self, text: str) -> list[int]:
        """The ids holding `text`, in the order they were added; [] when none."""
        position = self.find(text)
        return [] if position < 0 else self.ids_of(position)

    def find(self, text: str) -> int:
        """The position of `text` in the table, -1 when it is not there."""
        raw = text.encode("utf-8", "surrogatepass")
        wanted = np.uint64(_hash(raw))
        i = int(np.searchsorted(self.hashes, wanted))
        while i < len(self.hashes) and self.hashes[i] == wanted:
            if self.blob[self.offsets[i] : self.offsets[i + 1]].tobytes() == raw:
                return i
            i += 1
        return -1

    def ids_of(self, position: int) -> list[int]:
        return [int(x) for x in self.ids[self.starts[position] : self.starts[position + 1]]]

    def texts(self, order: npt.NDArray[np.int64]) -> Iterator[tuple[int, str]]:
        """Each string with its position, in `order` (positions), a chunk of Python ints at a time."""
        blob = memoryview(self.blob)  # type: ignore[arg-type]
        for at in range(0, len(order), _CHUNK):
            part = order[at : at + _CHUNK]
            begins, ends = self.offsets[part].tolist(), self.offsets[part + 1].tolist()
            for i, begin, end in zip(part.tolist(), begins, ends, strict=True):
                yield i, bytes(blob[begin:end]).decode("utf-8", "surrogatepass")

    def nbytes(self) -> int:
        """Bytes the arrays take (in memory when built, in the file when mapped)."""
        return sum(getattr(self, name).nbytes for name in _ARRAYS)

    # -- the file ---------------------------------------------------------------------------------------

    def write(self, out: IO[bytes], prefix: str) -> dict[str, list[Any]]:
        """Write the arrays at 8-byte boundaries; where each one is, for the file's header."""
        placed: dict[str, list[Any]] = {}
        for name in _ARRAYS:
            data: npt.NDArray[Any] = np.ascontiguousarray(getattr(self, name))
            out.write(b"\0" * (-out.tell() % 8))
            placed[f"{prefix}{name}"] = [out.tell(), data.dtype.str, len(data)]
            out.write(data.tobytes())
        return placed

    @classmethod
    def mapped(cls, buffer: mmap.mmap, placed: dict[str, list[Any]], prefix: str) -> Postings:
        arrays = {}
        for name in _ARRAYS:
            offset, dtype, count = placed[f"{prefix}{name}"]
            arrays[name] = np.frombuffer(buffer, dtype=np.dtype(dtype), count=int(count), offset=int(offset))
        return cls(**arrays)


class PostingsBuilder:
    """Collects (string, id) pairs in flat buffers, no Python object kept per pair, and sorts them into a
    `Postings` once: a string's ids keep the order they came in, each id once."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._lengths = array("I")
        self._digests = bytearray()
        self._ids = array("i")
        self._last: tuple[bytes, int] | None = None
        self._counted = (0, 0)  # (pairs, distinct strings among them) when last counted

    @property
    def pairs(self) -> int:
        return len(self._ids)

    def add(self, text: str, id_: int) -> None:
        raw = text.encode("utf-8", "surrogatepass")
        digest = _digest(raw)
        if self._last == (digest, id_):
            return
        self._last = (digest, id_)
        self._blob += raw
        self._lengths.append(len(raw))
        self._digests += digest
        self._ids.append(id_)

    def at_least(self, count: int) -> bool:
        """Whether `count` distinct strings or more were added: counted exactly, but only once the pairs
        added since the last count could reach it (each pair adds at most one)."""
        pairs, distinct = self._counted
        if distinct + (self.pairs - pairs) < count:
            return False
        self._counted = (self.pairs, len(np.unique(self._digest_view()[: self.pairs], axis=0)))
        return self._counted[1] >= count

    def _digest_view(self) -> npt.NDArray[np.uint64]:
        return np.frombuffer(self._digests, dtype="<u8").reshape(-1, 2)

    def finish(self) -> tuple[Postings, npt.NDArray[np.int64]]:
        """The table, and for each string (by position) the rank of its first pair: the order the strings
        came in. Sorted by hash with a stable sort, so each string's pairs keep their order. Each buffer is
        let go as soon as it is used (a million pairs held 80 MB more at once): the builder is done after."""
        count = self.pairs
        if not count:
            return Postings.empty(), np.zeros(0, np.int64)
        digests = self._digest_view()
        order = np.argsort(digests[:, 0], kind="stable")
        hashes, seconds = digests[order, 0], digests[order, 1]
        shared = hashes[1:] == hashes[:-1]
        same = shared & (seconds[1:] == seconds[:-1])
        if (shared & ~same).any():  # two strings share a 64-bit hash: order by all 16 bytes
            order = np.lexsort((np.arange(count), digests[:, 1], digests[:, 0]))
            hashes, seconds = digests[order, 0], digests[order, 1]
            same = (hashes[1:] == hashes[:-1]) & (seconds[1:] == seconds[:-1])
        del digests, seconds, shared
        self._digests = bytearray()
        first = np.ones(count, dtype=bool)
        first[1:] = ~same
        del same
        ids = np.frombuffer(self._ids, dtype=np.int32)[order]
        self._ids = array("i")
        # Each id once per string, at its first place. A string's ids mostly come in rising order (columns
        # are read one after another): then a repeated id is next to itself.
        string_of = np.cumsum(first, dtype=np.int64) - 1  # per sorted pair: the string it belongs to
        if not (~first[1:] & (ids[1:] < ids[:-1])).any():
            kept = np.ones(count, dtype=bool)
            kept[1:] = first[1:] | (ids[1:] != ids[:-1])
        else:
            _, places = np.unique(string_of * (int(ids.max()) + 1) + ids, return_index=True)
            kept = np.zeros(count, dtype=bool)
            kept[places] = True
            del places
        held = np.bincount(string_of[kept], minlength=int(string_of[-1]) + 1)
        del string_of
        ids = ids[kept]
        del kept
        starts = np.zeros(len(held) + 1, np.int64)
        np.cumsum(held, out=starts[1:])
        first_pair = order[first]  # the first pair of each string, in insertion order: where its bytes are
        del order
        hashes = hashes[first]
        del first
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)
        ends = np.cumsum(lengths, dtype=np.int64)
        sizes = lengths[first_pair].astype(np.int64)
        begins = ends[first_pair] - sizes
        del lengths, ends
        self._lengths = array("I")
        joined = _gathered(self._blob, begins, sizes)
        self._blob = bytearray()
        offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        table = Postings(
            hashes=hashes.astype(np.uint64, copy=False),
            offsets=offsets,
            blob=np.frombuffer(joined, dtype=np.uint8),
            starts=starts,
            ids=ids,
        )
        return table, first_pair


def _gathered(blob: bytearray, begins: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]) -> bytes:
    """The pieces blob[begin:begin + size] joined, a chunk at a time: a Python int per piece for all of them at
    once held 20 MB more at 280,000 strings."""
    parts = []
    with memoryview(blob) as view:
        for at in range(0, len(begins), _CHUNK):
            pieces = zip(begins[at : at + _CHUNK].tolist(), sizes[at : at + _CHUNK].tolist(), strict=True)
            parts.append(b"".join(view[b : b + n] for b, n in pieces))
    return b"".join(parts)


def write_file(path: Path, header: dict[str, Any], tables: dict[str, Postings]) -> None:
    """One file: the magic, the header's length and JSON (with where each array is), then the arrays."""
    with Path(path).open("wb") as out:
        out.write(MAGIC + b"\0" * 8)  # the header's place and length, filled in last
        placed: dict[str, list[Any]] = {}
        for prefix, table in tables.items():
            placed.update(table.write(out, f"{prefix}."))
        text = json.dumps({**header, "arrays": placed}).encode()
        where = out.tell()
        out.write(text)
        out.seek(len(MAGIC))
        out.write(where.to_bytes(4, "little") + len(text).to_bytes(4, "little"))


def read_file(path: Path, prefixes: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Postings]]:
    """The header and the tables of a file `write_file` wrote, mapped read-only; ValueError if it is not one."""
    with Path(path).open("rb") as handle:
        try:
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise ValueError(f"{path} is empty") from None
    if buffer[: len(MAGIC)] != MAGIC or len(buffer) < len(MAGIC) + 8:
        raise ValueError(f"{path} is not a value index file")
    where = int.from_bytes(buffer[len(MAGIC) : len(MAGIC) + 4], "little")
    size = int.from_bytes(buffer[len(MAGIC) + 4 : len(MAGIC) + 8], "little")
    header = json.loads(buffer[where : where + size])
    placed = header.pop("arrays")
    return header, {prefix: Postings.mapped(buffer, placed, f"{prefix}.") for prefix in prefixes}
