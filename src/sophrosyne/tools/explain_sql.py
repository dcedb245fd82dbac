"""explain_sql: the engine's plan for a read-only statement, with hints about full scans of large tables."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sophrosyne.base.data_blocks import close_data, open_data
from sophrosyne.sql.hints import plan_hints
from sophrosyne.tools.base import Context, Result
from sophrosyne.tools.budget import cut_lists, fit
from sophrosyne.tools.execute_sql import own_sql_allowed


class QueryPlan(Result):
    sql_executed: str
    plan: list[str]
    hints: list[str] = Field(default_factory=list)
    note: str | None = None
    cut: str | None = None

    def agent_lines(self, nonce: str) -> list[str]:
        lines = ["plan:", open_data(nonce), *self.plan, close_data(nonce)] if self.plan else []
        lines.extend(f"hint: {h}" for h in self.hints)
        lines.extend(x for x in (self.note, self.cut) if x)
        return lines

    def cut_to_budget(self, budget: int) -> None:
        total = len(self.plan)

        def note(kept: dict[str, int]) -> None:
            shown = kept["plan"]
            self.cut = f"cut: showing {shown} of {total} plan lines (token budget)." if shown < total else None

        cut_lists(self, ["hints", "plan"], budget, note)


def explain_sql(env: Context, sql: Annotated[str, Field(description="One read-only SELECT statement.")]) -> QueryPlan:
    """The engine's plan, with hints: full scans, joins without an index, leading-wildcard LIKE.

    Example: explain_sql(sql="SELECT * FROM attendance WHERE employee_id = 7")
    """
    settings, secure = env.settings, env.secure
    own_sql_allowed(env)
    result, executed, expression = secure.run(sql, limit=500, explain=True)
    plan, scanned = secure.engine.read_plan(result.columns, result.rows)
    # Sizes as this role sees them: a filtered table's full size is not its to know.
    hints = plan_hints(expression, env.catalog, env.index_leads(), scanned)
    if not secure.role.unrestricted:
        # A plan shows filter predicates, index names and base-table sizes: a restricted role gets hints only.
        hidden = QueryPlan(
            sql_executed=secure.shown_sql(executed, expression),
            plan=[],
            hints=sorted(set(hints)),
            note="the plan itself is not shown to a restricted role; the hints are.",
        )
        return fit(hidden, settings.limits.token_budget)
    return fit(QueryPlan(sql_executed=executed, plan=plan, hints=sorted(set(hints))), settings.limits.token_budget)
