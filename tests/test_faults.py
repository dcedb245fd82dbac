"""The fault suite of issue 8: one test per failure seen, each a promise kept (big cases: `pytest -m slow`)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from fixtures.big import distinct_column, synthetic, wide_table
from fixtures.engines import build_sqlite
from fixtures.serving import (
    SLOW_SQL,
    Session,
    connected,
    cpu_seconds,
    http_server,
    stdio_params,
    stdio_server_of,
    text_of,
)
from sophrosyne.environment import Environment
from sophrosyne.errors import InvalidArgument, NotReady, QueryTimeout, SophrosyneError
from sophrosyne.settings import Settings
from sophrosyne.tools.budget import measure

BUDGET = Settings().limits.token_budget
QUESTION = "Which customers in the sales region paid their invoices in euros last month, and how many refunds? "


@pytest.fixture(scope="module")
def hr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("faults") / "hr.sqlite")


@pytest.fixture(scope="module")
def schema_400() -> Path:
    return synthetic(400, 2000)


# -- every response within the token budget ----------------------------------------------------------------


def test_a_1000_column_table_is_cut_by_columns_with_a_note(tmp_path: Path) -> None:
    env = Environment.open(wide_table(tmp_path / "wide.sqlite"))
    described = env.describe_table("wide")
    assert measure(described) <= BUDGET
    assert 0 < len(described.columns) < 1001
    assert described.cut and f"offset={len(described.columns)}" in described.cut
    # Every column is reachable, page by page.
    seen, offset = [c.name for c in described.columns], len(described.columns)
    while offset < 1001:
        page = env.describe_table("wide", offset=offset)
        assert measure(page) <= BUDGET and page.columns
        seen += [c.name for c in page.columns]
        offset += len(page.columns)
    assert len(seen) == 1001 == len(set(seen))
    rows = env.execute_sql("SELECT * FROM wide")
    assert measure(rows) <= BUDGET
    assert rows.cut and "columns" in rows.cut and len(rows.columns) < 1001


def test_echoed_inputs_are_cut_to_the_budget(hr: Path) -> None:
    # A literal past sql_max_literal_chars is refused by default: here the point is the echo, so it may pass.
    env = Environment.open(hr, settings=Settings(sql_max_literal_chars=100_000))
    literal = "x" * 99_000
    result = env.execute_sql(f"SELECT '{literal}' AS v")
    assert measure(result) <= BUDGET
    started = time.monotonic()
    with pytest.raises(InvalidArgument, match="at most 100,000 are read"):
        env.execute_sql("SELECT '" + "x', 'y" * 200_000 + "'")  # a megabyte of strings: refused, not parsed
    assert time.monotonic() - started < 1
    assert measure(env.find_rows("x" * 1000)) <= BUDGET
    for call in (
        lambda: env.find_rows(literal),
        lambda: env.get_distinct_values("departments", "dept_name", search=literal),
        lambda: env.describe_table("t" * 100_000),
        lambda: env.get_distinct_values("departments", "c" * 100_000),
    ):
        with pytest.raises(SophrosyneError) as raised:
            call()
        assert len(str(raised.value)) < 400


def test_directives_on_400_tables_stay_within_the_budget(schema_400: Path) -> None:
    # The token budget is the point here, not the time: on a busy machine the index of 2,000 columns took
    # longer than the 10 s call limit, and the answer had no directives to measure.
    env = Environment.open(schema_400, settings=Settings(timeout_s=60))
    listed = env.list_tables(question=QUESTION)
    assert measure(listed) <= BUDGET
    assert listed.directives, listed.directive_note
    assert listed.tables and listed.cut and "offset=" in listed.cut


@pytest.mark.slow
@pytest.mark.parametrize("tables", [3000, 20_000])
def test_big_schemas_with_a_question_stay_within_budget_and_time(tables: int) -> None:
    env = Environment.open(synthetic(tables, 1_000_000 if tables > 3000 else 100_000))
    for _ in range(3):  # while the index builds, and once it is there
        started = time.monotonic()
        listed = env.list_tables(question=QUESTION * 300)
        assert time.monotonic() - started <= env.settings.limits.timeout_s + 0.5
        assert measure(listed) <= BUDGET
        assert listed.directive_note and "cut to its first" in listed.directive_note


# -- every call bounded in time --------------------------------------------------------------------------------


def test_a_30000_character_question_is_answered_within_timeout(schema_400: Path) -> None:
    env = Environment.open(schema_400, settings=Settings(timeout_s=5))
    env.list_tables(question="warm the index")
    started = time.monotonic()
    listed = env.list_tables(question=(QUESTION * 400)[:30_000], knowledge="refunds refers to returns; " * 2000)
    assert time.monotonic() - started <= 5.0
    assert listed.directive_note and "question was cut to its first 2,000 of 30,000 characters" in (
        listed.directive_note
    )
    assert "knowledge was cut" in listed.directive_note
    assert measure(listed) <= BUDGET


def test_list_tables_keeps_its_deadline_while_the_index_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOPHROSYNE_CACHE_DIR", str(tmp_path / "empty-cache"))
    # 1,000 tables: their index, then their directives, take about as long as this call has.
    env = Environment.open(synthetic(1000, 2000), settings=Settings(timeout_s=2))
    env.read_schema()  # without a limit (a busy machine took longer than 2 s): what is timed is the index
    started = time.monotonic()
    listed = env.list_tables(question=QUESTION)
    # The answer is made after the deadline stops the index's wait: 0.5 s for that on a loaded machine (seen
    # 2.05 s in CI beside three other test runs), as the big-schema test allows.
    assert time.monotonic() - started <= 2 + 0.5
    assert listed.tables
    if not listed.directives:
        # Whichever step the time ran out in, the note says which: the index, or the directives' own work.
        # (In a process that has the embedding model loaded already, the index can be ready in time.)
        assert listed.directive_note
        assert any(
            words in listed.directive_note
            for words in ("still being built", "took longer than the 2 s", "ready only near the end")
        )
    # The schema search waits for the same index within its own limit: hits if it is there by then.
    started = time.monotonic()
    try:
        assert env.search_schema("refunds").hits
    except NotReady as exc:
        assert "still being built" in str(exc)
    assert time.monotonic() - started <= 2


def test_directives_the_index_was_waited_for_too_long_say_to_ask_again(
    hr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sophrosyne.directives import moderator

    monkeypatch.setenv("SOPHROSYNE_CACHE_DIR", str(tmp_path / "empty-cache"))
    real = moderator.compute_directives

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(3.5)  # past the call's 3 s: as if the index had been ready only at its end
        return real(*args, **kwargs)

    monkeypatch.setattr(moderator, "compute_directives", slow)
    # 3 s: the index of this small schema is built within the 2 s the call leaves it, on a loaded machine too.
    with Environment.open(hr, settings=Settings(timeout_s=3)) as env:
        env.read_schema()
        first = env.list_tables(question=QUESTION)  # the index is built within this call
        assert first.directive_note and "ready only near the end" in first.directive_note
        assert "Ask again" in first.directive_note
        again = env.list_tables(question=QUESTION)  # ready from the start: the directives' own work was slow
        assert again.directive_note and "took longer than the 3 s" in again.directive_note


# Servers shared by the timing tests: no directives (their index, built at start, spends CPU of its own while
# CPU is measured), and a 1.5 s limit, so that a slow call ends in time.
QUIET = {"SOPHROSYNE_DIRECTIVES": "none", "SOPHROSYNE_TIMEOUT_S": "1.5"}


@pytest.fixture(scope="module")
def quiet_http(hr: Path) -> Iterator[tuple[int, int]]:
    with http_server(str(hr), env=QUIET) as (process, port):
        yield process.pid, port


@pytest.fixture(scope="module")
def quiet_stdio(hr: Path) -> Iterator[tuple[int, Session]]:
    with connected(stdio_params(str(hr), env=QUIET)) as session:
        session.call("execute_sql", {"sql": "SELECT 1"})
        server = stdio_server_of(os.getpid())
        yield server, session


@pytest.fixture(params=["stdio", "http"])
def served(
    request: pytest.FixtureRequest, quiet_http: tuple[int, int], quiet_stdio: tuple[int, Session]
) -> Iterator[tuple[int, Session]]:
    """The server's process and a session with it, over each transport."""
    if request.param == "stdio":
        yield quiet_stdio
    else:
        pid, port = quiet_http
        with connected(_url(port)) as session:
            yield pid, session


