"""What exploration saves, without a model: the tokens of a whole-schema prompt against the fine-grained path.

Coarse: every table described (columns, types, keys, descriptions, sample values), as a coarse-grained API
hands the whole schema to the model up front; the `coarse` arm of `bench run` prompts with the same text.
Fine: `list_tables` with the question and its knowledge (directives included) plus `describe_table` of the
tables the gold SQL reads, as an agent that explores exactly what it needs would read. Both are rendered as
the MCP server sends them and counted with o200k (quicktok, offline)."""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sophrosyne.bench.data.types import Question
from sophrosyne.bench.exploration import gold_tables_of

if TYPE_CHECKING:
    from sophrosyne.bench.data.types import Suite
    from sophrosyne.environment import Environment
    from sophrosyne.schema.catalog import Catalog

Tick = Callable[[str, int, int], None]
# A fixed data-block marker: the server draws a random one per response, whose tokens would vary run to run.
NONCE = "0a1b2c3d"


@lru_cache(maxsize=1)
def _o200k() -> Any:
    import quicktok

    return quicktok.get_encoding("o200k_base")


def o200k_tokens(text: str) -> int:
    return len(_o200k().encode_ordinary(text)) if text else 0


def whole_schema(env: Environment) -> str:
    """The coarse prompt: every table of the database described, as `describe_table` renders it."""
    from sophrosyne.tools.base import render

    return "\n\n".join(render(env.describe_table(name), NONCE) for name in env.catalog.tables)


def fine_context(env: Environment, question: Question, gold: set[str]) -> str:
    """`list_tables` with the question and knowledge, then `describe_table` of each gold table."""
    from sophrosyne.tools.base import render

    parts = [render(env.list_tables(question.question, question.knowledge or None), NONCE)]
    parts += [render(env.describe_table(name), NONCE) for name in sorted(gold) if env.catalog.table(name)]
    return "\n\n".join(parts)


@dataclass
class DatabaseTokens:
    db_id: str
    tables: int
    with_values: bool  # False: only the schema is shipped (an empty copy was described)
    coarse: int
    fine: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        fine_median = float(statistics.median(self.fine)) if self.fine else None
        ratios = [self.coarse / f for f in self.fine if f]
        return {
            "db_id": self.db_id,
            "tables": self.tables,
            "with_values": self.with_values,
            "questions": len(self.fine),
            "coarse_tokens": self.coarse,
            "fine_tokens_median": fine_median,
            "fine_tokens_p90": round(p90, 1) if (p90 := percentile(self.fine, 0.9)) is not None else None,
            "ratio": round(self.coarse / fine_median, 3) if fine_median else None,
            "ratio_per_question_median": round(statistics.median(ratios), 3) if ratios else None,
        }


def percentile(values: list[int] | list[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between the closest ranks (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


def empty_copy(catalog: Catalog, folder: Path, db_id: str) -> Path:
    """An empty SQLite database with the catalog's tables, keys and types, for a schema shipped without data."""
    path = Path(folder) / db_id / f"{db_id}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)

    def quoted(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    with sqlite3.connect(path) as db:
        for table in catalog.tables.values():
            lines = [f"{quoted(c.name)} {c.type or 'TEXT'}" for c in table.columns]
            if table.primary_key:
                lines.append(f"PRIMARY KEY ({', '.join(quoted(c) for c in table.primary_key)})")
            for fk in table.foreign_keys:
                columns, targets = ", ".join(map(quoted, fk.columns)), ", ".join(map(quoted, fk.ref_columns))
                lines.append(f"FOREIGN KEY ({columns}) REFERENCES {quoted(fk.ref_table)} ({targets})")
            db.execute(f"CREATE TABLE {quoted(table.name)} ({', '.join(lines)})")
    db.close()
    return path


def measure_tokens(suite: Suite, *, tick: Tick | None = None, scratch: Path | None = None) -> list[DatabaseTokens]:
    """Coarse and fine tokens for every database of the suite's questions (skipped ones included: a database
    without its data file is described from an empty copy of its schema, and says so)."""
    from sophrosyne.environment import Environment
    from sophrosyne.settings import Inference, Settings

    questions = list(suite.questions) + [s.question for s in suite.skipped if s.question is not None]
    by_db: dict[str, list[Question]] = {}
    for q in questions:
        by_db.setdefault(q.db_id, []).append(q)
    total, done = len(questions), 0
    results: list[DatabaseTokens] = []
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        for db_id in sorted(by_db):
            target = suite.targets.get(db_id)
            with_values = target is not None
            if target is None:
                if db_id not in suite.catalogs:
                    continue
                target = str(empty_copy(suite.catalogs[db_id], Path(folder), db_id))
            descriptions = suite.descriptions.get(db_id)
            coarse_env = Environment.open(
                target, settings=Settings(inference=Inference(directives="none")), descriptions=descriptions
            )
            fine_env = Environment.open(
                target, settings=Settings(inference=Inference(directives="directives")), descriptions=descriptions
            )
            try:
                entry = DatabaseTokens(db_id, len(coarse_env.catalog.tables), with_values, 0)
                entry.coarse = o200k_tokens(whole_schema(coarse_env))
                for q in by_db[db_id]:
                    gold = gold_tables_of(q.sql, fine_env.catalog, "sqlite")
                    entry.fine.append(o200k_tokens(fine_context(fine_env, q, gold)))
                    done += 1
                    if tick is not None:
                        tick("tokens", done, total)
                results.append(entry)
            finally:
                coarse_env.close()
                fine_env.close()
    return results


def tokens_summary(entries: list[DatabaseTokens]) -> dict[str, Any]:
    ratios = [e.to_json()["ratio"] for e in entries if e.fine]
    kept = [r for r in ratios if r is not None]
    return {
        "databases": len(entries),
        "questions": sum(len(e.fine) for e in entries),
        "databases_with_values": sum(e.with_values for e in entries),
        "coarse_tokens_median": statistics.median([e.coarse for e in entries]) if entries else None,
        "fine_tokens_median": statistics.median([f for e in entries for f in e.fine]) if entries else None,
        "ratio_median": round(statistics.median(kept), 3) if kept else None,
        "ratio_p90": round(percentile(kept, 0.9) or 0.0, 3) if kept else None,
        "tokenizer": "o200k_base (quicktok)",
    }
