"""Finding 9: the cache in trouble. A full or unwritable cache folder degrades (no internal error), a temp
file left by a killed writer is cleaned when the cache is opened, and a partial value index saved by a server
within its time limit is not taken for a complete one by `sophrosyne index`.

A read-only folder does not stop root (the tests run as root), so an unwritable cache is a cache folder whose
parent is a regular file (ENOTDIR, for every process), and a full disk is a rename that fails with ENOSPC.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from fixtures.engines import build_sqlite
from fixtures.serving import ROOT, connected, text_of
from sophrosyne.database import open_database
from sophrosyne.environment import Environment
from sophrosyne.index.build import index_database
from sophrosyne.index.values import VALUES_VERSION, ValueIndex, values_path
from sophrosyne.settings import Settings

QUESTION = "How many hours of absence did employees of the Finance department record?"


@pytest.fixture
def hr(tmp_path: Path) -> Path:
    return build_sqlite(tmp_path / "hr.sqlite")


def unwritable(tmp_path: Path) -> Path:
    """A cache folder that cannot be created: its parent is a file (ENOTDIR, root or not)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder's parent should be")
    return blocker / "cache"


def saved_file_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "could not be saved" in r.getMessage()]


def test_an_unwritable_cache_degrades_over_mcp_and_logs_the_cause_once(
    hr: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from sophrosyne.serve.server import build_server

    caplog.set_level(logging.WARNING)
    env = Environment.open(hr, settings=Settings(cache_dir=unwritable(tmp_path)))
    with connected(build_server(env)) as session:
        for _ in range(3):
            listed = session.call("list_tables", {"question": QUESTION})
            text = text_of(listed)
            assert not listed.is_error, text
            assert "internal error" not in text.lower()
            assert "employees" in text and "absence_records" in text  # the tables are listed all the same
            assert "could not be saved in the cache folder (Not a directory)" in text
            assert "not-a-folder" not in text  # the server's paths are not a client's business
            found = session.call("search_schema", {"query": "hours of absence"})
            assert not found.is_error, text_of(found)
            assert "absence_records" in text_of(found)
    env.db.close()
    told = saved_file_warnings(caplog)
    assert len(told) == 2, told  # the schema index and the value index, once each, with the folder
    assert all("not-a-folder" in m and "Not a directory" in m for m in told)


def test_a_full_disk_degrades_and_leaves_no_temp_file(
    hr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    monkeypatch.setattr(os, "rename", full)
    env = Environment.open(hr, settings=Settings(cache_dir=cache))
    try:
        listed = env.list_tables(question=QUESTION)
        assert {"employees", "absence_records"} <= {t.name for t in listed.tables}
        assert listed.directive_note is not None and "No space left on device" in listed.directive_note
        assert env.search_schema("hours of absence").hits
    finally:
        env.db.close()
    # No temp file stays behind; the build locks (index/cache.py: one build per cache folder) are empty files.
    locks = sorted(cache.glob("locks/*.lock"))
    assert locks and all(p.stat().st_size == 0 for p in locks)
    left = [p.relative_to(cache) for p in cache.rglob("*") if p not in locks]
    assert sorted(str(p) for p in left) == ["joins", "lexicon", "locks", "schema", "values"], left


def test_sophrosyne_index_on_an_unwritable_cache_says_what_to_fix(hr: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "sophrosyne", "index", str(hr)],
        env={**os.environ, "SOPHROSYNE_CACHE_DIR": str(unwritable(tmp_path))},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "Traceback" not in out
    assert "could not be saved" in out and "Not a directory" in out and "SOPHROSYNE_CACHE_DIR" in out


KILLED_WRITER = """
import os, sys, threading, time
from pathlib import Path
from sophrosyne.database import open_database
from sophrosyne.index import SchemaIndex
from sophrosyne.index.embedders import default_embedder
from sophrosyne.index.schema_index import index_folder
from sophrosyne.index.values import ValueIndex, values_path

db, cache, ready = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
database = open_database(str(db))
catalog = database.catalog()
values = ValueIndex.from_sqlite(catalog, db)
schema = SchemaIndex.build(catalog)
written = threading.Semaphore(0)

def killed_before_the_rename(*args, **kwargs):  # the writer is killed between its write and its rename
    written.release()
    time.sleep(600)

os.replace = os.rename = killed_before_the_rename
threading.Thread(target=values.save, args=(values_path(cache, catalog),), daemon=True).start()
written.acquire()
threading.Thread(target=schema.save, args=(index_folder(cache, catalog, default_embedder()),), daemon=True).start()
written.acquire()
ready.write_text("written")
time.sleep(600)
"""


def leftovers(cache: Path) -> list[Path]:
    """What a writer leaves besides finished entries: names with more than the key (and `.json` or the value
    index's `.v<version>`)."""
    finished = (".json", f".v{VALUES_VERSION}")
    return [p for folder in ("schema", "values") for p in (cache / folder).glob("*.*") if p.suffix not in finished]


def test_temp_files_left_by_a_killed_writer_are_cleaned_when_the_cache_is_opened(hr: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    errors, ready = tmp_path / "writer.err", tmp_path / "ready"
    with errors.open("w") as stderr:
        writer = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(KILLED_WRITER), str(hr), str(cache), str(ready)],
            cwd=ROOT,
            stderr=stderr,
        )
    try:
        started = time.monotonic()
        while not ready.exists():
            assert writer.poll() is None, f"the writer stopped before writing: {errors.read_text()[-2000:]}"
            assert time.monotonic() - started < 120, f"the writer did not write: {errors.read_text()[-2000:]}"
            time.sleep(0.1)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(30)
    left = leftovers(cache)
    assert {p.parent.name for p in left} == {"schema", "values"}, left  # one temp each, as a kill leaves them
    env = Environment.open(hr, settings=Settings(cache_dir=cache))
    try:
        env.warm(wait=True)
    finally:
        env.db.close()
    assert leftovers(cache) == []
    database = open_database(str(hr))
    try:
        assert ValueIndex.load(values_path(cache, database.catalog())).complete  # and the index itself is there
    finally:
        database.close()


def test_only_stale_temp_files_are_cleaned(tmp_path: Path) -> None:
    """Control: a live writer's temp file stays; a dead writer's, or one past the age bound, goes."""
    from sophrosyne.index.cache import STALE_TEMP_S, clean_stale

    folder = tmp_path / "values"
    folder.mkdir()
    key = "0123456789abcdef01234567.json"
    finished = folder / key
    finished.write_text("{}")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine = folder / f"{key}.tmp-{os.getpid()}-a1"
        live = folder / f"{key}.tmp-{sleeper.pid}-b2"
        old = folder / f"{key}.tmp-{os.getpid()}-c3"
        legacy = folder / f"{key}.k3j_9zq1"  # named as before writers named themselves
        for path in (mine, live, old, legacy):
            path.write_text("{}")
        past = time.time() - STALE_TEMP_S - 60
        os.utime(old, (past, past))
        os.utime(legacy, (past, past))
        assert sorted(p.name for p in clean_stale(folder)) == sorted([old.name, legacy.name])
        assert mine.exists() and live.exists() and finished.exists()
    finally:
        sleeper.kill()
        sleeper.wait(30)
    assert clean_stale(folder) == [live]
    assert mine.exists() and finished.exists()


def partial_saved_by_a_server(hr: Path, cache: Path) -> int:
    """A server (unrestricted, so its value index is saved) whose value time limit runs out at once."""
    env = Environment.open(hr, settings=Settings(cache_dir=cache, value_index_s=1e-9))
    try:
        env.warm(wait=True)
        path = values_path(cache, env.full_catalog)
    finally:
        env.db.close()
    saved = ValueIndex.load(path)
    assert saved.complete is False  # completeness is recorded with the index
    return len(saved)


def test_sophrosyne_index_rebuilds_a_partial_index_saved_while_serving(hr: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    partial = partial_saved_by_a_server(hr, cache)
    report = index_database(str(hr), Settings(cache_dir=cache), value_seconds=30.0)
    assert report.values is not None and report.values > partial
    database = open_database(str(hr))
    try:
        saved = ValueIndex.load(values_path(cache, database.catalog()))
    finally:
        database.close()
    assert saved.complete and len(saved) == report.values
    again = index_database(str(hr), Settings(cache_dir=cache), value_seconds=30.0)  # control: a complete one
    assert again.values == report.values  # is reused as it is


def test_a_server_reusing_a_partial_index_says_it_is_partial(hr: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    partial_saved_by_a_server(hr, cache)
    env = Environment.open(hr, settings=Settings(cache_dir=cache))
    try:
        note = env.list_tables(question=QUESTION).directive_note
        assert note is not None and "the value index is partial" in note.lower() and "sophrosyne index" in note
    finally:
        env.db.close()
    index_database(str(hr), Settings(cache_dir=cache), value_seconds=30.0)
    env = Environment.open(hr, settings=Settings(cache_dir=cache))
    try:  # control: once complete, nothing is said
        note = env.list_tables(question=QUESTION).directive_note
        assert note is None or "partial" not in note
    finally:
        env.db.close()


def test_an_index_that_cannot_be_built_is_a_clear_error_not_an_internal_one(
    hr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When even an index in memory cannot be had (the cache fails it otherwise than on saving), list_tables
    lists the tables without directives and says why, and search_schema says what to fix."""
    import sophrosyne.directives.moderator
    from sophrosyne.errors import CacheUnavailable

    def read_only(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(sophrosyne.directives.moderator, "load_or_build", read_only)
    env = Environment.open(hr, settings=Settings(cache_dir=tmp_path / "cache"))
    try:
        for _ in range(2):
            listed = env.list_tables(question=QUESTION)
            assert {"employees", "absence_records"} <= {t.name for t in listed.tables}
            assert not listed.directives
            assert listed.directive_note is not None
            assert "No directives this time: the schema index could not be built" in listed.directive_note
            assert "Read-only file system" in listed.directive_note
            with pytest.raises(CacheUnavailable, match="Read-only file system") as info:
                env.search_schema("hours of absence")
            assert info.value.hint is not None and "SOPHROSYNE_CACHE_DIR" in info.value.hint
    finally:
        env.db.close()
