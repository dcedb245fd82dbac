"""Write and escape attempts through every tool, and straight at the read-only session, change nothing."""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.engines import SERVER_ENGINES, content_checksum, sha256_file
from sophrosyne.database import open_database
from sophrosyne.environment import Environment
from sophrosyne.errors import SophrosyneError, UnknownColumn, UnknownTable

# `{out}` is a path beside the database (or in /tmp for a server) that no attempt may create.
STATEMENTS = [
    "DELETE FROM notes",
    "UPDATE employees SET department = 'D100'",
    "INSERT INTO departments VALUES ('D999', 'Evil', 1)",
    "REPLACE INTO departments VALUES ('D017', 'Evil', 1)",
    "DROP TABLE notes",
    "DROP VIEW department_headcount",
    "CREATE TABLE evil (a INTEGER)",
    "ALTER TABLE notes ADD COLUMN evil INTEGER",
    "TRUNCATE TABLE notes",
    "SELECT 1; DROP TABLE notes",
    "SELECT 1 /* ; */; DELETE FROM notes",
    "SELECT 1 -- comment\n; DELETE FROM notes",
    "WITH d AS (DELETE FROM notes RETURNING *) SELECT * FROM d",
    "SELECT * INTO evil FROM notes",
    "CREATE TABLE evil AS SELECT * FROM notes",
    "SELECT * FROM notes FOR UPDATE",
    "MERGE INTO notes USING departments ON 1 = 1 WHEN MATCHED THEN DELETE",
    "BEGIN",
    "COMMIT",
    "SET default_transaction_read_only = off",
    "SET SESSION TRANSACTION READ WRITE",
    "PRAGMA query_only = 0",
    "PRAGMA writable_schema = 1",
    "ATTACH DATABASE '{out}' AS evil",
    "VACUUM",
    "VACUUM INTO '{out}'",
    "COPY notes TO '{out}'",
    "COPY (SELECT * FROM notes) TO '{out}'",
    "EXPORT DATABASE '{out}'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SELECT load_extension('{out}')",
    "SELECT writefile('{out}', 'x')",
    "SELECT * FROM notes INTO OUTFILE '{out}'",
    "SELECT 1 INTO DUMPFILE '{out}'",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT lo_export(1, '{out}')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "CALL evil()",
    "GRANT ALL ON notes TO PUBLIC",
    "LOCK TABLE notes",
    "CHECKPOINT",
    "EXPLAIN DELETE FROM notes",
    "EXPLAIN ANALYZE DELETE FROM notes",
    "EXPLAIN QUERY PLAN DELETE FROM notes",
    "SHOW TABLES",
    "DESCRIBE notes",
    "PREPARE p AS DELETE FROM notes",
    "EXECUTE p",
    "DO $$ BEGIN DELETE FROM notes; END $$",
    "HANDLER notes OPEN",
    "SELECT * FROM notes; COMMIT",
]
HOSTILE_NAMES = [
    'notes"; DROP TABLE notes; --',
    "notes`; DROP TABLE notes; --",
    "notes'; DROP TABLE notes; --",
    "notes; DELETE FROM notes",
    "notes]; DROP TABLE notes; --",
    "x' OR '1'='1",
]
HOSTILE_TERMS = [
    "'; DROP TABLE notes; --",
    "%' OR 1=1; DELETE FROM notes; --",
    '"); DELETE FROM notes; --',
    "\\'; DELETE FROM notes; --",
    "_%!",
]


@pytest.fixture(scope="module")
def outside(target: str, engine: str) -> Iterator[Path]:
    """A folder where an escape would write; the file engines use the database's own folder."""
    if engine in SERVER_ENGINES:
        folder = Path("/tmp") / f"soph_escape_{secrets.token_hex(4)}"
        folder.mkdir(mode=0o777)
        folder.chmod(0o777)  # so that a server running as another user could write, were it allowed to
    else:
        folder = Path(target).parent
    yield folder
    if engine in SERVER_ENGINES:
        for path in folder.iterdir():
            path.unlink(missing_ok=True)
        folder.rmdir()


