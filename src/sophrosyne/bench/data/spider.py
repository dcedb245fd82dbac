"""Spider dev: its questions, schemas and SQLite files, for directives and scoring."""

from __future__ import annotations

from pathlib import Path

from sophrosyne.bench.data.files import load_custom, load_questions
from sophrosyne.bench.data.folders import dataset_folder
from sophrosyne.bench.data.suites import runnable
from sophrosyne.bench.data.types import Dataset, Suite


def load_spider_dev(root: Path) -> Dataset:
    folder = dataset_folder(root, "spider-dev", "spider")
    return load_custom(folder / "dev.json", folder / "tables.json", None, folder / "database", name="spider-dev")


def spider_dev_suite(root: Path, db_url: str | None) -> Suite:
    folder = dataset_folder(root, "spider-dev", "spider")
    suite = Suite("spider-dev", "spider", "sqlite", load_questions(folder / "dev.json"))
    return runnable(suite, folder / "database", folder / "tables.json", db_url)
