"""Perturbations of a dataset for the directives benchmark: what a schema looks like where nobody tuned for it.

Each one changes a copy of the dataset (catalogs, values, gold, questions) before directives run, never the
files it was read from:

- `schema-only`: every table empty (no value index), descriptions kept;
- `warehouse`: every table and column renamed as a data warehouse writes them (abbreviated upper case,
  `DIM_`/`FACT_` prefixes, `_KEY` suffixes), descriptions dropped, gold and knowledge renamed the same way;
- `no-keys`: every declared primary and foreign key removed (the bench's `--drop-keys`);
- `synonyms`: each question in Spider-Syn's rewording (only Spider's training questions have one).

Kinds compose with `+`: `warehouse+schema-only+no-keys` is a warehouse as the hidden sets have it (coded names,
no rows to read, no declared keys), each change applied in the order written.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.errors import ConfigError
from sophrosyne.index.values import ValueBudget, ValueIndex
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.schema.joins import without_keys

PERTURBATIONS = ("none", "schema-only", "warehouse", "no-keys", "synonyms")
VALUE_BUDGET_S = 10.0  # the bench's own budget for reading one database's values
# Words a warehouse keeps whole; longer ones lose their vowels after the first letter and stop at ABBREVIATED.
KEPT_LETTERS = 5
ABBREVIATED = 4
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_A-Za-z]+")
# English words ending in "id" that name no key.
_NOT_KEYS = frozenset((
    "acid", "avid", "candid", "druid", "fluid", "humid", "hybrid", "invalid", "liquid", "orchid", "paid", "pyramid",
    "rapid", "rigid", "said", "solid", "squid", "stupid", "timid", "unpaid", "valid", "vivid", "void",
))  # fmt: skip
_BACKTICKED = re.compile(r"`([^`]+)`")
_IDENTIFIER = re.compile(r"\b\w*_\w*\b")


def perturb(dataset: Dataset, kind: str, root: Path | None = None) -> Dataset:
    """A copy of `dataset` as `kind` changes it; `root` is the shared datasets folder (for `synonyms`). `kind`
    may join several with `+` (`warehouse+schema-only`): each applied in turn, none twice."""
    if "+" in kind:
        kinds = [k.strip() for k in kind.split("+")]
        if len(set(kinds)) != len(kinds) or "none" in kinds or "" in kinds:
            raise ConfigError(
                f"perturbation {kind!r} names one twice, or none, or nothing between two '+'.",
                hint="Join different kinds, e.g. warehouse+schema-only+no-keys.",
            )
        for one in kinds:
            dataset = perturb(dataset, one, root)
        return replace(dataset, perturbation=kind)
    if kind == "none":
        return dataset
    if kind == "schema-only":
        return replace(dataset, database_files={}, perturbation=kind)
    if kind == "no-keys":
        catalogs = {db_id: without_keys(c) for db_id, c in dataset.catalogs.items()}
        return replace(dataset, catalogs=catalogs, perturbation=kind)
    if kind == "warehouse":
        return as_warehouse(dataset)
    if kind == "synonyms":
        return with_synonyms(dataset, root)
    raise ConfigError(f"unknown perturbation {kind!r}.", hint=f"Use one of {', '.join(PERTURBATIONS)}.")


def with_synonyms(dataset: Dataset, root: Path | None = None) -> Dataset:
    """Spider-Syn's training questions in its synonym wording; any other set has no rewording to take."""
    from sophrosyne.bench.data.registry import load_dataset

    if dataset.name == "spider-syn":
        raise ConfigError("spider-syn is already in the synonym wording: use it without --perturb synonyms.")
    if dataset.name != "spider-syn-original":
        raise ConfigError(
            f"no synonym wording of {dataset.name}: Spider-Syn rewords only Spider's training questions.",
            hint="Use --dataset spider-syn-original --perturb synonyms (or --dataset spider-syn).",
        )
    reworded = {q.id: q.question for q in load_dataset("spider-syn", root).questions}
    questions = [replace(q, question=reworded.get(q.id, q.question)) for q in dataset.questions]
    return replace(dataset, questions=questions, perturbation="synonyms")