@pytest.fixture
def fingerprint(target: str, engine: str, outside: Path) -> Callable[[], object]:
    """Database content and the files beside it: the file bytes, or an ordered dump of every table."""

    def take() -> object:
        files = sorted(os.listdir(outside))
        if engine in SERVER_ENGINES:
            return content_checksum(engine, target), files
        return sha256_file(target), files

    return take


@pytest.fixture
def unchanged(fingerprint: Callable[[], object]) -> Iterator[None]:
    before = fingerprint()
    yield
    assert fingerprint() == before, "the database or its folder changed"


def statement(template: str, outside: Path) -> str:
    return template.replace("{out}", str(outside / "escape.out"))


def refused(call: Callable[[], object], error: type[Exception] = SophrosyneError) -> bool:
    try:
        call()
    except error:
        return True
    return False


@pytest.mark.usefixtures("unchanged")
def test_execute_sql_refuses_writes_and_escapes(env: Environment, outside: Path) -> None:
    allowed = [t for t in STATEMENTS if not refused(lambda t=t: env.execute_sql(statement(t, outside)))]
    assert allowed == []


@pytest.mark.usefixtures("unchanged")
def test_explain_sql_refuses_writes_and_escapes(env: Environment, outside: Path) -> None:
    allowed = [t for t in STATEMENTS if not refused(lambda t=t: env.explain_sql(statement(t, outside)))]
    assert allowed == []


@pytest.mark.usefixtures("unchanged")
def test_table_arguments_are_names_not_sql(env: Environment) -> None:
    calls: list[Callable[[str], object]] = [
        env.describe_table,
        lambda name: env.get_distinct_values(name, "body"),
        lambda name: env.get_distinct_values(name, "body", search="x"),
        lambda name: env.find_rows("x", table=name),
    ]
    accepted = [
        (i, n)
        for i, call in enumerate(calls)
        for n in HOSTILE_NAMES
        if not refused(functools.partial(call, n), UnknownTable)
    ]
    assert accepted == []


@pytest.mark.usefixtures("unchanged")
def test_column_arguments_are_names_not_sql(env: Environment) -> None:
    columns = [name.replace("notes", "body") for name in HOSTILE_NAMES]
    calls: list[Callable[[str], object]] = [
        lambda column: env.get_distinct_values("notes", column),
        lambda column: env.get_distinct_values("notes", column, search="x"),
        lambda column: env.find_rows("x", table="notes", columns=[column]),
    ]
    accepted = [
        (i, c)
        for i, call in enumerate(calls)
        for c in columns
        if not refused(functools.partial(call, c), UnknownColumn)
    ]
    assert accepted == []
    # Without a table, columns that no table has are simply not searched.
    assert all(env.find_rows("x", columns=[c]).matches == [] for c in columns)


@pytest.mark.usefixtures("unchanged")
def test_search_terms_are_values_not_sql(env: Environment) -> None:
    for term in HOSTILE_TERMS:
        assert env.find_rows(term).matches == [], term
        assert all(v.score != 100 for v in env.get_distinct_values("notes", "body", search=term).values), term


@pytest.mark.usefixtures("unchanged")
def test_questions_and_knowledge_are_text_not_sql(env: Environment) -> None:
    for text in HOSTILE_TERMS + HOSTILE_NAMES:
        listing = env.list_tables(question=text, knowledge=text)
        assert {t.name for t in listing.tables} >= {"notes", "employees"}
    assert env.list_sources().sources[0].tables == 6


def test_nul_in_a_term_is_refused_cleanly(env: Environment) -> None:
    """A NUL cannot be sent safely to every engine: refusing it with a reason is fine, crashing is not."""
    for call in (lambda: env.find_rows("a\x00b"), lambda: env.get_distinct_values("notes", "body", search="a\x00b")):
        try:
            result = call()
        except SophrosyneError as exc:
            assert "NUL" in exc.message
        else:
            assert getattr(result, "matches", None) in (None, [])


