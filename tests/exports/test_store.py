"""The export folder: private folders and files, ids no one can guess or turn into a path, another caller's export
read as a missing one, the age, count and size bounds; the writers and the pages."""

from __future__ import annotations

import datetime as dt
import io
import os
import stat
import time
from decimal import Decimal
from pathlib import Path

import pytest

from sophrosyne.errors import ConfigError, InvalidArgument, UnknownExport
from sophrosyne.exports.pages import page_count, read_page
from sophrosyne.exports.store import ID, ExportRecord, ExportStore, new_label
from sophrosyne.exports.writers import CsvWriter, ParquetWriter, text
from sophrosyne.settings import Settings


def store(tmp_path: Path, **bounds: object) -> ExportStore:
    return ExportStore(Settings(export_dir=tmp_path / "exports", **bounds))


def make(s: ExportStore, owner: str, data: bytes = b"a\r\n1\r\n", rows: int = 1) -> ExportRecord:
    with s.writing(owner, "csv") as pending:
        pending.file.write(data)
        return s.finish(pending, label="x", rows=rows, columns=["a"], truncated=False, source="db", role="r")


def test_folders_and_files_are_private_and_ids_random(tmp_path: Path) -> None:
    s = store(tmp_path)
    records = [make(s, "token:alice") for _ in range(20)]
    assert len({r.id for r in records}) == 20 and all(ID.fullmatch(r.id) for r in records)
    assert stat.S_IMODE(os.stat(s.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(records[0].path.parent).st_mode) == 0o700
    for path in records[0].path.parent.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # The caller's name is no path: its folder is a hash.
    assert "alice" not in str(records[0].path)


def test_another_caller_reads_nothing_and_no_id_is_a_path(tmp_path: Path) -> None:
    s = store(tmp_path)
    mine = make(s, "token:alice")
    assert s.get("token:alice", mine.id) == mine
    assert [r.id for r in s.listed("token:alice")] == [mine.id]
    assert s.listed("token:bob") == []
    with pytest.raises(UnknownExport) as other:
        s.get("token:bob", mine.id)
    with pytest.raises(UnknownExport) as missing:
        s.get("token:alice", "A" * 22)
    # Another caller's export and one never made are told alike.
    assert str(other.value).replace(mine.id, "ID") == str(missing.value).replace("A" * 22, "ID")
    folder = mine.path.parent.name
    for bad in ["../" + folder + "/" + mine.id, mine.id + ".csv", "..", "", "a/b", mine.id[:-1], "%2e%2e" * 4]:
        with pytest.raises(UnknownExport):
            s.get("token:alice", bad)


def test_expired_exports_are_gone(tmp_path: Path) -> None:
    s = store(tmp_path, export_keep_s=0.2)
    old = make(s, "local")
    time.sleep(0.3)
    with pytest.raises(UnknownExport):
        s.get("local", old.id)
    assert not old.path.exists() and not old.path.with_suffix(".json").exists()
    fresh = make(s, "local")
    assert [r.id for r in s.listed("local")] == [fresh.id]


def test_count_and_total_bounds_remove_the_oldest(tmp_path: Path) -> None:
    s = store(tmp_path, export_count=3)
    made = [make(s, "local") for _ in range(5)]
    assert {r.id for r in s.listed("local")} == {r.id for r in made[2:]}
    assert not made[0].path.exists()
    big = store(tmp_path / "big", export_total_bytes=1_000_000)
    first = make(big, "token:a", b"x" * 600_000)
    second = make(big, "token:b", b"y" * 600_000)
    assert big.listed("token:a") == [] and [r.id for r in big.listed("token:b")] == [second.id]
    assert not first.path.exists()


def test_a_failed_export_leaves_no_file(tmp_path: Path) -> None:
    s = store(tmp_path)
    with pytest.raises(RuntimeError), s.writing("local", "csv") as pending:
        pending.file.write(b"half")
        raise RuntimeError("stopped")
    assert list(pending.part.parent.iterdir()) == []


def test_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(ConfigError, match="private"):
        ExportStore(Settings(export_dir=shared)).listed("local")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(ConfigError, match="private"):
        ExportStore(Settings(export_dir=link)).listed("local")


@pytest.mark.parametrize(
    ("given", "label"),
    [("../../etc/passwd", "etc_passwd"), ("report 2024.csv", "report_2024.csv"), (".hidden", "hidden"), ("", "x")],
)
def test_labels_are_safe_file_names(given: str, label: str) -> None:
    assert new_label(given, "x") == label
    assert len(new_label("a" * 500, "x")) == 64


def test_csv_text_of_each_kind() -> None:
    values = [None, True, 3, 2.5, Decimal("1E+2"), dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5), b"\x00\xff"]
    assert [text(v) for v in values] == ["", "true", "3", "2.5", "100", "2024-01-02", "2024-01-02 03:04:05", "\\x00ff"]
    out = io.BytesIO()
    writer = CsvWriter(out, ["a", "b"])
    writer.write([("x,y", 'say "hi"'), ("line\nbreak", None)], 0)
    writer.close()
    assert out.getvalue() == b'a,b\r\n"x,y","say ""hi"""\r\n"line\nbreak",\r\n'
    assert writer.written == len(out.getvalue())


def test_parquet_keeps_types_and_refuses_a_mixed_column(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    rows = [(1, 1.5, "a", Decimal("2.50"), dt.date(2024, 1, 1), None, b"\x01", {"k": 1}, 1)] * 3
    path = tmp_path / "t.parquet"
    with path.open("wb") as file:
        writer = ParquetWriter(file, ["i", "f", "s", "d", "day", "empty", "blob", "doc", "i"])
        writer.write(rows, 0)
        writer.close()
    table = pq.read_table(path)
    assert table.column_names == ["i", "f", "s", "d", "day", "empty", "blob", "doc", "i_2"]
    assert [str(t) for t in table.schema.types] == [
        "int64", "double", "string", "decimal128(38, 2)", "date32[day]", "string", "binary", "string", "int64"
    ]  # fmt: skip
    assert table.to_pylist()[0]["doc"] == '{"k": 1}' and table.num_rows == 3
    with (tmp_path / "m.parquet").open("wb") as file:
        mixed = ParquetWriter(file, ["n"])
        mixed.write([(1,)], 0)
        mixed._start()  # the types are chosen from the first rows
        with pytest.raises(InvalidArgument, match="CAST `n`"):
            mixed.write([("text",)], 0)
        mixed.abort()


def test_pages_read_back_the_whole_file(tmp_path: Path) -> None:
    s = store(tmp_path)
    lines = b"".join(f"{i},{'x' * (i % 50)}\r\n".encode() for i in range(2000))
    record = make(s, "local", lines, rows=2000)
    size = 1024
    pages = [read_page(record, p, size) for p in range(1, page_count(record, size) + 1)]
    assert all(isinstance(p, str) and (not p or p.endswith("\r\n")) for p in pages)
    assert "".join(str(p) for p in pages).encode() == lines
    with pytest.raises(InvalidArgument, match="no page"):
        read_page(record, page_count(record, size) + 1, size)
