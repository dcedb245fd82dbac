"""Typed tool results and their bounded, token-aware rendering; database values sit in delimited data blocks."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from sophrosyne.base.data_blocks import close_data, escaped, new_nonce, open_data
from sophrosyne.base.text import estimate_tokens, shorten

if TYPE_CHECKING:
    from sophrosyne.errors import SophrosyneError


def cell(value: Any, max_chars: int) -> Any:
    """A JSON-friendly value, long strings and bytes cut with a visible mark."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value) if value == value.to_integral_value() or abs(value) < 1e15 else str(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return f"<{len(raw)} bytes>"
    return shorten(str(value), max_chars)


def cut_note(shown: int, total: int | None, what: str, why: str) -> str:
    if total is None:
        return f"cut: showing the first {shown} {what}; there are more ({why})."
    return f"cut: showing {shown} of {total} {what} ({why})."


def fit_rows(columns: list[str], rows: list[list[Any]], budget_tokens: int) -> tuple[list[list[Any]], bool]:
    """Keep the leading rows whose rendering fits the token budget."""
    used = estimate_tokens(" | ".join(columns))
    kept: list[list[Any]] = []
    for row in rows:
        used += estimate_tokens(" | ".join(_text(v) for v in row)) + 1
        if used > budget_tokens and kept:
            return kept, True
        kept.append(row)
    return kept, False


def render_table(columns: list[str], rows: list[list[Any]], nonce: str) -> str:
    """Rows as a compact pipe table inside a data block, so values cannot pose as instructions."""
    return "\n".join(_table_lines(columns, rows, nonce))


def _table_lines(columns: list[str], rows: list[list[Any]], nonce: str, title: str | None = None) -> list[str]:
    # Column names are the database's (or the query's aliases) as much as the values are.
    lines = [open_data(nonce), *([escaped(title)] if title else []), " | ".join(_text(c) for c in columns)]
    lines.extend(" | ".join(_text(v) for v in row) for row in rows)
    lines.append(close_data(nonce))
    return lines


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    return escaped(str(value)).replace("|", "\\|")


class Result(BaseModel):
    """Base of the typed tool results."""

    # Validators are built on first use, not at import: a CLI call builds only the one result it returns.
    model_config = ConfigDict(defer_build=True)


class SourceRelevance(Result):
    """Whether a source is likely irrelevant to a question: no table of it scores as a kept table would."""

    likely_irrelevant: bool
    best_table: str | None = None
    score: float = 0.0
    reason: str = ""


class SourceInfo(Result):
    name: str
    dialect: str
    tables: int
    url: str
    description: str = ""
    relevance: SourceRelevance | None = None


class SourceList(Result):
    sources: list[SourceInfo]


class TableSummary(Result):
    name: str
    kind: str = "table"
    description: str = ""
    row_estimate: int | None = None
    rows_at_least: bool = Field(False, description="the count stopped at its bound: at least row_estimate rows")
    join_keys: list[str] = Field(default_factory=list, description="`column -> table.column` foreign keys")


class TableGroupInfo(Result):
    pattern: str
    count: int
    first: str
    last: str
    columns: int


class SchemaInfo(Result):
    name: str
    tables: int


class Directive(Result):
    table: str
    reason: str
    confidence: str = "high"


class TableList(Result):
    source: str
    tables: list[TableSummary]
    groups: list[TableGroupInfo] = Field(default_factory=list)
    schemas: list[SchemaInfo] = Field(default_factory=list, description="one entry per schema, when several")
    total: int = Field(0, description="tables (and groups, counted once) matching the pattern")
    offset: int = 0
    directives: list[Directive] = Field(default_factory=list)
    directive_note: str | None = None
    note: str | None = None
    cut: str | None = None


class ColumnInfo(Result):
    name: str
    type: str
    key: str | None = None
    nullable: bool = True
    description: str = ""
    null_share: float | None = None
    samples: list[Any] = Field(default_factory=list)


class TableDescription(Result):
    table: str
    kind: str
    description: str = ""
    row_estimate: int | None = None
    rows_at_least: bool = False
    columns: list[ColumnInfo]
    references: list[str] = Field(default_factory=list, description="foreign keys of this table")
    referenced_by: list[str] = Field(default_factory=list, description="foreign keys pointing at this table")
    sampled_rows: int = 0
    reminder: str | None = None
    cut: str | None = None


class ValueCount(Result):
    value: Any
    count: int
    score: float | None = None
    match: str | None = Field(None, description="how the value matches the search: exact, substring or fuzzy")


