"""execute_sql: one read-only statement through the secured path, its rows capped and cut to the budget."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from sqlglot import exp

from sophrosyne.base.text import counted
from sophrosyne.errors import AccessDenied
from sophrosyne.sql.hints import query_hints
from sophrosyne.sql.secure import Secured
from sophrosyne.tools.arguments import count
from sophrosyne.tools.base import Context, Result, Screen, cell, cut_note, fit_rows, join_notes, table_lines
from sophrosyne.tools.budget import cut_lists, fit, fits


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

    def agent_lines(self, nonce: str) -> list[str]:
        more = " (truncated: more rows exist)" if self.truncated else ""
        lines = [
            f"{counted(self.row_count, 'row')}{more} in {self.elapsed_ms:.0f} ms",
            *table_lines(self.columns, self.rows, nonce),
        ]
        lines.extend(x for x in (self.reminder, self.note, self.cut) if x)
        lines.extend(f"hint: {h}" for h in self.hints)
        lines.append(f"executed: {self.sql_executed}")
        return lines

    def cut_to_budget(self, budget: int) -> None:
        base = self.cut
        width = len(self.columns)
        # A wide result: the columns that fit in one row's share of the budget, then the rows that fit.
        if width > 1 and not self._first_row_fits(budget // 2):
            columns, rows = list(self.columns), [list(row) for row in self.rows]
            low, high = 1, width - 1
            while low < high:
                mid = (low + high + 1) // 2
                self.columns, self.rows = columns[:mid], [row[:mid] for row in rows]
                if self._first_row_fits(budget // 2):
                    low = mid
                else:
                    high = mid - 1
            self.columns, self.rows = columns[:low], [row[:low] for row in rows]
            base = join_notes(
                base, f"cut: showing {low} of {width} columns (token budget); select the columns you need."
            )
        total = len(self.rows)

        def note(kept: dict[str, int]) -> None:
            shown = kept["rows"]
            self.row_count = shown
            more = None
            if shown < total:
                more = f"cut: showing {shown} of {total} rows (token budget); aggregate, or add a WHERE or LIMIT."
                self.truncated = True
            self.cut = join_notes(base, more)

        cut_lists(self, ["rows"], budget, note)

    def _first_row_fits(self, budget: int) -> bool:
        head = self.model_copy(update={"rows": self.rows[:1]})
        return fits(head, budget)

    def show(self, screen: Screen) -> None:
        table = screen.grid(None, *(screen.escape(c) for c in self.columns))
        for row in self.rows:
            table.add_row(*(screen.text(v) for v in row))
        screen.show(table)
        more = " (truncated: more rows exist)" if self.truncated else ""
        screen.notes(f"{counted(self.row_count, 'row')}{more} in {self.elapsed_ms:.0f} ms", self.reminder, self.cut)


def execute_sql(
    env: Context,
    sql: Annotated[str, Field(description="One read-only SELECT or WITH statement.")],
    limit: Annotated[int | None, Field(description="Most rows (capped by the server).")] = None,
) -> QueryOutput:
    """Run one read-only statement: rows (capped), columns and the SQL as executed; refusals say why.

    Example: execute_sql(sql="SELECT COUNT(*) FROM employees")
    """
    settings, secure = env.settings, env.secure
    own_sql_allowed(env)
    cap, capped = count(limit, "limit", settings.limits.row_cap, settings.limits.row_cap, "row_cap")
    return rows_of(env, secure.run(sql, limit=cap), capped)


def own_sql_allowed(env: Context) -> None:
    """AccessDenied for a role limited to the tools its policy declares (`free_sql = false`)."""
    role = env.secure.role
    if not role.free_sql:
        raise AccessDenied(
            f"role `{role.name}` runs only the tools its policy declares for it, not statements of its own.",
            hint="Call one of those tools (tools/list names them).",
        )


def rows_of(env: Context, secured: Secured, capped: str | None = None) -> QueryOutput:
    """The answer of a statement run down the secured path: its rows cut to the budget, the SQL as executed."""
    settings, secure = env.settings, env.secure
    result, executed, expression = secured
    read = [ref.name for ref in expression.find_all(exp.Table)]
    rows = [[cell(v, settings.limits.value_chars) for v in r] for r in result.rows]
    shown, cut_by_budget = fit_rows(result.columns, rows, settings.limits.token_budget)
    cut = (
        cut_note(len(shown), None if result.truncated else len(rows), "rows", "token budget") if cut_by_budget else None
    )
    slow = result.elapsed_ms >= settings.limits.slow_query_s * 1000
    output = QueryOutput(
        # Only a slow statement reads the catalog: an unrestricted role's statement needs none.
        hints=query_hints(expression, env.catalog, env.index_leads()) if slow else [],
        columns=result.columns,
        rows=shown,
        row_count=len(shown),
        truncated=result.truncated or cut_by_budget,
        sql_executed=secure.shown_sql(executed, expression),
        elapsed_ms=round(result.elapsed_ms, 2),
        reminder=env.reminder(read),
        note=" ".join(x for x in (capped, result.cut) if x) or None,
        cut=cut,
    )
    return fit(output, settings.limits.token_budget)
