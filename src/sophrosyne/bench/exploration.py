"""Exploration metrics from tool calls: over-exploration as the Sophrosyne paper counts it, extra final tables.

Over-exploration (the paper, section 2: "exploring tables that prove to be irrelevant") is counted per question
as the tables the agent described, sampled, searched or queried that the gold SQL does not read. The same
rule reads an agent's trace (`bench run`) and an audit log of `sophrosyne serve` (`bench score --audit`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sophrosyne.schema.catalog import Catalog
from sophrosyne.tools.registry import FOREIGN_SQL_TOOLS, TABLE_TOOLS
from sophrosyne.tools.registry import SQL_TOOLS as OUR_SQL_TOOLS

# Tools whose SQL argument reads tables: queried (a FlexSQL program's `sql()` calls and other servers' SQL tools
# included). Tools whose `table` argument names the table looked at are the registry's TABLE_TOOLS.
SQL_TOOLS = (*OUR_SQL_TOOLS, "sql()", *FOREIGN_SQL_TOOLS)


def sql_tables(sql: str | None, dialect: str | None = None) -> set[str]:
    """Base tables a statement names: table references that are not its own CTEs (an unparsable statement
    names none)."""
    if not sql or not sql.strip():
        return set()
    try:
        tree = sqlglot.parse_one(sql, read=dialect or None)
    except (SqlglotError, ValueError):
        return set()
    if tree is None:
        return set()
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {t.name for t in tree.find_all(exp.Table) if t.name and (t.args.get("db") or t.name.lower() not in ctes)}


def tables_of_call(tool: str, arguments: Mapping[str, Any], dialect: str | None = None) -> set[str]:
    """The tables one tool call explored (list_tables and search_schema explore none: they only list)."""
    if tool in TABLE_TOOLS:
        table = arguments.get("table")
        return {table} if isinstance(table, str) and table else set()
    if tool in SQL_TOOLS:
        sql = next((v for k, v in arguments.items() if k in ("sql", "query") and isinstance(v, str)), None)
        return sql_tables(sql, dialect)
    return set()


def canonical(tables: Iterable[str], catalog: Catalog | None) -> set[str]:
    """Table names as the catalog spells them (names match case-insensitively); unknown names kept as given."""
    out: set[str] = set()
    for name in tables:
        bare = name.split(".")[-1].strip('"`[]')
        table = catalog.table(bare) if catalog is not None else None
        out.add(table.name if table is not None else bare)
    return out


@dataclass
class Exploration:
    """What one question's run explored, and what it cost."""

    explored: list[str] = field(default_factory=list)
    over_explored: list[str] = field(default_factory=list)  # explored, not read by the gold SQL
    final_tables: list[str] = field(default_factory=list)
    extra_final: list[str] = field(default_factory=list)  # in the final SQL, not read by the gold SQL
    missing_final: list[str] = field(default_factory=list)  # read by the gold SQL, absent from the final SQL
    tool_calls: int = 0
    tokens_in: int | None = None  # the model's prompt tokens (unknown for an external agent)
    tokens_out: int | None = None  # the model's completion tokens
    response_tokens: int | None = None  # tokens of the tool responses the agent read (from an audit log)
    wall_s: float = 0.0
    cost: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "explored": self.explored,
            "over_explored": self.over_explored,
            "over_exploration": len(self.over_explored),
            "final_tables": self.final_tables,
            "extra_final": self.extra_final,
            "extra_final_tables": len(self.extra_final),
            "missing_final": self.missing_final,
            "tool_calls": self.tool_calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "response_tokens": self.response_tokens,
            "wall_s": round(self.wall_s, 3),
            "cost": self.cost,
        }


def measure(
    calls: Iterable[tuple[str, Mapping[str, Any]]],
    *,
    gold: set[str],
    final_sql: str | None,
    catalog: Catalog | None,
    dialect: str | None = None,
    extra_tables: Iterable[str] = (),
    tokens_in: int | None = None,
    tokens_out: int | None = None,
    response_tokens: int | None = None,
    wall_s: float = 0.0,
    cost: float | None = None,
) -> Exploration:
    """Exploration metrics of one question from its tool calls `(tool, arguments)` in order; `extra_tables`
    are tables read some other way (a Python program's queries)."""
    explored: set[str] = canonical(extra_tables, catalog)
    count = 0
    for tool, arguments in calls:
        count += 1
        explored |= canonical(tables_of_call(tool, arguments, dialect), catalog)
    gold_names = canonical(gold, catalog)
    final = canonical(sql_tables(final_sql, dialect), catalog)
    return Exploration(
        explored=sorted(explored),
        over_explored=sorted(explored - gold_names),
        final_tables=sorted(final),
        extra_final=sorted(final - gold_names),
        missing_final=sorted(gold_names - final) if final_sql else [],
        tool_calls=count,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        response_tokens=response_tokens,
        wall_s=wall_s,
        cost=cost,
    )


def gold_tables_of(sql: str, catalog: Catalog | None, dialect: str = "sqlite") -> set[str]:
    """The base tables the gold SQL reads (the oracle's rule), empty when it does not parse."""
    if catalog is not None:
        from sophrosyne.directives import gold_tables

        try:
            return gold_tables(sql, catalog, dialect)
        except (SqlglotError, ValueError):
            return set()
    return sql_tables(sql, dialect)
