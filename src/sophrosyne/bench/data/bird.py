"""BIRD: dev for directives and scoring, mini-dev on SQLite, MySQL and PostgreSQL for scoring."""

from __future__ import annotations

from pathlib import Path

from sophrosyne import engines
from sophrosyne.bench.data.files import load_custom, load_questions
from sophrosyne.bench.data.folders import dataset_folder
from sophrosyne.bench.data.suites import describe, on_server, runnable
from sophrosyne.bench.data.types import Dataset, Suite

MINI_DEV = {"bird-mini-dev": "sqlite", "bird-mini-dev-mysql": "mysql", "bird-mini-dev-postgresql": "postgresql"}


def load_bird_dev(root: Path) -> Dataset:
    """BIRD dev with its column descriptions and SQLite files."""
    folder = dataset_folder(root, "bird-dev", "bird_dev")
    return load_custom(
        folder / "dev.json",
        folder / "dev_tables.json",
        folder / "dev_databases",
        folder / "dev_databases",
        name="bird-dev",
    )


def bird_dev_suite(root: Path, db_url: str | None) -> Suite:
    folder = dataset_folder(root, "bird-dev", "bird_dev")
    return runnable(
        Suite("bird-dev", "bird", "sqlite", load_questions(folder / "dev.json")),
        folder / "dev_databases",
        folder / "dev_tables.json",
        db_url,
    )


def mini_dev_suite(name: str, root: Path, db_url: str | None) -> Suite:
    """One dialect of mini-dev: SQLite runs on BIRD dev's files, the servers on `db_url`."""
    dialect = MINI_DEV[name]
    folder = dataset_folder(root, name, "bird_mini_dev")
    questions = load_questions(folder / f"mini_dev_{dialect}.json")
    engine = engines.for_dialect(dialect)  # mini-dev says `postgresql` where sqlglot says `postgres`
    suite = Suite(name, "bird", engine.name, questions)
    if isinstance(engine, engines.FileEngine):  # its databases are the shipped files
        return runnable(suite, root / "bird_dev" / "dev_databases", folder / "dev_tables.json", db_url)
    describe(suite, folder / "dev_tables.json", root / "bird_dev" / "dev_databases")
    return on_server(suite, db_url)