class DistinctValues(Result):
    table: str
    column: str
    search: str | None = None
    values: list[ValueCount]
    note: str | None = None
    cut: str | None = None


class TableRows(Result):
    table: str
    columns: list[str]
    rows: list[list[Any]]
    matched_columns: list[str]


class FoundRows(Result):
    term: str
    matches: list[TableRows]
    searched_tables: int
    note: str | None = None
    cut: str | None = None


class SchemaHit(Result):
    table: str
    column: str
    score: float
    description: str = ""


class SchemaHits(Result):
    query: str
    hits: list[SchemaHit]
    note: str | None = None
    cut: str | None = None


class QueryOutput(Result):
    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    sql_executed: str
    elapsed_ms: float
    reminder: str | None = None
    note: str | None = None
    cut: str | None = None
    hints: list[str] = Field(default_factory=list, description="performance hints, after a slow statement")


class QueryPlan(Result):
    sql_executed: str
    plan: list[str]
    hints: list[str] = Field(default_factory=list)
    note: str | None = None
    cut: str | None = None


def render(result: BaseModel, nonce: str | None = None) -> str:
    """Compact text for a tool result; every database value is inside a data block.

    Each line is escaped (data_blocks.escaped): a name, value or engine message that holds a line break stays
    on its line, in its block. Our own text has no such character, and reads as written."""
    nonce = nonce or new_nonce()
    renderer = _RENDERERS.get(type(result))
    lines = renderer(result, nonce) if renderer else result.model_dump_json(indent=1).split("\n")
    return "\n".join(escaped(line) for line in lines)