# -- layer 3 alone: the engine's read-only session, with the guard bypassed ----------------------------------

ENGINE_WRITES: dict[str, list[str]] = {
    "sqlite": ["PRAGMA query_only = 0", "PRAGMA journal_mode = WAL", "PRAGMA user_version = 7", "VACUUM"],
    "duckdb": ["SET enable_external_access = true"],
    "postgres": [
        "SET TRANSACTION READ WRITE",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "COMMIT; SET default_transaction_read_only = off; DELETE FROM notes",
        "TRUNCATE notes CASCADE",
    ],
    "mariadb": [
        "SET SESSION TRANSACTION READ WRITE",
        "COMMIT",
        "CREATE TEMPORARY TABLE evil (a INT)",
        "DROP DATABASE x",
    ],
}
COMMON_WRITES = [
    "DELETE FROM notes",
    "UPDATE employees SET department = 'D100'",
    "INSERT INTO departments VALUES ('D999', 'Evil', 1)",
    "DROP TABLE absence_records",
    "DROP VIEW department_headcount",
    "CREATE TABLE evil (a INTEGER)",
    "ALTER TABLE notes ADD COLUMN evil INTEGER",
    "CREATE INDEX evil ON notes (tag)",
]
# Statements that write a file outside the database: engine read-only modes do not stop them; the guard does.
FILE_ESCAPES: dict[str, list[str]] = {
    "sqlite": ["ATTACH DATABASE '{out}' AS evil", "VACUUM INTO '{out}'"],
    "duckdb": ["COPY notes TO '{out}'", "EXPORT DATABASE '{out}'"],
    "postgres": ["COPY (SELECT * FROM notes) TO '{out}'"],
    "mariadb": ["SELECT * FROM notes INTO OUTFILE '{out}'"],
}
FILE_ESCAPE_REASONS = {
    "postgres": "a superuser's READ ONLY transaction may still COPY TO a server file: connect as a role without "
    "pg_write_server_files (documented deployment advice; only the guard stops it here)",
    "mariadb": "a READ ONLY transaction still runs SELECT ... INTO OUTFILE for a user with FILE privilege: connect "
    "as a user without FILE (documented deployment advice; only the guard stops it here)",
}


def engine_writes(engine: str) -> list[str]:
    return COMMON_WRITES + ENGINE_WRITES[engine]


@pytest.mark.usefixtures("unchanged")
def test_read_only_session_refuses_writes_without_the_guard(target: str, engine: str) -> None:
    db = open_database(target)
    try:
        for sql in engine_writes(engine):
            # Each attempt is followed by a plain write on a pooled connection: the first may have tried to
            # unlock the session for the next.
            for attempt in (sql, "DELETE FROM notes"):
                try:
                    db.run(attempt)
                except SophrosyneError:
                    continue
                # A statement that "succeeds" must not have unlocked anything: the next write still fails.
                assert attempt != "DELETE FROM notes", f"{sql!r} unlocked writes"
    finally:
        db.close()


def test_read_only_session_refuses_file_escapes_without_the_guard(
    target: str, engine: str, outside: Path, request: pytest.FixtureRequest
) -> None:
    if engine in FILE_ESCAPE_REASONS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=FILE_ESCAPE_REASONS[engine]))
    db = open_database(target)
    written = []
    try:
        for template in FILE_ESCAPES[engine]:
            out = outside / f"layer3_{secrets.token_hex(3)}"
            with contextlib.suppress(SophrosyneError):
                db.run(template.replace("{out}", str(out)))
            if out.exists():
                written.append(template)
    finally:
        db.close()
        for path in outside.glob("layer3_*"):
            if path.is_dir():
                for child in path.iterdir():
                    child.unlink()
                path.rmdir()
            else:
                path.unlink()
    assert written == []