def abbreviate(word: str) -> str:
    """One word as a warehouse writes it: upper case, kept whole up to KEPT_LETTERS letters, else its first
    letter and the consonants after it (doubles once), cut to ABBREVIATED (`DEPARTMENT` -> `DPRT`)."""
    upper = word.upper()
    if len(upper) <= KEPT_LETTERS or not upper.isalpha():
        return upper
    letters = upper[0]
    for ch in upper[1:]:
        if ch not in "AEIOU" and ch != letters[-1]:
            letters += ch
    return letters[:ABBREVIATED] if len(letters) >= 3 else upper[:ABBREVIATED]


def words_of(name: str) -> list[str]:
    """A name's words: split at separators, case changes and digits (`StuID` -> Stu, ID)."""
    return _WORDS.findall(name)


def _key_stem(name: str) -> list[str] | None:
    """The words before a name's key ending (`business_id` -> [business]; `aid` -> [a]; `id` -> []), or None
    when the name does not read as a key."""
    words = words_of(name)
    if not words:
        return None
    last = words[-1].lower()
    if last in ("id", "key"):
        return words[:-1]
    if len(words) == 1 and last.endswith("id") and len(last) > 2 and last.isalpha() and last not in _NOT_KEYS:
        return [words[0][:-2]]
    return None


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... when another one already took it (case aside)."""
    candidate, n = name, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate.lower())
    return candidate


def _joined(words: list[str], fallback: str) -> str:
    return "_".join(abbreviate(w) for w in words) or fallback


def _column_names(table: Table, core: str) -> tuple[dict[str, str], int]:
    """Each column's warehouse name, and how many read as keys (their names, or declared keys)."""
    declared = {c.lower() for fk in table.foreign_keys for c in fk.columns}
    declared |= {c.lower() for c in table.primary_key} | {c.name.lower() for c in table.columns if c.primary_key}
    names: dict[str, str] = {}
    taken: set[str] = set()
    keys = 0
    for i, column in enumerate(table.columns):
        # Nested fields (`totals.hits`) keep their path: each part is renamed alone.
        parts = column.name.split(".")
        stem = _key_stem(parts[-1])
        head = [_joined(words_of(p), f"C{i}") for p in parts[:-1]]
        if stem is not None:
            tail = f"{_joined(stem, core)}_KEY"
        else:
            tail = _joined(words_of(parts[-1]), f"C{i}")
            tail = f"{tail}_KEY" if column.name.lower() in declared else tail
        keys += stem is not None or column.name.lower() in declared
        names[column.name] = _unique(".".join([*head, tail]), taken)
    return names, keys


def warehouse_names(catalog: Catalog) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Every table's and column's warehouse name: `DIM_`/`FACT_` (two or more key columns) before the
    abbreviated table name, `_KEY` for key columns; deterministic, and unique within the catalog (table) by
    `_2`, `_3` suffixes. A qualified table (`project.dataset.table`) keeps its qualifier."""
    tables: dict[str, str] = {}
    columns: dict[str, dict[str, str]] = {}
    taken: set[str] = set()
    for name in sorted(catalog.tables):
        table = catalog.tables[name]
        qualified = bool(table.schema) and name.startswith(f"{table.schema}.")
        qualifier, own = (table.schema or "", name[len(table.schema or "") + 1 :]) if qualified else ("", name)
        core = _joined(words_of(own), "T")
        columns[name], keys = _column_names(table, core)
        renamed = f"{'FACT' if keys >= 2 else 'DIM'}_{core}"
        tables[name] = _unique(f"{qualifier}.{renamed}" if qualifier else renamed, taken)
    return tables, columns


def renamed_catalog(catalog: Catalog, tables: dict[str, str], columns: dict[str, dict[str, str]]) -> Catalog:
    """The catalog under the new names, keys following their columns, every description dropped."""
    renamed: dict[str, Table] = {}
    for name, table in catalog.tables.items():
        cols = columns[name]
        new_name = tables[name]
        keys = [
            ForeignKey(
                [cols.get(c, c) for c in fk.columns],
                tables.get(fk.ref_table, fk.ref_table),
                [columns.get(fk.ref_table, {}).get(c, c) for c in fk.ref_columns],
                inferred=fk.inferred,
                confidence=fk.confidence,
            )
            for fk in table.foreign_keys
        ]
        renamed[new_name] = replace(
            table,
            name=new_name,
            columns=[
                Column(cols[c.name], c.type, nullable=c.nullable, primary_key=c.primary_key) for c in table.columns
            ],
            primary_key=[cols.get(c, c) for c in table.primary_key],
            foreign_keys=keys,
            description="",
            local_name=None,
            parents=[tables.get(p, p) for p in table.parents],
        )
    return Catalog(tables=renamed, dialect=catalog.dialect)


def _renamed_text(text: str, names: dict[str, str]) -> str:
    """Knowledge that writes a schema name as a name (in backticks, or with an underscore) follows the rename;
    plain words are the question's language and stay."""
    if not text:
        return text
    text = _BACKTICKED.sub(lambda m: f"`{names.get(m.group(1).lower(), m.group(1))}`", text)
    return _IDENTIFIER.sub(lambda m: names.get(m.group(0).lower(), m.group(0)), text)


