"""The shipped demo database is what scripts/build_demo.py builds, and it tells the article's story."""

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "build_demo.py"
SHIPPED = ROOT / "src" / "sophrosyne" / "data" / "demo.sqlite"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(f"file:{SHIPPED}?mode=ro", uri=True)) as conn:
        yield conn


def test_rebuild_is_byte_identical_to_the_shipped_file(tmp_path: Path) -> None:
    rebuilt = tmp_path / "demo.sqlite"
    subprocess.run([sys.executable, str(SCRIPT), str(rebuilt)], check=True, capture_output=True, text=True)
    assert sha256(rebuilt) == sha256(SHIPPED), "demo.sqlite drifted: rerun scripts/build_demo.py and commit"


def test_shipped_file_is_small() -> None:
    assert SHIPPED.stat().st_size < 2 * 1024 * 1024


def test_three_departments_match_operations(db: sqlite3.Connection) -> None:
    rows = db.execute(
        "SELECT dept_code, dept_name FROM departments WHERE dept_name LIKE '%operations%' ORDER BY dept_name"
    ).fetchall()
    assert rows == [
        ("D063", "Field Operations"),
        ("D017", "IT Operations"),
        ("D042", "Operations and Logistics"),
    ]


def test_employees_store_department_codes_not_labels(db: sqlite3.Connection) -> None:
    values = [v for (v,) in db.execute("SELECT DISTINCT department FROM employees")]
    assert "D042" in values
    assert all(len(v) == 4 and v[0] == "D" and v[1:].isdigit() for v in values)
    assert db.execute("SELECT COUNT(*) FROM employees WHERE department = 'Operations'").fetchone() == (0,)


def test_d042_had_unexplained_absences_in_november_2025(db: sqlite3.Connection) -> None:
    distinct, records = db.execute(
        """
        SELECT COUNT(DISTINCT a.employee_id), COUNT(*)
        FROM absence_records a
        JOIN employees e ON a.employee_id = e.employee_id
        WHERE e.department = 'D042'
          AND a.absence_date >= '2025-11-01'
          AND a.absence_date < '2025-12-01'
        """
    ).fetchone()
    assert distinct > 0
    assert records > distinct  # COUNT(*) would overstate the answer, as the article warns


def test_every_foreign_key_resolves(db: sqlite3.Connection) -> None:
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    declared = {
        table: db.execute(f"PRAGMA foreign_key_list({table})").fetchall()
        for table in ("employees", "attendance", "approved_leave", "absence_records")
    }
    assert all(declared.values())
    assert any(fk[2] == "departments" and fk[3] == "department" for fk in declared["employees"])


def test_row_estimates_are_analyzed(db: sqlite3.Connection) -> None:
    tables = {t for (t,) in db.execute("SELECT DISTINCT tbl FROM sqlite_stat1")}
    assert {"employees", "absence_records", "attendance", "approved_leave"} <= tables
