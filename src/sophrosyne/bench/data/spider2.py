"""Spider 2.0-lite cloud for directives: DDL files to catalogs, gold SQL to gold tables, documents as knowledge."""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sophrosyne.bench.data.folders import dataset_folder
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.directives.oracle import gold_tables
from sophrosyne.schema.catalog import Catalog, Column, Table

SPIDER2_CLOUD = "spider2-cloud"
_ENGINES = {"bigquery": "bigquery", "snowflake": "snowflake"}
_CREATE = re.compile(r"create\s+(?:or\s+replace\s+)?(?:table|view)\s+([^\s(]+)\s*\(", re.IGNORECASE)
_OPTIONS = re.compile(r"\bOPTIONS\s*\(", re.IGNORECASE)
_DESCRIPTION = re.compile(r"description\s*=\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')", re.IGNORECASE | re.DOTALL)
_COMMENT = re.compile(r"\bCOMMENT\s+'((?:[^']|'')*)'", re.IGNORECASE)
_PAIRS = {"(": ")", "<": ">"}


@dataclass(frozen=True)
class ParsedTable:
    """One CREATE TABLE: its columns (nested STRUCT fields as `parent.child`) and its description."""

    columns: list[Column]
    description: str


_SPECIAL = re.compile(r"[()<>,\"'`\\]")


