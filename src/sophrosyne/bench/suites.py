"""Scored question sets: BIRD dev and mini-dev, Spider dev, Spider 2.0-lite or plain JSONL, with where each runs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sophrosyne import engines
from sophrosyne.bench.datasets import Question, dataset_folder, datasets_root, load_catalogs, load_questions
from sophrosyne.errors import ConfigError

if TYPE_CHECKING:
    from sophrosyne.bench.spider2_eval import Spider2Gold
    from sophrosyne.schema.catalog import Catalog

Metric = Literal["bird", "spider", "spider2"]
SUITES = (
    "bird-dev",
    "bird-mini-dev",
    "bird-mini-dev-mysql",
    "bird-mini-dev-postgresql",
    "spider-dev",
    "spider2-lite",
)
_MINI_DEV = {"bird-mini-dev": "sqlite", "bird-mini-dev-mysql": "mysql", "bird-mini-dev-postgresql": "postgresql"}


@dataclass(frozen=True)
class Skip:
    """A question left out of a run, and why (its database is absent, it has no gold result, ...)."""

    question_id: str
    db_id: str
    reason: str
    question: Question | None = field(default=None, repr=False, compare=False)  # for work that needs no run

    def to_json(self) -> dict[str, str]:
        return {"question_id": self.question_id, "db_id": self.db_id, "reason": self.reason}


@dataclass
class Suite:
    """Questions with their gold SQL, the database each runs on, and the metric that scores them."""

    name: str
    metric: Metric
    dialect: str
    questions: list[Question]
    targets: dict[str, str] = field(default_factory=dict)  # db_id -> SQLite file or server URL
    skipped: list[Skip] = field(default_factory=list)
    catalogs: dict[str, Catalog] = field(default_factory=dict)
    descriptions: dict[str, Path] = field(default_factory=dict)  # db_id -> BIRD description folder
    spider2: Spider2Gold | None = None  # gold result tables and their comparison rules
    order: list[str] = field(default_factory=list)  # every question id of the dataset, skipped ones too

    def skipped_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for skip in self.skipped:
            counts[skip.reason] = counts.get(skip.reason, 0) + 1
        return counts


def load_suite(name: str, *, root: Path | None = None, db_url: str | None = None) -> Suite:
    """A shared dataset by name; `db_url` (with `{db_id}` where each database's name goes, or one database
    holding every table, as mini-dev sets up MySQL and PostgreSQL) serves the server-dialect gold."""
    root = root or datasets_root()
    if name == "bird-dev":
        folder = dataset_folder(root, name, "bird_dev")
        return _runnable(
            Suite(name, "bird", "sqlite", load_questions(folder / "dev.json")),
            folder / "dev_databases",
            folder / "dev_tables.json",
            db_url,
        )
    if name in _MINI_DEV:
        dialect = _MINI_DEV[name]
        folder = dataset_folder(root, name, "bird_mini_dev")
        questions = load_questions(folder / f"mini_dev_{dialect}.json")
        engine = engines.for_dialect(dialect)  # mini-dev says `postgresql` where sqlglot says `postgres`
        suite = Suite(name, "bird", engine.name, questions)
        if isinstance(engine, engines.FileEngine):  # its databases are the shipped files
            return _runnable(suite, root / "bird_dev" / "dev_databases", folder / "dev_tables.json", db_url)
        _describe(suite, folder / "dev_tables.json", root / "bird_dev" / "dev_databases")
        return _on_server(suite, db_url)
    if name == "spider-dev":
        folder = dataset_folder(root, name, "spider")
        suite = Suite(name, "spider", "sqlite", load_questions(folder / "dev.json"))
        return _runnable(suite, folder / "database", folder / "tables.json", db_url)
    if name == "spider2-lite":
        from sophrosyne.bench.spider2_eval import load_spider2_lite

        return load_spider2_lite(dataset_folder(root, name, "spider2_lite"))
    raise ConfigError(f"unknown dataset {name!r}.", hint=f"Use one of {', '.join(SUITES)}.")


def suite_from_files(
    questions: Path,
    *,
    databases: Path | None = None,
    tables: Path | None = None,
    db_url: str | None = None,
    metric: Metric = "bird",
    name: str = "custom",
) -> Suite:
    """Plain JSON or JSONL questions (`question`, `knowledge` or `evidence`, `SQL` or `query`, `db_id`,
    optional `question_id` and `difficulty`) over `<databases>/<db_id>/<db_id>.sqlite` files or a server."""
    if metric == "spider2":
        raise ConfigError("Spider 2.0 questions come with their gold results: use --dataset spider2-lite.")
    suite = Suite(name, metric, "sqlite", load_questions(questions))
    if databases is None and db_url is None:
        raise ConfigError("say where the questions run.", hint="Pass --databases DIR or --db-url URL.")
    if databases is not None:
        return _runnable(suite, databases, tables, db_url)
    if tables is not None:
        _describe(suite, tables, None)
    return _on_server(suite, db_url)


def _runnable(suite: Suite, databases: Path, tables: Path | None, db_url: str | None) -> Suite:
    """Keep the questions whose SQLite file exists (or every one, on a server); report the rest."""
    suite.order = suite.order or [q.id for q in suite.questions]
    if db_url:
        if tables is not None:
            _describe(suite, tables, databases)
        return _on_server(suite, db_url)
    kept: list[Question] = []
    for question in suite.questions:
        path = Path(databases) / question.db_id / f"{question.db_id}.sqlite"
        if path.is_file():
            suite.targets[question.db_id] = str(path)
            kept.append(question)
        else:
            suite.skipped.append(Skip(question.id, question.db_id, "database file absent", question))
    suite.questions = kept
    if tables is not None and Path(tables).is_file():
        _describe(suite, tables, databases)
    return suite


def _on_server(suite: Suite, db_url: str | None) -> Suite:
    suite.order = suite.order or [q.id for q in suite.questions]
    if not db_url:
        for question in suite.questions:
            reason = f"no {suite.dialect} server given (--db-url)"
            suite.skipped.append(Skip(question.id, question.db_id, reason, question))
        suite.questions = []
        return suite
    for question in suite.questions:
        suite.targets[question.db_id] = db_url.replace("{db_id}", question.db_id)
    return suite


def _describe(suite: Suite, tables: Path, descriptions: Path | None) -> None:
    """Catalogs from a tables.json (for directives, gold tables and token counts) and BIRD's column
    descriptions where the dataset ships them."""
    from sophrosyne.schema.catalog import load_bird_descriptions

    db_ids = {q.db_id for q in suite.questions} | {s.db_id for s in suite.skipped}
    suite.catalogs = load_catalogs(tables, db_ids)
    if descriptions is None:
        return
    for db_id, catalog in suite.catalogs.items():
        folder = Path(descriptions) / db_id / "database_description"
        if folder.is_dir():
            suite.descriptions[db_id] = folder
            load_bird_descriptions(catalog, folder)


def select(
    suite: Suite,
    *,
    limit: int | None = None,
    databases: list[str] | None = None,
    difficulties: list[str] | None = None,
    shard: tuple[int, int] | None = None,
) -> Suite:
    """The questions a run takes, in dataset order: of the given databases and difficulties, the first
    `limit`, then every n-th from the i-th (`shard=(i, n)`, 1-based) so that shards partition the run."""
    questions = suite.questions
    if databases:
        unknown = sorted(set(databases) - {q.db_id for q in questions} - {s.db_id for s in suite.skipped})
        if unknown:
            raise ConfigError(f"no question of {suite.name} is on database(s) {', '.join(unknown)}.")
        questions = [q for q in questions if q.db_id in databases]
    if difficulties:
        questions = [q for q in questions if q.difficulty in difficulties]
    if limit is not None:
        questions = questions[:limit]
    if shard is not None:
        index, count = shard
        questions = questions[index - 1 :: count]
    return replace(suite, questions=questions)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """`i/n` with 1 <= i <= n."""
    if not text:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard {text!r} is not of the form i/n.", hint="e.g. --shard 1/4.") from None
    if not 1 <= index <= count:
        raise ConfigError(f"--shard {text}: i must be between 1 and n.", hint="e.g. --shard 1/4.")
    return index, count


def suite_summary(suite: Suite) -> dict[str, object]:
    """What a run covers and what it left out, for the JSON report."""
    return {
        "dataset": suite.name,
        "metric": suite.metric,
        "dialect": suite.dialect,
        "questions": len(suite.questions),
        "databases": sorted({q.db_id for q in suite.questions}),
        "skipped": len(suite.skipped),
        "skipped_by_reason": suite.skipped_by_reason(),
        "skipped_databases": sorted({s.db_id for s in suite.skipped}),
    }