def test_select_1_answers_within_1_s_while_a_slow_call_runs(served: tuple[int, Session]) -> None:
    _, session = served
    slow = session.start("execute_sql", {"sql": SLOW_SQL})
    time.sleep(0.2)
    waits, beside = [], []
    for _ in range(4):
        started = time.monotonic()
        assert not session.call("execute_sql", {"sql": "SELECT 1"}).is_error
        waits.append(time.monotonic() - started)
        beside.append(not slow.done())
        time.sleep(0.1)
    assert max(waits) < 1.0, waits
    assert beside[0], (waits, beside)  # answered while the slow call still ran (it ends at 1.5 s)
    result = slow.result(timeout=15)
    assert result.is_error and "1.5 s" in text_of(result)


def test_a_call_given_up_by_its_client_stops_its_statement(served: tuple[int, Session]) -> None:
    pid, session = served
    with pytest.raises(Exception):  # noqa: B017 - the client's own timeout, whatever its type
        session.call("execute_sql", {"sql": SLOW_SQL}, timeout=0.3)
    time.sleep(0.2)
    before = cpu_seconds(pid)
    time.sleep(0.8)
    # Had the statement gone on, the server would use a whole core until its 1.5 s limit.
    assert (cpu_seconds(pid) - before) / 0.8 < 0.3


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


