"""The audit log: one JSONL record per call, safe under concurrent writers, and its summary."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

import pytest
import sqlglot
from rich.console import Console

from sophrosyne.audit import AuditLog, AuditRecord, render_summary, summarize, tables_read
from sophrosyne.errors import UnknownTable
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.policy import Role, TableRule, rewrite_for


def test_call_writes_one_record_with_timing(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log, log.call("s1", "manager", "execute_sql", {"sql": "SELECT 1"}) as record:
        record.sql_written = "SELECT 1"
        record.sql_executed = "SELECT 1"
        record.rows = 1
        record.response_tokens = 12
    (line,) = path.read_text().splitlines()
    data = json.loads(line)
    assert data["session"] == "s1" and data["role"] == "manager" and data["tool"] == "execute_sql"
    assert data["arguments"] == {"sql": "SELECT 1"} and data["rows"] == 1 and data["response_tokens"] == 12
    assert data["time"].endswith("+00:00") and data["ms"] >= 0 and data["error_code"] is None


def test_errors_are_recorded_and_raised(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        with pytest.raises(UnknownTable), log.call("s", "r", "describe_table", {"table": "x"}):
            raise UnknownTable("no table `x`")
        with pytest.raises(KeyError), log.call("s", "r", "list_tables", {}):
            raise KeyError("secret internal detail")
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert (first["error_code"], first["error_message"]) == ("unknown_table", "no table `x`")
    assert (second["error_code"], second["error_message"]) == ("internal", "KeyError")


def test_closed_log_refuses_writes(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a.jsonl")
    log.close()
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.write(AuditRecord("s", "r", "t"))


def _write_many(path: str, worker: int, count: int) -> None:
    log = AuditLog(path)
    for i in range(count):
        log.write(AuditRecord(f"p{worker}", "r", "execute_sql", {"i": i, "pad": "x" * (i * 37 % 5000)}))
    log.close()


def test_concurrent_writers_never_tear_a_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    # Processes first (forked before any thread exists), then threads sharing one log.
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_write_many, args=(str(path), w, 150)) for w in range(2)]
    for process in processes:
        process.start()
    log = AuditLog(path)

    def write_from_thread(worker: int) -> None:
        for i in range(150):
            log.write(AuditRecord(f"t{worker}", "r", "find_rows", {"i": i, "pad": "y" * (i * 53 % 9000)}))

    threads = [threading.Thread(target=write_from_thread, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        process.join()
        assert process.exitcode == 0
    log.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 10 * 150
    sessions = [json.loads(line)["session"] for line in lines]
    assert all(sessions.count(s) == 150 for s in set(sessions))


def test_tables_read_ignores_ctes_and_sees_through_the_rewrite() -> None:
    catalog = Catalog(
        tables={
            "emp": Table("emp", [Column("id", "INTEGER"), Column("dept", "TEXT")]),
            "dept": Table("dept", [Column("code", "TEXT")]),
        }
    )
    role = Role("m", tables={"emp": TableRule(row_filter="dept IN (SELECT code FROM dept)")})
    written = "WITH x AS (SELECT * FROM emp) SELECT * FROM x JOIN main.emp AS e ON e.id = x.id"
    executed = rewrite_for(role, sqlglot.parse_one(written), catalog, "sqlite").sql(dialect="sqlite")
    assert tables_read(written, "sqlite") == ["emp"]
    assert tables_read(executed, "sqlite") == ["dept", "emp"]
    assert tables_read("SELECT (", "sqlite") == []
    assert tables_read(None) == []


def test_summarize_and_render(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        for i in range(5):
            log.write(
                AuditRecord(
                    f"s{i % 2}",
                    "manager" if i % 2 else "admin",
                    "execute_sql",
                    {"sql": f"SELECT {i}"},
                    sql_written=f"SELECT * FROM employees WHERE id = {i}",
                    sql_executed=f"SELECT * FROM employees JOIN departments ON 1 = 1 WHERE id = {i}",
                    rows=i,
                    ms=float(i * 10),
                    response_tokens=100,
                )
            )
        log.write(AuditRecord("s0", "admin", "describe_table", {"table": "nope"}, ms=2, error_code="unknown_table"))
    with path.open("a") as handle:
        handle.write('{"torn": \n[1, 2]\n\n')
    summary = summarize(path, top=3)
    assert summary.calls == 6 and summary.bad_lines == 2 and summary.sessions == 2
    assert summary.calls_per_tool == {"execute_sql": 5, "describe_table": 1}
    assert summary.calls_per_role == {"admin": 4, "manager": 2}
    assert summary.tables_touched == {"employees": 5, "departments": 5}
    assert summary.errors_per_code == {"unknown_table": 1}
    assert [r.ms for r in summary.slowest] == [40.0, 30.0, 20.0]
    assert summary.rows == 10 and summary.response_tokens == 500
    console = Console(record=True, width=140)
    render_summary(summary, console)
    text = console.export_text()
    for expected in ["6 calls in 2 sessions", "execute_sql", "employees", "unknown_table", "Slowest calls", "40.0"]:
        assert expected in text
