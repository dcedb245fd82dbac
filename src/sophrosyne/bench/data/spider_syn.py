"""Spider-Syn: Spider's training questions reworded with the words users use, on Spider's own databases.

Each question comes in two wordings: `SpiderSynQuestion` (schema words replaced by synonyms: "leaders of the
divisions" for "heads of the departments") and `SpiderQuestion`, the original. The databases are split once, by
a rule nobody can bend towards easy ones: sha256(db_id) % 3 == 0 is held out, the rest may be tuned on.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sophrosyne.bench.data.files import load_catalogs
from sophrosyne.bench.data.folders import dataset_folder
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.errors import ConfigError

WORDINGS = {"spider-syn": "SpiderSynQuestion", "spider-syn-original": "SpiderQuestion"}
HOLDOUT_SHARE = 3  # one database in three is held out


def held_out(db_id: str) -> bool:
    """Whether a database belongs to the held-out part: sha256 of its name, modulo 3, is 0."""
    return int(hashlib.sha256(db_id.encode()).hexdigest(), 16) % HOLDOUT_SHARE == 0


def load_spider_syn(root: Path, name: str = "spider-syn") -> Dataset:
    """`spider-syn` (the synonym wording) or `spider-syn-original` (Spider's wording) of the same questions.

    Questions on a database that has no SQLite file (Spider ships none for two of them) are skipped, each
    with its reason in `Dataset.skipped`."""
    if name not in WORDINGS:
        raise ConfigError(f"unknown Spider-Syn wording {name!r}.", hint=f"Use {' or '.join(WORDINGS)}.")
    folder = dataset_folder(root, name, "spider_syn")
    spider = dataset_folder(root, name, "spider")
    path = folder / "train_spider.json"
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}.") from None
    catalogs = load_catalogs(spider / "tables.json", {r["db_id"] for r in rows})
    files = {db_id: file for db_id in catalogs if (file := spider / "database" / db_id / f"{db_id}.sqlite").is_file()}
    questions, skipped = [], []
    for i, row in enumerate(rows):
        question_id = f"syn-{i}"
        if row["db_id"] not in files:
            skipped.append({"id": question_id, "db_id": row["db_id"], "error": "its database has no SQLite file"})
            continue
        questions.append(Question(question_id, row["db_id"], row[WORDINGS[name]], "", row["query"]))
    used = sorted({q.db_id for q in questions})
    return Dataset(
        name,
        questions,
        {db_id: catalogs[db_id] for db_id in used},
        {db_id: files[db_id] for db_id in used},
        skipped=skipped,
        tuning_databases=[db_id for db_id in used if not held_out(db_id)],
    )
