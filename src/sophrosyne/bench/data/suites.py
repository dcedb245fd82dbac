"""Scored question sets from files, where each question runs (a SQLite file or a server), and the part a run takes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sophrosyne.bench.data.files import load_catalogs, load_questions
from sophrosyne.bench.data.types import Metric, Question, Skip, Suite
from sophrosyne.errors import ConfigError


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
        return runnable(suite, databases, tables, db_url)
    if tables is not None:
        describe(suite, tables, None)
    return on_server(suite, db_url)


def runnable(suite: Suite, databases: Path, tables: Path | None, db_url: str | None) -> Suite:
    """Keep the questions whose SQLite file exists (or every one, on a server); report the rest."""
    suite.order = suite.order or [q.id for q in suite.questions]
    if db_url:
        if tables is not None:
            describe(suite, tables, databases)
        return on_server(suite, db_url)
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
        describe(suite, tables, databases)
    return suite


def on_server(suite: Suite, db_url: str | None) -> Suite:
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


def describe(suite: Suite, tables: Path, descriptions: Path | None) -> None:
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
