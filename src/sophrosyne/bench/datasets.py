"""Benchmark datasets: BIRD dev and Spider dev from `../shared/datasets/`, or a custom questions + tables.json set."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table, load_bird_descriptions

DATASETS = ("bird-dev", "spider-dev", "spider2-cloud")


@dataclass(frozen=True)
class Question:
    id: str
    db_id: str
    question: str
    knowledge: str  # BIRD calls it evidence
    sql: str
    difficulty: str = "unknown"


@dataclass
class Dataset:
    name: str
    questions: list[Question]
    catalogs: dict[str, Catalog]
    database_files: dict[str, Path] = field(default_factory=dict)
    # Gold tables per question id, when the loader resolves them itself (Spider 2.0: qualified names,
    # wildcard tables); otherwise the bench parses each question's SQL as SQLite.
    gold: dict[str, frozenset[str]] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)  # questions the loader left out, and why


def datasets_root(project_root: Path | None = None) -> Path:
    """`$SOPHROSYNE_DATASETS`, else `../shared/datasets` beside the project root in a source checkout, else
    `datasets/` in the current folder (an installed package has no project root: its folder is the venv's)."""
    env = os.environ.get("SOPHROSYNE_DATASETS")
    if env:
        return Path(env)
    root = project_root or Path(__file__).resolve().parents[3]
    if project_root is None and not (root / "pyproject.toml").is_file():
        return Path.cwd() / "datasets"
    return root.parent / "shared" / "datasets"


def dataset_folder(root: Path, name: str, folder: str) -> Path:
    """The folder of a dataset, or an error that says where it was looked for and how to point elsewhere."""
    path = root / folder
    if not path.is_dir():
        raise ConfigError(
            f"no data for {name}: the folder {path} does not exist.",
            hint=f"Put the {name} files in {folder}/ under a datasets folder and set SOPHROSYNE_DATASETS to it "
            "(docs/bench.md says what each dataset holds and where it comes from); `bench directives` also takes "
            "--questions and --tables for your own files.",
        )
    return path


def catalog_from_spider(entry: dict[str, Any]) -> Catalog:
    """A Catalog from one entry of a Spider/BIRD `tables.json`."""
    names: list[str] = entry["table_names_original"]
    tables = [Table(name=name, columns=[]) for name in names]
    columns: list[tuple[int, str]] = [(int(t), str(c)) for t, c in entry["column_names_original"]]
    types: list[str] = entry.get("column_types", ["text"] * len(columns))
    for index, (table_index, name) in enumerate(columns):
        if table_index < 0:
            continue
        tables[table_index].columns.append(Column(name=name, type=str(types[index]).upper()))

    def column_at(index: int) -> tuple[Table, str]:
        table_index, name = columns[index]
        return tables[table_index], name

    for key in entry.get("primary_keys", []):
        for index in key if isinstance(key, list) else [key]:
            table, name = column_at(int(index))
            table.primary_key.append(name)
            column = table.column(name)
            if column is not None:
                column.primary_key = True
    for source, target in entry.get("foreign_keys", []):
        table, name = column_at(int(source))
        ref_table, ref_name = column_at(int(target))
        table.foreign_keys.append(ForeignKey([name], ref_table.name, [ref_name]))
    return Catalog(tables={t.name: t for t in tables}, dialect="sqlite")


def load_catalogs(tables_json: Path, db_ids: Iterable[str] | None = None) -> dict[str, Catalog]:
    try:
        entries = json.loads(Path(tables_json).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read tables file {tables_json}: {exc}.") from None
    wanted = set(db_ids) if db_ids is not None else None
    return {e["db_id"]: catalog_from_spider(e) for e in entries if wanted is None or e["db_id"] in wanted}


def load_questions(path: Path) -> list[Question]:
    """Questions from a JSON list or JSONL file with `question`, `knowledge` (BIRD's `evidence`), `SQL` (or `query`),
    `db_id`."""
    text = Path(path).read_text()
    try:
        rows = (
            json.loads(text)
            if text.lstrip().startswith("[")
            else [json.loads(line) for line in text.splitlines() if line.strip()]
        )
    except ValueError as exc:
        raise ConfigError(f"cannot parse questions file {path}: {exc}.") from None
    return [
        Question(
            id=str(row.get("question_id", i)),
            db_id=row["db_id"],
            question=row["question"],
            knowledge=row.get("knowledge") or row.get("evidence") or "",
            sql=row.get("SQL") or row.get("query") or "",
            difficulty=row.get("difficulty", "unknown"),
        )
        for i, row in enumerate(rows)
    ]


def load_custom(
    questions: Path,
    tables: Path,
    descriptions: Path | None = None,
    databases: Path | None = None,
    name: str = "custom",
) -> Dataset:
    """A dataset from files; `descriptions` holds `<db>/database_description/*.csv` or `<db>/*.csv`;
    `databases` holds `<db>/<db>.sqlite` files."""
    items = load_questions(questions)
    catalogs = load_catalogs(tables, {q.db_id for q in items})
    missing = sorted({q.db_id for q in items} - set(catalogs))
    if missing:
        raise ConfigError(f"no schema in {tables} for database(s) {', '.join(missing)}.")
    if descriptions is not None:
        for db_id, catalog in catalogs.items():
            for folder in (Path(descriptions) / db_id / "database_description", Path(descriptions) / db_id):
                if folder.is_dir():
                    load_bird_descriptions(catalog, folder)
                    break
    files: dict[str, Path] = {}
    if databases is not None:
        for db_id in catalogs:
            path = Path(databases) / db_id / f"{db_id}.sqlite"
            if path.exists():
                files[db_id] = path
    return Dataset(name, items, catalogs, files)


def load_dataset(name: str, root: Path | None = None) -> Dataset:
    """`bird-dev`, `spider-dev` or `spider2-cloud` from the shared datasets folder."""
    root = root or datasets_root()
    if name == "bird-dev":
        folder = dataset_folder(root, name, "bird_dev")
        return load_custom(
            folder / "dev.json",
            folder / "dev_tables.json",
            folder / "dev_databases",
            folder / "dev_databases",
            name=name,
        )
    if name == "spider-dev":
        folder = dataset_folder(root, name, "spider")
        return load_custom(folder / "dev.json", folder / "tables.json", None, folder / "database", name=name)
    if name == "spider2-cloud":
        from sophrosyne.bench.spider2 import load_spider2_cloud

        return load_spider2_cloud(root)
    raise ConfigError(f"unknown dataset {name!r}.", hint=f"Use one of {', '.join(DATASETS)}.")
