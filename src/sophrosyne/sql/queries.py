"""The statements the tools build themselves (samples, distinct values, searches), quoted for each engine."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sophrosyne.engines import Engine
from sophrosyne.schema.catalog import Table, is_text_type, table_ref


def select_all(table: Table, dialect: str, limit: int) -> str:
    """`SELECT * FROM table LIMIT limit`, quoted for `dialect`: built once per table (describe asks again and
    again, and building it was a third of a small describe's time)."""
    key = (table.identifier, table.schema if table.local_name else None, dialect, limit)
    sql = _SELECT_ALL.get(key)
    if sql is None:
        if len(_SELECT_ALL) >= _SELECT_ALL_KEPT:
            _SELECT_ALL.clear()
        sql = _SELECT_ALL[key] = exp.select("*").from_(table_ref(table)).limit(limit).sql(dialect=dialect)
    return sql


_SELECT_ALL: dict[tuple[str, str | None, str, int], str] = {}
_SELECT_ALL_KEPT = 4096


def distinct_query(table: Table, column: str, limit: int, dialect: str, among: list[Any] | None = None) -> str:
    """`SELECT DISTINCT column FROM table [WHERE column IN (among)] LIMIT limit`, quoted for `dialect`."""
    target = exp.column(column, quoted=True)
    query = exp.select(target).distinct().from_(table_ref(table)).limit(limit)
    if among is not None:
        query = query.where(target.isin(*(exp.convert(v) for v in among)))
    return query.sql(dialect=dialect)


def contains(
    engine: Engine, column: exp.Column, type_name: str, needle: str, *, any_spacing: bool = False
) -> exp.Expression:
    """`column` holds `needle`, ignoring case, as cheaply as the engine allows (wildcards in it are literal;
    with `any_spacing`, its words may stand apart by any run of characters)."""
    text: exp.Expression = column if is_text_type(type_name) else exp.cast(column, exp.DataType.build("TEXT"))
    words = needle.lower().split() if any_spacing else [needle.strip().lower()]
    escaped = "%".join(w.replace("!", "!!").replace("%", "!%").replace("_", "!_") for w in words)
    pattern = exp.Literal.string(f"%{escaped}%")
    like: exp.Expression
    if engine.has_ilike:
        like = exp.ILike(this=text, expression=pattern)
    elif engine.like_ignores_ascii_case and needle.isascii():
        like = exp.Like(this=text, expression=pattern)
    else:
        like = exp.Like(this=exp.Lower(this=text), expression=pattern)
    return exp.Escape(this=like, expression=exp.Literal.string("!"))


def prefix(table: Table, col: exp.Column, rows: int) -> exp.Subquery:
    """The first `rows` rows of one column: what a live answer on a large table may read."""
    return exp.select(col.copy()).from_(table_ref(table)).limit(rows).subquery("_scan")
