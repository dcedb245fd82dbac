"""find_rows: a term looked for in the text columns of tables, one bounded query per table."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field
from sqlglot import exp

from sophrosyne.base import deadline
from sophrosyne.base.text import counted, estimate_tokens, shorten
from sophrosyne.errors import InvalidArgument, QueryTimeout, RejectedSQL
from sophrosyne.schema.catalog import Table, is_text_type, table_ref
from sophrosyne.sql.lookup import column_named, table_named
from sophrosyne.sql.queries import contains
from sophrosyne.sql.secure import SecurePath
from sophrosyne.tools.arguments import MAX_FOUND_ROWS, count, not_too_long
from sophrosyne.tools.base import Context, Result, Screen, cell, join_notes, table_lines
from sophrosyne.tools.budget import cut_lists, fit

# Below this much of a call's time left, no new table is searched: the answer is given instead.
MIN_STATEMENT_S = 0.05


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

    def agent_lines(self, nonce: str) -> list[str]:
        lines = [f"rows containing {self.term!r} (searched {counted(self.searched_tables, 'table')}):"]
        for m in self.matches:
            # The table's name is the database's: it heads its rows inside their block.
            title = f"{m.table} (matched in {', '.join(m.matched_columns)}):"
            lines.extend(table_lines(m.columns, m.rows, nonce, title))
        if not self.matches:
            lines.append("no rows matched.")
        lines.extend(x for x in (self.note, self.cut) if x)
        return lines

    def cut_to_budget(self, budget: int) -> None:
        total, base = len(self.matches), self.cut
        share = max(1, budget // max(1, total))
        for match in self.matches:
            # Each table's rows get an equal share; a wide table keeps the columns that fit in it.
            kept = _rows_within(match.columns, match.rows, share)
            if kept < len(match.rows):
                match.rows = match.rows[:kept]
                base = join_notes(base, f"rows of {match.table} cut to {kept} (token budget).")

        def note(kept: dict[str, int]) -> None:
            left = total - kept["matches"]
            more = f"cut: {left} more tables with matches not shown (token budget)." if left else None
            self.cut = join_notes(base, more)

        cut_lists(self, ["matches"], budget, note)

    def show(self, screen: Screen) -> None:
        for m in self.matches:
            title = screen.escape(f"{m.table} (matched in {', '.join(m.matched_columns)})")
            table = screen.grid(title, *(screen.escape(c) for c in m.columns))
            for row in m.rows:
                table.add_row(*(screen.text(v) for v in row))
            screen.show(table)
        screen.notes(
            f"searched {counted(self.searched_tables, 'table')}" + ("" if self.matches else "; no rows matched")
        )
        screen.notes(self.note, self.cut)


def _rows_within(columns: list[str], rows: list[list[Any]], budget: int) -> int:
    used = estimate_tokens(json.dumps(columns, default=str))
    for i, row in enumerate(rows):
        used += estimate_tokens(json.dumps(row, ensure_ascii=False, default=str)) * 2
        if used > budget:
            return max(0, i)
    return len(rows)


def find_rows(
    env: Context,
    term: Annotated[str, Field(description="Text to look for (case-insensitive).")],
    table: Annotated[str | None, Field(description="Only this table.")] = None,
    columns: Annotated[list[str] | None, Field(description="Only these columns.")] = None,
    limit: Annotated[int | None, Field(description="Most rows per table (default 20).")] = None,
    views: Annotated[bool, Field(description="Views too.")] = False,
) -> FoundRows:
    """Rows whose text columns contain a term, across tables: where a value lives.

    Example: find_rows(term="Field Operations")
    """
    # A case-insensitive substring, table by table; with `views`, the views the role may read are searched too
    # (a view repeats its tables' rows, so not by default)."""
    if not term.strip():
        raise InvalidArgument("find_rows needs a non-empty term.", hint="Pass the word or value to look for.")
    not_too_long(term, "term")
    settings = env.settings
    limit, capped = count(limit, "limit", settings.reading.find_rows_limit, MAX_FOUND_ROWS)
    catalog = env.catalog
    tables = (
        [table_named(catalog, table, env.name)]
        if table
        else [t for t in catalog.tables.values() if t.kind == "table" or (views and t.kind == "view")]
    )
    wanted = {x.lower() for x in columns or []}

    def names_of(t: Table) -> list[str]:
        if columns and table:
            return [column_named(t, c).name for c in columns]
        if columns:
            return [c.name for c in t.columns if c.name.lower() in wanted]
        return [c.name for c in t.columns if is_text_type(c.type)]

    found = search_tables(
        term,
        tables,
        names_of,
        env.secure,
        limit=limit,
        value_chars=settings.limits.value_chars,
        timeout_s=settings.limits.timeout_s,
        note=capped,
    )
    return fit(found, settings.limits.token_budget)


def search_tables(
    term: str,
    tables: list[Table],
    names_of: Callable[[Table], list[str]],
    secure: SecurePath,
    *,
    limit: int,
    value_chars: int,
    timeout_s: float,
    note: str | None,
) -> FoundRows:
    """Rows of each table whose columns `names_of(table)` hold `term` (case-insensitive substring), read by
    the caller's secured path; stops before the call's deadline and says how far it got."""
    engine = secure.engine
    matches: list[TableRows] = []
    refused: list[str] = []
    searched = 0
    stopped = False
    for t in tables:
        if _deadline_near():
            stopped = True
            break
        names = names_of(t)
        if not names:
            continue
        types = {c.name: c.type for c in t.columns}
        condition = exp.or_(*(contains(engine, exp.column(n, quoted=True), types.get(n, ""), term) for n in names))
        query = exp.select("*").from_(table_ref(t)).where(condition).limit(limit)
        try:
            result = secure.query(query.sql(dialect=engine.name), limit=limit)
        except QueryTimeout:
            stopped = True
            break
        except RejectedSQL:
            refused.append(t.name)  # a name the guard reads as a file on this engine: told, not fatal
            continue
        searched += 1
        if not result.rows:
            continue
        rows = [[cell(v, value_chars) for v in r] for r in result.rows]
        matched = sorted(
            {n for n in names for r in result.rows if term.lower() in str(r[result.columns.index(n)] or "").lower()}
            if all(n in result.columns for n in names)
            else set(names)
        )
        matches.append(TableRows(table=t.name, columns=result.columns, rows=rows, matched_columns=matched))
    cut = None
    if stopped:
        cut = (
            f"cut: stopped at the {timeout_s:g} s time limit; {len(tables) - searched} of "
            f"{len(tables)} tables not searched: pass table= to search one."
        )
    if refused:
        shown = ", ".join(shorten(n, 40) for n in refused[:5])
        note = " ".join(x for x in (note, f"not searched (names read as files here): {shown}.") if x)
    return FoundRows(term=term, matches=matches, searched_tables=searched, note=note, cut=cut)


def _deadline_near() -> bool:
    """Less than a statement's worth of the call's time left: stop starting new work."""
    running = deadline.current()
    return running is not None and running.remaining() < MIN_STATEMENT_S
