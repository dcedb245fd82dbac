"""What a program's `sql()` gets back: rows, and the role's secured path giving them in-process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sophrosyne.environment import Environment


@dataclass
class Rows:
    """A query result for a program: column names, rows, and whether a cap cut it."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False
    sql_executed: str = ""
    notes: list[str] = field(default_factory=list)


def environment_rows(env: Environment, query: str) -> Rows:
    """One query down the role's secured path (`Environment.execute_sql`), as rows for a program."""
    result = env.execute_sql(query)
    notes = [x for x in (result.cut, result.reminder) if x]
    return Rows(result.columns, result.rows, result.truncated, result.sql_executed, notes)