def as_warehouse(dataset: Dataset) -> Dataset:
    """Every database renamed by `warehouse_names`; each question's gold tables renamed the same way (a
    question whose gold SQL does not parse is skipped, with why); values are read from the files under their
    old names (`Dataset.source_names`)."""
    from sophrosyne.directives.oracle import gold_tables  # sqlglot, loaded when a warehouse is asked for

    catalogs: dict[str, Catalog] = {}
    renames: dict[str, dict[str, str]] = {}
    in_text: dict[str, dict[str, str]] = {}
    source_names: dict[str, dict[tuple[str, str], tuple[str, str]]] = {}
    for db_id, catalog in dataset.catalogs.items():
        tables, columns = warehouse_names(catalog)
        renames[db_id] = tables
        catalogs[db_id] = renamed_catalog(catalog, tables, columns)
        source_names[db_id] = {
            (tables[t], new): (t, old) for t, by_column in columns.items() for old, new in by_column.items()
        }
        # A column name several tables share is written in knowledge as the first table (by name) renames it.
        names = {c.lower(): n for t in sorted(columns, reverse=True) for c, n in columns[t].items()}
        in_text[db_id] = names | {t.lower(): n for t, n in tables.items()}
    gold: dict[str, frozenset[str]] = {}
    skipped = list(dataset.skipped)
    questions: list[Question] = []
    for q in dataset.questions:
        tables = renames[q.db_id]
        try:
            read = dataset.gold.get(q.id) or gold_tables(q.sql, dataset.catalogs[q.db_id])
        except Exception as exc:  # as the unperturbed run does: reported, not scored
            skipped.append({"id": q.id, "db_id": q.db_id, "error": str(exc)[:200]})
            continue
        gold[q.id] = frozenset(tables.get(t, t) for t in read)
        questions.append(replace(q, knowledge=_renamed_text(q.knowledge, in_text[q.db_id])))
    return replace(
        dataset,
        questions=questions,
        catalogs=catalogs,
        gold=gold,
        skipped=skipped,
        source_names=source_names,
        perturbation="warehouse",
    )


def read_values(catalog: Catalog, path: Path, source: dict[tuple[str, str], tuple[str, str]] | None) -> ValueIndex:
    """A database file's value index under the catalog's names: read under the names the file uses (`source`
    maps a renamed column to them), then filed under the new ones."""
    budget = ValueBudget(seconds=VALUE_BUDGET_S)
    if not source:
        return ValueIndex.from_sqlite(catalog, path, budget)
    originals: dict[str, Table] = {}
    for table in catalog.tables.values():
        for column in table.columns:
            old_table, old_column = source.get((table.name, column.name), (table.name, column.name))
            originals.setdefault(old_table, Table(old_table, [])).columns.append(Column(old_column, column.type))
    index = ValueIndex.from_sqlite(Catalog(tables=originals, dialect=catalog.dialect), path, budget)
    back = {old: new for new, old in source.items()}
    index.columns = [back.get(pair, pair) for pair in index.columns]
    return index
