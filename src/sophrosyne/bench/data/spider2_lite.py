"""Spider 2.0-lite for scoring: the instances with a gold result here, each with its comparison rule."""

from __future__ import annotations

import json
from pathlib import Path

from sophrosyne.bench.data.spider2_eval import load_gold
from sophrosyne.bench.data.types import Question, Skip, Suite
from sophrosyne.errors import ConfigError


def load_spider2_lite(folder: Path) -> Suite:
    """Spider 2.0-lite instances with a gold result here; the others are reported as skipped. Knowledge is
    the external-knowledge document an instance names, when the folder has it."""
    folder = Path(folder)
    if not (folder / "spider2-lite.jsonl").is_file():
        raise ConfigError(f"no Spider 2.0-lite instances in {folder} (spider2-lite.jsonl).")
    gold = load_gold(folder)
    suite = Suite("spider2-lite", "spider2", "bigquery", [], spider2=gold)
    for line in (folder / "spider2-lite.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        instance, db = row["instance_id"], row["db"]
        suite.order.append(instance)
        document = folder / "documents" / str(row.get("external_knowledge") or "")
        knowledge = document.read_text(encoding="utf-8") if row.get("external_knowledge") and document.is_file() else ""
        sql_path = folder / "gold_sql" / f"{instance}.sql"
        sql = sql_path.read_text(encoding="utf-8") if sql_path.is_file() else ""
        if instance not in gold.rules:
            suite.skipped.append(Skip(instance, db, "no evaluation rule"))
        elif instance not in gold.variants:
            suite.skipped.append(Skip(instance, db, "no gold result here"))
        else:
            suite.questions.append(Question(instance, db, row["question"], knowledge, sql))
    return suite
