"""list_tables: a schema of any size listed with directives, same-shape tables once, a name pattern, and pages
that fit the budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Protocol

from pydantic import Field

from sophrosyne.base import patterns
from sophrosyne.base.data_blocks import close_data, open_data
from sophrosyne.base.text import CHARS_PER_TOKEN, counted, one_line, shorten
from sophrosyne.errors import CacheUnavailable, InvalidArgument, NotReady, QueryTimeout
from sophrosyne.schema.catalog import Catalog, ForeignKey, Table, TableGroup, group_tables
from sophrosyne.tools.arguments import MAX_TERM_CHARS, cut_for_directives
from sophrosyne.tools.base import Context, Result, Screen, join_notes, rows_text
from sophrosyne.tools.budget import cut_lists, fit, measure, most_that_fit


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

    def agent_lines(self, nonce: str) -> list[str]:
        # Names, descriptions and the values quoted in directive reasons all come from the database.
        shown = len(self.tables) + len(self.groups)
        total = self.total
        where = f"{self.offset + 1}-{self.offset + shown} of {total}" if self.offset or shown < total else f"{total}"
        lines = [f"tables in {self.source} ({where}; groups of same-shape tables count once):"]
        lines.append(open_data(nonce))
        lines.extend(f"- schema {s.name}: {s.tables} tables" for s in self.schemas)
        for t in self.tables:
            extra = f"; joins: {', '.join(t.join_keys)}" if t.join_keys else ""
            kind = " (view)" if t.kind == "view" else ""
            desc = f" — {t.description}" if t.description else ""
            lines.append(f"- {t.name}{kind}{desc} [{rows_text(t.row_estimate, t.rows_at_least)}{extra}]")
        for g in self.groups:
            lines.append(
                f"- group {g.pattern}: {g.count} tables with the same {g.columns} columns ({g.first} … {g.last})"
            )
        lines.append(close_data(nonce))
        if self.directives:
            lines.append(
                "Directives: these tables are likely irrelevant to the question; do not explore them unless "
                "the evidence clearly needs them:"
            )
            lines.append(open_data(nonce))
            lines.extend(f"- {d.table}: {d.reason} (confidence {d.confidence})" for d in self.directives)
            lines.append(close_data(nonce))
        lines.extend(x for x in (self.directive_note, self.note, self.cut) if x)
        return lines

    def cut_to_budget(self, budget: int) -> None:
        totals = {"tables": len(self.tables), "groups": len(self.groups), "directives": len(self.directives)}
        base = self.cut

        def note(kept: dict[str, int]) -> None:
            parts = [f"{kept[f]} of {totals[f]} {f}" for f in totals if kept.get(f, totals[f]) < totals[f]]
            self.cut = join_notes(base, f"cut: showing {', '.join(parts)} (token budget)." if parts else None)

        cut_lists(self, ["directives", "groups", "tables"], budget, note)

    def show(self, screen: Screen) -> None:
        title = f"{counted(len(self.tables), 'table')} in {screen.escape(self.source)}"
        table = screen.grid(title, "table", "rows", "joins", "description")
        for t in self.tables:
            rows = f"~{t.row_estimate:,}" if t.row_estimate is not None else "?"
            name = f"{t.name} (view)" if t.kind == "view" else t.name
            keys = "\n".join(screen.escape(k) for k in t.join_keys)
            table.add_row(screen.escape(name), rows, keys, screen.escape(t.description))
        screen.show(table)
        for g in self.groups:
            screen.notes(
                f"group {g.pattern}: {g.count} tables with the same {g.columns} columns ({g.first} … {g.last})"
            )
        if self.directives:
            flagged = screen.grid("likely irrelevant to the question", "table", "confidence", "reason")
            for d in self.directives:
                flagged.add_row(screen.escape(d.table), d.confidence, screen.escape(d.reason))
            screen.show(flagged)
        screen.notes(self.note, self.directive_note, self.cut)


class Guide(Protocol):
    """What list_tables asks of the moderator (directives/moderator.py): directives for a question."""

    def directives(self, question: str | None, knowledge: str | None) -> tuple[list[Directive], str | None]: ...


class Lister(Context, Protocol):
    @property
    def moderator(self) -> Guide: ...


def list_tables(
    env: Lister,
    question: Annotated[str | None, Field(description="The user's question, for directives.")] = None,
    knowledge: Annotated[str | None, Field(description="Evidence for the question.")] = None,
    pattern: Annotated[str | None, Field(description="Glob (sales_*) or part of a name.")] = None,
    offset: Annotated[int | None, Field(description="Skip this many (next page).")] = None,
) -> TableList:
    """Call first. Tables with description, row estimate and join keys; with a question, the tables
    likely irrelevant to it. Paged: the note gives the next offset.

    Example: list_tables(question="How many employees were absent last month?")
    """
    # Same-shape groups are shown once; a large schema is paged to fit the token budget.
    catalog = env.catalog
    settings = env.settings
    budget = settings.limits.token_budget
    base = TableList(source=shorten(env.name, 80), tables=[])
    question, knowledge, cut_inputs = cut_for_directives(
        question, knowledge, settings.limits.question_chars, settings.limits.knowledge_chars
    )
    try:
        base.directives, base.directive_note = env.moderator.directives(question, knowledge)
    except (NotReady, QueryTimeout, CacheUnavailable) as exc:  # the tables are listed all the same
        base.directive_note = f"No directives this time: {exc.message} {exc.hint or ''}".strip()
    base.directive_note = " ".join(x for x in (cut_inputs, base.directive_note) if x) or None
    if base.directives:
        # Directives take at most part of the budget, so that the tables are listed too.
        cut_directives(base, budget * 2 // 5)

    def build(tables: list[TableSummary], groups: list[TableGroupInfo]) -> TableList:
        return base.model_copy(update={"tables": tables, "groups": groups})

    listed = page(catalog, build, pattern=pattern, offset=offset or 0, budget=budget, inferred=env.inferred_joins())
    return fit(listed, budget)


@dataclass
class Entry:
    """One line of a listing: a table, or a group of same-shape tables shown once."""

    table: Table | None = None
    group: TableGroup | None = None


def matcher(pattern: str | None) -> Callable[[str], bool]:
    """A glob (`sales_*`, `*order*`), or else a substring, matched without regard to case, in time linear in
    the name (the glob runs on RE2, see patterns.py); a pattern longer than any name is refused first."""
    if not pattern:
        return lambda name: True
    if len(pattern) > MAX_TERM_CHARS:
        raise InvalidArgument(
            f"`pattern` is {len(pattern):,} characters long; at most {MAX_TERM_CHARS:,} are read.",
            hint="Give a glob (`sales_*`) or a part of a table name.",
        )
    wanted = pattern.lower()
    if not any(ch in wanted for ch in "*?["):
        return lambda name: wanted in name.lower()
    try:
        compiled = patterns.glob(wanted)
    except patterns.PatternError as exc:
        raise InvalidArgument(
            f"the pattern is not a glob that can be matched: {exc}.",
            hint="Use * for any text, ? for one character and [abc] or [a-z] for one of a set.",
        ) from None
    return lambda name: compiled.search(name.lower()) is not None


def entries(catalog: Catalog, pattern: str | None) -> list[Entry]:
    """The listing's lines in catalog order (search path first), each group where its first table is."""
    match = matcher(pattern)
    tables = [t for t in catalog.tables.values() if match(t.name)]
    groups = catalog.groups() if not pattern else group_tables(tables)
    first_of = {g.tables[0]: g for g in groups}
    grouped = {name for g in groups for name in g.tables}
    listed: list[Entry] = []
    for t in tables:
        if t.name in first_of:
            listed.append(Entry(group=first_of[t.name]))
        elif t.name not in grouped:
            listed.append(Entry(table=t))
    return listed