# -- start-up in seconds ------------------------------------------------------------------------------------


def _handshake_seconds(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds from spawn to the answers of the handshake and of tools/list."""
    started = time.monotonic()
    with connected(stdio_params(*args, env=env)) as session:
        initialized = time.monotonic() - started
        session.portal.call(session.client.list_tools)
        listed = time.monotonic() - started
    return initialized, listed


def test_initialize_and_tools_list_within_2_s_of_spawn(hr: Path, quiet_stdio: tuple[int, Session]) -> None:
    # The server started for quiet_stdio kept its answers, as any start after an install does.
    initialized, listed = _handshake_seconds([str(hr)], QUIET)
    assert initialized <= 2.0 and listed <= 2.0, (initialized, listed)


@pytest.mark.slow
def test_initialize_and_tools_list_within_2_s_of_spawn_on_20000_tables(tmp_path: Path) -> None:
    db = synthetic(20_000, 1_000_000)
    cache = {"SOPHROSYNE_CACHE_DIR": str(tmp_path)}
    _handshake_seconds([str(db)], cache)  # the first start of this server keeps its answers
    initialized, listed = _handshake_seconds([str(db)], cache)
    assert initialized <= 2.0 and listed <= 2.0, (initialized, listed)


def test_tools_wait_for_the_schema_within_their_deadline_or_say_it_is_loading(tmp_path: Path) -> None:
    db = synthetic(400, 2000)
    env = Environment.open(db, settings=Settings(timeout_s=0.01), probe=False)
    with pytest.raises(NotReady, match="still being read"):
        env.list_tables()
    patient = Environment.open(db, settings=Settings(timeout_s=10), probe=False)
    assert patient.list_tables().total > 300


# -- a live schema ----------------------------------------------------------------------------------------


def _eventually(check: object, seconds: float = 10.0) -> float:
    """Seconds until `check()` is true; fails after `seconds`."""
    started = time.monotonic()
    while True:
        try:
            if check():  # type: ignore[operator]
                return time.monotonic() - started
        except Exception:
            pass
        if time.monotonic() - started > seconds:
            pytest.fail(f"not seen within {seconds} s")
        time.sleep(0.2)


def test_a_table_created_in_sqlite_is_seen(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "live.sqlite")
    env = Environment.open(db, settings=Settings(schema_check_s=0.2))
    assert "late_arrival" not in {t.name for t in env.list_tables().tables}
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE late_arrival (id INTEGER PRIMARY KEY, note TEXT)")
        conn.commit()
    seen = _eventually(lambda: "late_arrival" in {t.name for t in env.list_tables().tables})
    assert seen <= 10
    assert env.describe_table("late_arrival").columns[1].name == "note"


def test_a_replaced_sqlite_file_is_served_within_10_s(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "served.sqlite")
    env = Environment.open(db)
    assert env.execute_sql("SELECT COUNT(*) FROM departments").rows == [[5]]
    replacement = tmp_path / "new.sqlite"
    with closing(sqlite3.connect(replacement)) as conn:
        conn.execute("CREATE TABLE shipments (id INTEGER PRIMARY KEY, port TEXT)")
        conn.execute("INSERT INTO shipments VALUES (1, 'Rotterdam')")
        conn.commit()
    os.replace(replacement, db)
    seen = _eventually(lambda: env.execute_sql("SELECT port FROM shipments").rows == [["Rotterdam"]])
    assert seen <= 10
    assert [t.name for t in env.list_tables().tables] == ["shipments"]


def test_a_removed_file_is_a_clear_error_until_it_is_back(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "moved.sqlite")
    env = Environment.open(db)
    env.list_tables()
    aside = tmp_path / "aside.sqlite"
    db.rename(aside)
    for call in (lambda: env.execute_sql("SELECT 1"), env.list_tables):
        with pytest.raises(Exception, match="is gone") as raised:
            call()
        assert "\n" not in str(raised.value)
    aside.rename(db)
    assert env.execute_sql("SELECT COUNT(*) FROM departments").rows == [[5]]


# -- no false negatives in value search ------------------------------------------------------------------


@pytest.mark.parametrize("rows", [pytest.param(1_000_000, marks=pytest.mark.slow), 120_000])
def test_a_value_in_a_column_of_many_distinct_values_is_found_or_coverage_stated(rows: int, tmp_path: Path) -> None:
    db = distinct_column(tmp_path / "distinct.sqlite", rows)
    # The column is too large to keep in memory (more than max_distinct values): it is searched live.
    settings = Settings(distinct_scan_rows=20_000)
    env = Environment.open(db, settings=settings)
    env.values.max_distinct = rows // 10
    wanted = f"P{rows - 7:07d}"  # near the end: a prefix search would never reach it
    found = env.get_distinct_values("people", "code", search=wanted.lower())
    if found.values:
        assert [(v.value, v.match) for v in found.values] == [(wanted, "exact")]
    else:
        assert found.note and "Searched the first" in found.note and "not checked" in found.note
    assert found.note and ("Searched all" in found.note or "Searched the first" in found.note)
    absent = env.get_distinct_values("people", "code", search="Q9999999")
    assert not absent.values
    assert absent.note and ("Searched all" in absent.note or "not checked" in absent.note)
    # The background load says why the values are not kept.
    _eventually(lambda: env.values.too_many((env.db.name, "default", "people", "code")))
    again = env.get_distinct_values("people", "code", search="Q9999999")
    assert again.note and "not kept in memory" in again.note and "distinct values" in again.note


def test_search_over_a_large_table_stops_at_the_deadline_and_says_how_far_it_got(tmp_path: Path) -> None:
    db = distinct_column(tmp_path / "slow.sqlite", 300_000)
    env = Environment.open(db, settings=Settings(distinct_scan_rows=1000, timeout_s=0.6))
    env.values.max_distinct = 100
    env.read_schema()  # the search's deadline is the point: at load 20 the schema was not read within 0.6 s
    started = time.monotonic()
    result = env.get_distinct_values("people", "code", search="nothing like it")
    assert time.monotonic() - started < 1.5
    assert not result.values and result.note
    assert "Searched the first" in result.note or "did not finish" in result.note or "Searched all" in result.note


# -- clear errors for bad targets and arguments ---------------------------------------------------------------


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from sophrosyne.cli.app import app

    return CliRunner().invoke(app, list(args))


def _one_line_error(result: Any, *words: str) -> None:
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and all(w in lines[0] for w in words), lines
    assert all(line.startswith(("error: ", "hint: ")) for line in lines), lines


@pytest.fixture(scope="module")
def bad_targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad")
    text = folder / "notes.db"
    text.write_text("this is not a database\n" * 100)
    (folder / "dir.sqlite").mkdir()
    return {"text": text, "folder": folder / "dir.sqlite", "missing": folder / "missing.sqlite"}


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("text", ["is not a SQLite or DuckDB database"]),
        ("folder", ["is a folder"]),
        ("missing", ["does not exist"]),
    ],
)
def test_a_bad_file_is_one_line(bad_targets: dict[str, Path], target: str, words: list[str]) -> None:
    _one_line_error(_cli("tables", str(bad_targets[target])), *words)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("oracle://scott@host/db", ["the `oracle` engine is not supported"]),
        ("postgresql://nobody@127.0.0.1:1/none", ["cannot connect"]),
        ("notes.txt", ["is neither a SQLAlchemy URL"]),
    ],
)
def test_a_bad_url_is_one_line(url: str, words: list[str]) -> None:
    _one_line_error(_cli("tables", url), *words)


def test_a_non_database_file_served_gives_clients_a_one_line_error(bad_targets: dict[str, Path]) -> None:
    from sophrosyne.serve.server import build_server

    # As `serve` opens it: no probe, the server starts, and each call says what is wrong.
    server = build_server(Environment.open(bad_targets["text"], probe=False))
    with connected(server) as session:
        result = session.call("list_tables", {})
        assert result.is_error
        assert "is not a SQLite or DuckDB database" in text_of(result)
        assert "Traceback" not in text_of(result) and "\n" not in text_of(result).strip()


def test_a_locked_file_is_one_line_then_served_once_free(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "locked.sqlite")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        _one_line_error(_cli("tables", str(db)), "is locked by another process")
        env = Environment.open(db, settings=Settings(timeout_s=1), probe=False)
        with pytest.raises(Exception, match="locked"):
            env.execute_sql("SELECT 1")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert env.execute_sql("SELECT COUNT(*) FROM departments").rows == [[5]]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: a permission error cannot happen")
def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    db = build_sqlite(tmp_path / "secret.sqlite")
    db.chmod(0)
    _one_line_error(_cli("tables", str(db)), "permission denied")


@pytest.mark.parametrize("name", ["a#b.sqlite", "what?.sqlite", "with space.sqlite", "odd #?& mix.duckdb"])
def test_paths_with_hash_question_mark_and_spaces_open_exactly_as_given(name: str, tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    source = build_sqlite(tmp_path / "hr.sqlite")
    if name.endswith(".duckdb"):
        from fixtures.engines import build_duckdb

        source = build_duckdb(tmp_path / "hr.duckdb")
    shutil.copy(source, folder / name)
    before = sorted(p.name for p in folder.iterdir())
    env = Environment.open(folder / name)
    assert env.execute_sql("SELECT COUNT(*) FROM departments").rows == [[5]]
    with pytest.raises(Exception, match=r"not allowed|read-only|read only"):
        env.execute_sql("DELETE FROM departments")
    env.db.close()
    assert sorted(p.name for p in folder.iterdir()) == before  # no other file opened or created


def test_argument_errors_are_one_plain_sentence_over_mcp(hr: Path) -> None:
    from sophrosyne.serve.server import build_server

    cases = [
        ("get_distinct_values", {"table": "departments", "column": "dept_name", "limit": "many"}, "must be a number"),
        ("get_distinct_values", {"table": "departments"}, "needs `column`"),
        ("describe_table", {"table": ["a", "b"]}, "must be text"),
        ("execute_sql", {"sql": "SELECT 1", "limit": 0}, "must be 1 or more"),
        ("search_schema", {"query": "x", "k": -1}, "must be 1 or more"),
        ("list_tables", {"offset": -5}, "must be 0 or more"),
    ]
    with connected(build_server(Environment.open(hr))) as session:
        for tool, arguments, words in cases:
            result = session.call(tool, arguments)
            text = text_of(result)
            assert result.is_error and words in text, (tool, text)
            assert "pydantic" not in text and "https://" not in text and "\n" not in text.strip(), text
            assert not text.startswith("Error executing tool"), text


def test_a_capped_limit_says_so(hr: Path) -> None:
    env = Environment.open(hr)
    result = env.execute_sql("SELECT * FROM employees", limit=5000)
    assert result.note == "`limit` 5,000 was capped to 200 (the server's row_cap)."
    values = env.get_distinct_values("employees", "full_name", limit=5000)
    assert values.note and "capped to 1,000" in values.note


def test_no_traceback_reaches_a_client_or_a_user(hr: Path, tmp_path: Path) -> None:
    from sophrosyne.serve.server import build_server

    env = Environment.open(hr)
    env.db.engine = None  # type: ignore[assignment]  # any internal failure
    with connected(build_server(env)) as session:
        result = session.call("execute_sql", {"sql": "SELECT 1"})
        assert result.is_error and text_of(result) == "internal error; the server log has the details."
    policy = tmp_path / "broken.toml"
    policy.write_text("[roles.x\n")
    _one_line_error(_cli("tables", str(hr), "--policy", str(policy)), "not valid TOML")


def test_a_slow_statement_error_names_the_calls_limit(hr: Path) -> None:
    env = Environment.open(hr, settings=Settings(timeout_s=0.5))
    with pytest.raises(QueryTimeout, match=r"longer than the 0.5 s timeout"):
        env.execute_sql(SLOW_SQL)