def _marks(text: str) -> list[tuple[int, str, int]]:
    """(position, character, bracket depth before it) of each bracket and separator outside quotes.

    Only the special characters are visited: a DDL file holds hundreds of thousands of characters."""
    marks: list[tuple[int, str, int]] = []
    depth = 0
    quote = ""
    escaped = -1
    for match in _SPECIAL.finditer(text):
        i, ch = match.start(), match.group()
        if i == escaped:
            continue
        if quote:
            if ch == "\\":
                escaped = i + 1
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'`":
            quote = ch
            continue
        marks.append((i, ch, depth))
        if ch in "(<":
            depth += 1
        elif ch in ")>" and depth > 0:
            depth -= 1
    return marks


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside brackets (), <> and quotes."""
    cuts = [i for i, ch, depth in _marks(text) if ch == sep and depth == 0]
    bounds = zip([-1, *cuts], [*cuts, len(text)], strict=True)
    return [part for a, b in bounds if (part := text[a + 1 : b].strip())]


def _closing(text: str, start: int) -> int:
    """Index of the bracket closing the one at `start` (quotes respected); len(text) if unclosed."""
    closer = _PAIRS[text[start]]
    for i, ch, depth in _marks(text[start:]):
        if ch == closer and depth == 1:
            return start + i
    return len(text)


def _unquote(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"`'":
        return name[1:-1]
    return name


def _description(rest: str) -> str:
    match = _DESCRIPTION.search(rest)
    if match:
        raw = match.group(1)[1:-1]
        return raw.replace('\\"', '"').replace("\\'", "'").replace("\\n", " ").strip()
    comment = _COMMENT.search(rest)
    return comment.group(1).replace("''", "'").strip() if comment else ""


def _field(item: str, prefix: str, out: list[Column]) -> None:
    """One column definition (`name TYPE [OPTIONS(...)|COMMENT '...']`); STRUCT fields become columns too."""
    match = re.match(r"\s*(`[^`]+`|\"(?:[^\"]|\"\")+\"|[^\s<]+)\s*(.*)$", item, re.DOTALL)
    if not match:
        return
    name, rest = _unquote(match.group(1)), match.group(2)
    if name.upper() in ("PRIMARY", "FOREIGN", "CONSTRAINT", "UNIQUE"):
        return
    options = _OPTIONS.search(rest)
    type_text = rest[: options.start()] if options else rest
    type_text = _COMMENT.split(type_text)[0] if _COMMENT.search(type_text) else type_text
    type_text = type_text.strip()
    full = f"{prefix}{name}"
    upper = type_text.upper()
    out.append(Column(name=full, type=_short_type(type_text), description=_description(rest)))
    struct_at = upper.find("STRUCT<")
    if struct_at >= 0:
        open_at = struct_at + len("STRUCT")
        inner = type_text[open_at + 1 : _closing(type_text, open_at)]
        for child in _split_top(inner):
            _field(child, f"{full}.", out)


def _short_type(type_text: str) -> str:
    """The type as shown: nested types cut to their outer form (`ARRAY<STRUCT<...>>`)."""
    text = " ".join(type_text.split())
    cut = text.find("<")
    if cut >= 0:
        depth = text[:cut].upper()
        return f"{depth}<STRUCT>" if "STRUCT<" in text[cut:].upper() or depth == "STRUCT" else text
    return text


def parse_ddl(ddl: str) -> ParsedTable:
    """Columns and description of one BigQuery or Snowflake CREATE TABLE statement."""
    match = _CREATE.search(ddl)
    if not match:
        return ParsedTable([], "")
    columns, description = _parse_body(ddl[match.end() - 1 :])
    # Fresh columns per table: a catalog's columns are its own to change.
    return ParsedTable([Column(c.name, c.type, description=c.description) for c in columns], description)


@lru_cache(maxsize=256)
def _parse_body(body: str) -> tuple[tuple[Column, ...], str]:
    """Columns and description of what follows a CREATE TABLE's name, from its opening bracket on. Cached: the
    shards of a date-sharded table (`ga_sessions_20170801`, ...) repeat one body, and 5,363 DDLs hold 1,500 bodies."""
    close_at = _closing(body, 0)
    columns: list[Column] = []
    for item in _split_top(body[1:close_at]):
        _field(item, "", columns)
    tail = body[close_at + 1 :]
    options = _OPTIONS.search(tail)
    description = _description(tail[options.start() :]) if options else _description(tail)
    return tuple(columns), description


def _qualified(engine: str, database: str, schema_folder: str, table_name: str) -> str:
    """The fully qualified name a gold query uses: `project.dataset.table` or `DATABASE.SCHEMA.TABLE`."""
    if table_name.count(".") >= 2:
        return table_name
    if engine == "bigquery":
        return f"{schema_folder}.{table_name}"
    return f"{database}.{schema_folder}.{table_name}"


def read_catalog(folder: Path, engine: str) -> Catalog:
    """One database folder of Spider 2.0 (`<db>/<schema>/DDL.csv`, one or more schemas) as a catalog."""
    tables: dict[str, Table] = {}
    csv.field_size_limit(sys.maxsize)
    for path in sorted(folder.glob("*/DDL.csv")):
        schema = path.parent.name
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                lowered = {(k or "").lower(): (v or "") for k, v in row.items()}
                name = lowered.get("table_name", "").strip()
                if not name:
                    continue
                parsed = parse_ddl(lowered.get("ddl", ""))
                full = _qualified(engine, folder.name, schema, name)
                described = " ".join(lowered.get("description", "").split()) or parsed.description
                tables[full] = Table(
                    name=full, columns=parsed.columns, description=described, schema=full.rsplit(".", 1)[0]
                )
    return Catalog(tables=tables, dialect=_ENGINES[engine])


def load_spider2_cloud(root: Path) -> Dataset:
    """Every cloud instance whose database DDL is present, with its gold tables and its knowledge document.

    Instances whose gold SQL reads a table with no DDL (the README lists six missing files) are left out;
    `Dataset.skipped` says which and why."""
    folder = dataset_folder(root, "spider2-cloud", "spider2_lite")
    instances = [json.loads(line) for line in (folder / "spider2-lite.jsonl").read_text().splitlines() if line.strip()]
    engines = {
        db.name: engine for engine in _ENGINES for db in (folder / "databases" / engine).iterdir() if db.is_dir()
    }
    catalogs: dict[str, Catalog] = {}
    questions: list[Question] = []
    gold: dict[str, frozenset[str]] = {}
    skipped: list[dict[str, str]] = []
    for row in instances:
        qid, db = row["instance_id"], row["db"]
        sql_path = folder / "gold_sql" / f"{qid}.sql"
        if not sql_path.exists():
            continue  # a local (SQLite) instance: not part of the cloud set
        engine = engines.get(db)
        if engine is None:
            skipped.append({"id": qid, "db_id": db, "error": "no DDL for this database"})
            continue
        if db not in catalogs:
            catalogs[db] = read_catalog(folder / "databases" / engine / db, engine)
        sql = sql_path.read_text(encoding="utf-8")
        try:
            tables = gold_tables(sql, catalogs[db], catalogs[db].dialect)
        except Exception as exc:  # a gold query the parser cannot read is reported, not scored
            skipped.append({"id": qid, "db_id": db, "error": f"gold SQL does not parse: {str(exc)[:160]}"})
            continue
        missing = sorted(t for t in tables if catalogs[db].table(t) is None)
        if missing or not tables:
            what = ", ".join(missing) if missing else "no table"
            skipped.append({"id": qid, "db_id": db, "error": f"gold SQL reads tables without DDL: {what}"[:200]})
            continue
        knowledge = ""
        if row.get("external_knowledge"):
            doc = folder / "documents" / row["external_knowledge"]
            knowledge = doc.read_text(encoding="utf-8") if doc.exists() else ""
        questions.append(Question(qid, db, row["question"], knowledge, sql, difficulty=engine))
        gold[qid] = frozenset(tables)
    used = {q.db_id for q in questions}
    return Dataset(
        SPIDER2_CLOUD, questions, {k: v for k, v in catalogs.items() if k in used}, gold=gold, skipped=skipped
    )