def schema_lines(catalog: Catalog) -> list[SchemaInfo]:
    """One line per schema when the catalog spans several (the search path's tables go by plain name)."""
    counts: dict[str, int] = {}
    for t in catalog.tables.values():
        name = t.schema if t.local_name and t.schema else "(search path)"
        counts[name] = counts.get(name, 0) + 1
    if len(counts) < 2:
        return []
    return [SchemaInfo(name=name, tables=n) for name, n in counts.items()]


def summary(t: Table, inferred: list[ForeignKey] | None = None) -> TableSummary:
    """One line of the listing; joins the schema does not declare but that were inferred come marked."""
    return TableSummary(
        name=t.name,
        kind=t.kind,
        description=one_line(t.description),
        row_estimate=t.row_estimate,
        rows_at_least=t.rows_at_least,
        join_keys=[join_key(fk) for fk in [*t.foreign_keys, *(inferred or [])]],
    )


def join_key(fk: ForeignKey) -> str:
    marked = f" (inferred, {fk.confidence:.2f})" if fk.inferred else ""
    return f"{', '.join(fk.columns)} -> {fk.ref_table}.{', '.join(fk.ref_columns)}{marked}"


def group_info(catalog: Catalog, g: TableGroup) -> TableGroupInfo:
    return TableGroupInfo(
        pattern=g.pattern,
        count=len(g.tables),
        first=g.tables[0],
        last=g.tables[-1],
        columns=len(catalog.tables[g.tables[0]].columns),
    )


