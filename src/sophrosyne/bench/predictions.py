"""Predictions to score, in the formats the benchmarks take: BIRD's predict_dev.json, Spider's one SQL per line,
a folder of `<instance_id>.sql` or `.csv` files (Spider 2.0), or JSONL with a question id and SQL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sophrosyne.errors import ConfigError

# BIRD's separator between the SQL and the database name (mini_dev evaluation_utils.py, `package_sqls`).
BIRD_SEPARATOR = "\t----- bird -----\t"


@dataclass
class Predictions:
    """Predicted SQL (or, for Spider 2.0, result CSVs) per question id; `source` names the format read."""

    sql: dict[str, str] = field(default_factory=dict)
    csv: dict[str, Path] = field(default_factory=dict)
    source: str = ""
    unknown: list[str] = field(default_factory=list)  # entries that name no question of the dataset

    def __len__(self) -> int:
        return len(set(self.sql) | set(self.csv))


def read_predictions(path: Path, order: list[str]) -> Predictions:
    """Predictions for the questions whose ids are `order` (every question of the dataset, in its order:
    positional formats count from it)."""
    path = Path(path)
    if path.is_dir():
        return _folder(path, set(order))
    if not path.is_file():
        raise ConfigError(f"no predictions at {path}.")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return _bird_json(text, path, order)
    if path.suffix == ".jsonl":
        return _jsonl(text, path, set(order))
    return _lines(text, order)


def _folder(path: Path, known: set[str]) -> Predictions:
    """`<id>.sql` and `<id>.csv` files, as Spider 2.0 submits (a CSV is a result, scored without running)."""
    out = Predictions(source="folder")
    for file in sorted(path.iterdir()):
        if file.suffix not in (".sql", ".csv"):
            continue
        if file.stem not in known:
            out.unknown.append(file.name)
        elif file.suffix == ".sql":
            out.sql[file.stem] = file.read_text(encoding="utf-8")
        else:
            out.csv[file.stem] = file
    if not out.sql and not out.csv:
        raise ConfigError(f"no <id>.sql or <id>.csv file in {path}.")
    return out


def _bird_sql(value: object) -> str:
    """The SQL part of one predict_dev.json value; a value that is not text is an empty prediction, as in
    mini_dev's `package_sqls` (which puts a blank statement in its place)."""
    if not isinstance(value, str):
        return ""
    return value.split(BIRD_SEPARATOR)[0].strip()


def _bird_json(text: str, path: Path, order: list[str]) -> Predictions:
    """BIRD's `{"0": "SQL\\t----- bird -----\\tdb_id", ...}` (or a JSON list of SQL). Keys are the questions'
    ids when every key is one; else, when they are 0..n-1, positions in the dataset (mini-dev's evaluation
    pairs predictions with gold lines by order)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"cannot parse {path}: {exc}.") from None
    if isinstance(data, list):
        data = {str(i): v for i, v in enumerate(data)}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must map question ids to SQL.", hint="BIRD's predict_dev.json format.")
    keys = [str(k) for k in data]
    known = set(order)
    out = Predictions(source="bird-json")
    if all(k in known for k in keys):
        out.sql = {str(k): _bird_sql(v) for k, v in data.items()}
    elif sorted(keys, key=lambda k: int(k) if k.isdigit() else -1) == [str(i) for i in range(len(keys))]:
        if len(keys) > len(order):
            raise ConfigError(f"{path} has {len(keys)} predictions for {len(order)} questions.")
        out.sql = {order[int(k)]: _bird_sql(v) for k, v in data.items()}
        out.source = "bird-json-positional"
    else:
        unknown = [k for k in keys if k not in known]
        raise ConfigError(
            f"{path}: {len(unknown)} key(s) are neither question ids nor positions (e.g. {unknown[0]!r}).",
            hint="Key each prediction by the question_id of the dataset.",
        )
    return out


def _jsonl(text: str, path: Path, known: set[str]) -> Predictions:
    """One object per line with `question_id` (or `instance_id`) and `sql` (or `SQL`, `predicted_sql`)."""
    out = Predictions(source="jsonl")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: {exc}.") from None
        key = str(row.get("question_id", row.get("instance_id", "")))
        sql = row.get("sql") or row.get("SQL") or row.get("predicted_sql") or ""
        if key not in known:
            out.unknown.append(key)
        else:
            out.sql[key] = str(sql)
    return out


def _lines(text: str, order: list[str]) -> Predictions:
    """Spider's format: line i holds the SQL of question i (an optional tab and database name after it)."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) > len(order):
        raise ConfigError(
            f"{len(lines)} predicted lines for {len(order)} questions.",
            hint="One SQL per line, in the order of the dataset's questions.",
        )
    return Predictions(sql={order[i]: line.split("\t")[0].strip() for i, line in enumerate(lines)}, source="lines")
