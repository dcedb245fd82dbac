"""Questions and schemas in the files BIRD and Spider ship (questions JSON, `tables.json`), or of your own set."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table, load_bird_descriptions


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
