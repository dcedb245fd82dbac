"""`sophrosyne demo`: the explorer pattern step by step on the embedded HR database, with no model."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel
from rich.markup import escape
from rich.panel import Panel

from sophrosyne.cli.terminal import console
from sophrosyne.environment import Environment
from sophrosyne.errors import SophrosyneError
from sophrosyne.tools.base import render


def run_demo(env: Environment) -> None:
    """Print each step's title, then what the agent would see."""
    for title, step in demo_steps(env):
        console.print(Panel(escape(title), style="bold cyan", expand=False))
        step()


def demo_steps(env: Environment) -> list[tuple[str, Callable[[], None]]]:
    question = "How many employees in the operations team were absent last month (November 2025)?"
    grounded = (
        "SELECT COUNT(DISTINCT a.employee_id) AS absent_employees\n"
        "FROM absence_records AS a JOIN employees AS e ON a.employee_id = e.employee_id\n"
        "WHERE e.department = 'D042' AND a.absence_date >= '2025-11-01' AND a.absence_date < '2025-12-01'"
    )

    def show(result: BaseModel) -> None:
        console.print(escape(render(result)), highlight=False)

    def rejected() -> None:
        try:
            env.execute_sql("DELETE FROM absence_records")
        except SophrosyneError as exc:
            console.print(f"[red]refused:[/] {escape(str(exc))}")

    return [
        (
            f"Question: {question}\n1. list_tables, always first",
            lambda: show(env.list_tables(question=question)),
        ),
        (
            "   search_schema finds where things are stored, in schemas too large to read whole",
            lambda: show(env.search_schema("date of an unexplained absence", k=3)),
        ),
        (
            "2. describe_table employees: `department` holds codes, not names",
            lambda: show(env.describe_table("employees")),
        ),
        (
            "   describe_table absence_records: the unexplained absences",
            lambda: show(env.describe_table("absence_records")),
        ),
        (
            "3. ground the filter: get_distinct_values(departments, dept_name, search='operations')\n"
            "   three matches: an agent must ask which one; here the user means Operations and Logistics",
            lambda: show(env.get_distinct_values("departments", "dept_name", search="operations")),
        ),
        (
            "   find_rows('Operations and Logistics') gives its code",
            lambda: show(env.find_rows("Operations and Logistics", table="departments")),
        ),
        (
            "4. the grounded query (COUNT DISTINCT: one employee can be absent twice)",
            lambda: show(env.execute_sql(grounded)),
        ),
        ("5. a write is refused before it reaches the database", rejected),
    ]
