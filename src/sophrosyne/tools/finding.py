"""What find_rows does: look for a term in the text columns of tables, one bounded query per table."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sophrosyne.base import deadline
from sophrosyne.base.text import shorten
from sophrosyne.database import QueryResult
from sophrosyne.engines import Engine
from sophrosyne.errors import QueryTimeout, RejectedSQL
from sophrosyne.schema.catalog import Table, table_ref
from sophrosyne.tools.grounding import contains
from sophrosyne.tools.results import FoundRows, TableRows, cell

# Below this much of a call's time left, no new table is searched: the answer is given instead.
MIN_STATEMENT_S = 0.05

Run = Callable[[str, int], QueryResult]


def find_rows(
    term: str,
    tables: list[Table],
    names_of: Callable[[Table], list[str]],
    run: Run,
    engine: Engine,
    *,
    limit: int,
    value_chars: int,
    timeout_s: float,
    note: str | None,
) -> FoundRows:
    """Rows of each table whose columns `names_of(table)` hold `term` (case-insensitive substring), read by
    `run` (the caller's secured path); stops before the call's deadline and says how far it got."""
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
            result = run(query.sql(dialect=engine.name), limit)
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
