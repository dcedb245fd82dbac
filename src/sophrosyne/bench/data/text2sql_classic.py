"""The classic text-to-SQL sets (Finegan-Dollak et al. 2018): academic, geography, imdb, restaurants, scholar, yelp.

Each set is one database: its schema from `<set>-schema.csv` (primary-key flags kept, foreign keys not declared:
the sets ship none), its values from `<set>-db.added-in-2020.sqlite` where one ships (geography, restaurants; the
other four are schema-only). Every sentence of every split is a question, its variables (`state_name0`) filled in
with the sentence's values in both the question and the entry's first SQL; identical filled-in pairs count once.
Nothing is tuned on these sets: every question is held out.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from sophrosyne.bench.data.folders import dataset_folder
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Column, Table

CLASSIC = "text2sql-classic"
FOLDER = "text2sql_classic"
SETS = ("academic", "geography", "imdb", "restaurants", "scholar", "yelp")
# The canonical SQL quotes strings in double quotes and reads like MySQL, where the sets were first published.
DIALECT = "mysql"
# A variable as the sets write it: lower case, ending in its number (`state_name0`); the canonical SQL writes
# every name in upper case, so a lower-case word with a number left in it is a variable nothing filled.
_VARIABLE = re.compile(r"\b[a-z][a-z_]*[0-9]+\b")
_TYPE_END = re.compile(r"\s+(?:NOT\s+NULL|DEFAULT|AUTO_INCREMENT)\b.*$", re.IGNORECASE)


def dataset_names() -> tuple[str, ...]:
    """`text2sql-classic` (every set) and one name per set (`text2sql-classic-geography`, ...)."""
    return (CLASSIC, *(f"{CLASSIC}-{s}" for s in SETS))


def read_schema(path: Path) -> Catalog:
    """A `<set>-schema.csv` (`Table Name, Field Name, Is Primary Key, Is Foreign Key, Type[, Other info]`, rows of
    `-` between tables) as a catalog. Primary-key flags are kept; the foreign-key flag names no referenced table,
    so no foreign key is declared."""
    tables: dict[str, Table] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, skipinitialspace=True))
    for row in rows[1:]:
        cells = [c.strip() for c in row]
        if len(cells) < 5 or cells[0] in ("", "-") or cells[1] in ("", "-"):
            continue
        table_name, column_name, primary, _foreign, type_text = cells[:5]
        other = " ".join(cells[5:])
        table = tables.setdefault(table_name, Table(name=table_name, columns=[]))
        is_primary = primary.lower() == "y"
        nullable = "NOT NULL" not in f"{type_text} {other}".upper()
        table.columns.append(
            Column(column_name, _TYPE_END.sub("", type_text).upper(), nullable=nullable, primary_key=is_primary)
        )
        if is_primary:
            table.primary_key.append(column_name)
    return Catalog(tables=tables, dialect="sqlite")


def fill(text: str, values: dict[str, str], quoted: bool = False) -> str:
    """`text` with each variable (`state_name0`, a whole word) replaced by its value, in one pass so a value
    is never filled again; `quoted` escapes double quotes for a value inside a SQL string."""
    if not values:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(values, key=len, reverse=True)) + r")\b")

    def value(match: re.Match[str]) -> str:
        found = values[match.group(1)]
        return found.replace('"', '\\"') if quoted else found

    return pattern.sub(value, text)


def _values(entry: dict[str, Any], sentence: dict[str, Any]) -> dict[str, str]:
    """A sentence's values; a variable it leaves empty or out (the SQL-only ones) takes the entry's example."""
    values = {str(v["name"]): str(v.get("example", "")) for v in entry.get("variables", [])}
    values.update({str(k): str(v) for k, v in sentence.get("variables", {}).items() if v != ""})
    return values


def load_set(folder: Path, name: str) -> Dataset:
    """One set as a dataset of one database: its questions, schema, gold tables, values file if it ships one,
    and the questions left out with why."""
    from sophrosyne.directives.oracle import gold_tables  # sqlglot, loaded only when a set is read

    catalog = read_schema(folder / f"{name}-schema.csv")
    path = folder / f"{name}.json"
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}.") from None
    questions: list[Question] = []
    gold: dict[str, frozenset[str]] = {}
    skipped: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for e, entry in enumerate(entries):
        template = entry["sql"][0]
        for s, sentence in enumerate(entry["sentences"]):
            values = _values(entry, sentence)
            text = " ".join(fill(sentence["text"], values).split())
            sql = fill(template, values, quoted=True)
            if (text, sql) in seen:
                continue
            seen.add((text, sql))
            qid = f"{name}-{e}-{s}"
            unfilled = sorted(set(_VARIABLE.findall(template)) - set(values))
            if unfilled:  # imdb's entry 27: its first SQL names a company the question never gives
                error = f"gold SQL holds a variable the question does not fill: {', '.join(unfilled)}"
                skipped.append({"id": qid, "db_id": name, "error": error})
                continue
            try:
                tables = gold_tables(sql, catalog, DIALECT)
            except Exception as exc:  # a gold query the parser cannot read is reported, not scored
                skipped.append({"id": qid, "db_id": name, "error": f"gold SQL does not parse: {str(exc)[:160]}"})
                continue
            missing = sorted(t for t in tables if catalog.table(t) is None)
            if missing or not tables:
                what = ", ".join(missing) if missing else "no table"
                skipped.append({"id": qid, "db_id": name, "error": f"gold SQL reads tables not in the schema: {what}"})
                continue
            difficulty = str(entry.get("difficulty", "unknown"))
            questions.append(Question(qid, name, text, "", sql, difficulty=difficulty))
            gold[qid] = frozenset(tables)
    data = folder / f"{name}-db.added-in-2020.sqlite"
    files = {name: data} if data.is_file() else {}
    return Dataset(name, questions, {name: catalog}, files, gold=gold, skipped=skipped)


def load_text2sql_classic(root: Path, name: str = CLASSIC) -> Dataset:
    """`text2sql-classic` (every set, one database each) or `text2sql-classic-<set>` (one set)."""
    wanted = SETS if name == CLASSIC else tuple(s for s in SETS if name == f"{CLASSIC}-{s}")
    if not wanted:
        raise ConfigError(f"unknown classic set {name!r}.", hint=f"Use one of {', '.join(dataset_names())}.")
    folder = dataset_folder(root, name, FOLDER)
    dataset = Dataset(name, [], {})
    for set_name in wanted:
        one = load_set(folder, set_name)
        dataset.questions += one.questions
        dataset.catalogs |= one.catalogs
        dataset.database_files |= one.database_files
        dataset.gold |= one.gold
        dataset.skipped += one.skipped
    return dataset
