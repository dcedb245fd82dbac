"""Golden rewrite cases: tests/golden/rewrite/NNN_name.sql holds a role, a dialect, a query and the result.

Set SOPHROSYNE_UPDATE_GOLDEN=1 to write the current output into the files, then review the diff.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from sophrosyne.catalog import Catalog, Column, Table
from sophrosyne.errors import SophrosyneError
from sophrosyne.policy import Policy, load_policy

FOLDER = Path(__file__).parent / "golden" / "rewrite"
CASES = sorted(FOLDER.glob("[0-9]*.sql"))
UPDATE = os.environ.get("SOPHROSYNE_UPDATE_GOLDEN") == "1"


@dataclass
class Case:
    path: Path
    role: str
    dialect: str
    sql: str
    expected: str

    @classmethod
    def read(cls, path: Path) -> Case:
        text = path.read_text()
        head, _, expected = text.partition("-- expected:\n")
        lines = head.splitlines()
        meta = dict(line[3:].split(": ", 1) for line in lines if line.startswith("-- "))
        sql = "\n".join(line for line in lines if not line.startswith("-- "))
        return cls(path, meta["role"], meta["dialect"], sql.strip(), expected.strip())

    def write(self, result: str) -> None:
        head = self.path.read_text().partition("-- expected:\n")[0]
        self.path.write_text(f"{head}-- expected:\n{result}\n")


def golden_catalog() -> Catalog:
    tables: dict[str, Table] = {}
    for statement in sqlglot.parse((FOLDER / "schema.sql").read_text(), read="sqlite"):
        assert isinstance(statement, exp.Create)
        schema = statement.this
        assert isinstance(schema, exp.Schema)
        name = schema.this.name
        columns = [
            Column(c.name, c.args["kind"].sql() if isinstance(c, exp.ColumnDef) and c.args.get("kind") else "")
            for c in schema.expressions
        ]
        kind = "view" if statement.kind == "VIEW" else "table"
        tables[name] = Table(name=name, columns=columns, kind=kind)
    return Catalog(tables=tables, dialect="sqlite")


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(FOLDER / "policy.toml")


def rewritten(case: Case, policy: Policy, catalog: Catalog) -> str:
    try:
        expression = sqlglot.parse_one(case.sql, read=case.dialect)
        result = policy.role(case.role).rewrite(expression, catalog, case.dialect)
    except SophrosyneError as error:
        return f"error {error.code}: {error.message}"
    return result.sql(dialect=case.dialect, pretty=True)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_rewrite_golden(path: Path, policy: Policy) -> None:
    case = Case.read(path)
    result = rewritten(case, policy, golden_catalog())
    if UPDATE:
        case.write(result)
        return
    assert result == case.expected


@pytest.fixture(scope="module")
def golden_db(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    path = tmp_path_factory.mktemp("golden") / "golden.sqlite"
    db = sqlite3.connect(path)
    db.executescript((FOLDER / "schema.sql").read_text())
    db.executescript(
        """
        INSERT INTO departments VALUES ('D001', 'Finance', 10), ('D042', 'Operations', 20);
        INSERT INTO employees VALUES (1, 'Ada', 'D042', NULL, 100), (2, 'Bob', 'D042', 1, 90),
            (3, 'Cy', 'D001', NULL, 120);
        INSERT INTO absence_records VALUES (1, 2, '2025-11-03', 'sick'), (2, 3, '2025-11-04', 'sick');
        INSERT INTO salaries VALUES (1, 100), (2, 90), (3, 120);
        INSERT INTO "Projects" VALUES (1, 'D042', 'Move'), (2, 'D001', 'Audit');
        """
    )
    return db


SQLITE_CASES = [p for p in CASES if "-- dialect: sqlite" in p.read_text()]


@pytest.mark.parametrize("path", SQLITE_CASES, ids=[p.stem for p in SQLITE_CASES])
def test_rewritten_sqlite_cases_run(path: Path, policy: Policy, golden_db: sqlite3.Connection) -> None:
    """Every rewritten SQLite case runs on a real database, except those whose name says it must fail."""
    case = Case.read(path)
    if case.expected.startswith("error "):
        return
    if "fails_in_engine" in path.stem:
        with pytest.raises(sqlite3.OperationalError, match="no such column"):
            golden_db.execute(case.expected)
        return
    golden_db.execute(case.expected).fetchall()