def page(
    catalog: Catalog,
    listing: Callable[[list[TableSummary], list[TableGroupInfo]], TableList],
    *,
    pattern: str | None,
    offset: int,
    budget: int,
    inferred: dict[str, list[ForeignKey]] | None = None,
) -> TableList:
    """The entries from `offset` on that fit `budget` with the rest of the response (`listing` builds it);
    the note says how to see the next ones."""
    if offset < 0:
        raise InvalidArgument(f"`offset` must be 0 or more, not {offset}.", hint="Leave it out to start at the top.")
    listed = entries(catalog, pattern)
    total = len(listed)
    rest = listed[offset:]
    # Each line costs at least this much: more can never fit, and measuring them would only cost time.
    most = min(len(rest), max(1, budget * CHARS_PER_TOKEN // 24))
    schemas = schema_lines(catalog)
    # Each line is made once: the search below builds listings of many lengths from the same lines (at 5,000
    # tables, making them again for each length was most of a first answer's listing).
    lines = [summary(e.table, (inferred or {}).get(e.table.name)) if e.table is not None else None for e in rest[:most]]
    groups = [group_info(catalog, e.group) if e.group is not None else None for e in rest[:most]]

    def build(count: int) -> TableList:
        result = listing(
            [line for line in lines[:count] if line is not None],
            [group for group in groups[:count] if group is not None],
        )
        result.total, result.offset = total, offset
        result.schemas = schemas
        result.cut = _next_page(offset, count, total, pattern)
        return result

    # The most entries that fit, with the note they need.
    result = build(most_that_fit(lambda count: measure(build(count)), budget, most))
    if offset >= total and total:
        result.note = f"offset {offset} is past the last of the {total} entries; start again at offset 0."
    elif not total and pattern:
        result.note = f"no table matches the pattern {pattern!r}; a glob (`sales_*`) or a part of a name."
    return result


def _next_page(offset: int, shown: int, total: int, pattern: str | None) -> str | None:
    if offset + shown >= total:
        return None
    filtered = f", pattern={pattern!r}" if pattern else ""
    return (
        f"cut: showing entries {offset + 1}-{offset + shown} of {total} (token budget). Next: "
        f"list_tables(offset={offset + shown}{filtered}); or narrow with list_tables(pattern='sales_*') "
        "or search_schema('what the column holds')."
    )


def cut_directives(result: TableList, budget: int) -> None:
    """The leading directives that fit `budget` (they come most certain first), with a count of the rest."""
    total = len(result.directives)

    def note(kept: dict[str, int]) -> None:
        left = total - kept["directives"]
        more = (
            f"{left:,} more tables are likely irrelevant but not named here (token budget); describe_table and "
            "execute_sql remind you when you touch one."
            if left
            else None
        )
        result.cut = more

    cut_lists(result, ["directives"], budget, note)
    if result.cut:
        result.directive_note = " ".join(x for x in (result.directive_note, result.cut) if x)
        result.cut = None