def render_error(error: SophrosyneError, limit: int, nonce: str | None = None) -> str:
    """The text a client reads for an error, in at most about `limit` characters: our message and hint on one
    line each, and the database's own words (which may quote data) inside a data block."""
    if not error.quoted:
        return shorten(str(error), limit)
    nonce = nonce or new_nonce()
    # A program's traceback keeps its lines; an engine's message has one.
    quoted = [escaped(line) for line in shorten(error.quoted, limit // 4).split("\n")]
    lines = [shorten(escaped(error.message), limit * 2 // 5), open_data(nonce), *quoted, close_data(nonce)]
    if error.hint:
        lines.append("Hint: " + shorten(escaped(error.hint), limit // 4))
    return "\n".join(lines)


def rows_text(estimate: int | None, at_least: bool) -> str:
    if estimate is None:
        return "rows unknown"
    return f"at least {estimate:,} rows" if at_least else f"~{estimate:,} rows"


def _render_table_list(r: TableList, nonce: str) -> list[str]:
    # Names, descriptions and the values quoted in directive reasons all come from the database.
    shown = len(r.tables) + len(r.groups)
    where = f"{r.offset + 1}-{r.offset + shown} of {r.total}" if r.offset or shown < r.total else f"{r.total}"
    lines = [f"tables in {r.source} ({where}; groups of same-shape tables count once):"]
    lines.append(open_data(nonce))
    lines.extend(f"- schema {s.name}: {s.tables} tables" for s in r.schemas)
    for t in r.tables:
        extra = f"; joins: {', '.join(t.join_keys)}" if t.join_keys else ""
        kind = " (view)" if t.kind == "view" else ""
        desc = f" — {t.description}" if t.description else ""
        lines.append(f"- {t.name}{kind}{desc} [{rows_text(t.row_estimate, t.rows_at_least)}{extra}]")
    for g in r.groups:
        lines.append(f"- group {g.pattern}: {g.count} tables with the same {g.columns} columns ({g.first} … {g.last})")
    lines.append(close_data(nonce))
    if r.directives:
        lines.append(
            "Directives: these tables are likely irrelevant to the question; do not explore them unless "
            "the evidence clearly needs them:"
        )
        lines.append(open_data(nonce))
        lines.extend(f"- {d.table}: {d.reason} (confidence {d.confidence})" for d in r.directives)
        lines.append(close_data(nonce))
    lines.extend(x for x in (r.directive_note, r.note, r.cut) if x)
    return lines


def _render_description(r: TableDescription, nonce: str) -> list[str]:
    rows = rows_text(r.row_estimate, r.rows_at_least)
    lines = [f"{r.kind} {r.table} ({rows}); columns with null share and samples from {r.sampled_rows:,} rows:"]
    if r.reminder:
        lines.append(r.reminder)
    lines.append(open_data(nonce))
    if r.description:
        lines.append(f"description: {r.description}")
    for c in r.columns:
        key = f" {c.key}" if c.key else ""
        null = ""
        if c.null_share:
            null = " null <1%" if c.null_share < 0.01 else f" null {c.null_share:.0%}"
        desc = f" — {c.description}" if c.description else ""
        samples = f" e.g. {', '.join(repr(s) for s in c.samples)}" if c.samples else ""
        lines.append(f"- {c.name} {c.type}{key}{null}{desc}{samples}")
    if r.references:
        lines.append("references: " + ", ".join(r.references))
    if r.referenced_by:
        lines.append("referenced by: " + ", ".join(r.referenced_by))
    lines.append(close_data(nonce))
    if r.cut:
        lines.append(r.cut)
    return lines


def _render_distinct(r: DistinctValues, nonce: str) -> list[str]:
    what = f" matching {r.search!r}" if r.search else ""
    lines = [
        f"{len(r.values)} distinct values of {r.table}.{r.column}{what} (value: count):",
        open_data(nonce),
    ]
    lines.extend(f"{_text(v.value)}: {v.count}" + (f" ({v.match})" if v.match else "") for v in r.values)
    lines.append(close_data(nonce))
    lines.extend(x for x in (r.note, r.cut) if x)
    return lines


def _render_found(r: FoundRows, nonce: str) -> list[str]:
    lines = [f"rows containing {r.term!r} (searched {r.searched_tables} tables):"]
    for m in r.matches:
        # The table's name is the database's: it heads its rows inside their block.
        lines.extend(_table_lines(m.columns, m.rows, nonce, f"{m.table} (matched in {', '.join(m.matched_columns)}):"))
    if not r.matches:
        lines.append("no rows matched.")
    lines.extend(x for x in (r.note, r.cut) if x)
    return lines


def _render_hits(r: SchemaHits, nonce: str) -> list[str]:
    lines = [f"{len(r.hits)} columns best matching the query:", open_data(nonce)]
    for h in r.hits:
        desc = f" — {h.description}" if h.description else ""
        lines.append(f"- {h.table}.{h.column} ({h.score:.3f}){desc}")
    lines.append(close_data(nonce))
    lines.extend(x for x in (r.note, r.cut) if x)
    return lines


def _render_query(r: QueryOutput, nonce: str) -> list[str]:
    more = " (truncated: more rows exist)" if r.truncated else ""
    lines = [f"{r.row_count} rows{more} in {r.elapsed_ms:.0f} ms", *_table_lines(r.columns, r.rows, nonce)]
    lines.extend(x for x in (r.reminder, r.note, r.cut) if x)
    lines.extend(f"hint: {h}" for h in r.hints)
    lines.append(f"executed: {r.sql_executed}")
    return lines


def _render_plan(r: QueryPlan, nonce: str) -> list[str]:
    lines = ["plan:", open_data(nonce), *r.plan, close_data(nonce)] if r.plan else []
    lines.extend(f"hint: {h}" for h in r.hints)
    lines.extend(x for x in (r.note, r.cut) if x)
    return lines


def _render_source(r: SourceInfo, nonce: str) -> str:
    desc = f" — {r.description}" if r.description else ""
    line = f"- {r.name} ({r.dialect}, {r.tables} tables){desc}"
    if r.relevance is not None:
        line += f" [{'likely irrelevant' if r.relevance.likely_irrelevant else 'relevant'}: {r.relevance.reason}]"
    return line


def _render_sources(r: SourceList, nonce: str) -> list[str]:
    # Descriptions are the administrator's; table names in the reasons come from the databases.
    lines = [f"{len(r.sources)} sources:", open_data(nonce), *(_render_source(s, nonce) for s in r.sources)]
    lines.append(close_data(nonce))
    if any(s.relevance and s.relevance.likely_irrelevant for s in r.sources):
        lines.append("Skip the sources marked likely irrelevant unless the evidence clearly needs them.")
    if len(r.sources) > 1:
        lines.append("Name the source in every other tool call: source=NAME.")
    return lines


_RENDERERS: dict[type, Any] = {
    TableList: _render_table_list,
    TableDescription: _render_description,
    DistinctValues: _render_distinct,
    FoundRows: _render_found,
    SchemaHits: _render_hits,
    QueryOutput: _render_query,
    QueryPlan: _render_plan,
    SourceInfo: lambda r, nonce: [_render_source(r, nonce).removeprefix("- ") + f" at {r.url}"],
    SourceList: _render_sources,
}
