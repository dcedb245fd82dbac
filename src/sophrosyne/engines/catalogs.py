"""Reading a live database's catalog: each engine reads its tables (see Engine.read_tables), then the row
estimates are filled in here, with what the engines' readings share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from sophrosyne.base import deadline
from sophrosyne.engines.base import CatalogSource, Cursor, Engine, FileEngine
from sophrosyne.errors import SophrosyneError
from sophrosyne.schema.catalog import Catalog, Table, table_ref

# The catalog is read in the background, not within a call: its statements may take longer than a call's
# timeout (the column list of 20,000 tables takes seconds), though not for ever.
CATALOG_READ_S = 120.0


def read_catalog(engine: Engine, source: CatalogSource) -> Catalog:
    """Read tables, views, columns, keys, comments and row estimates from a live database."""
    catalog = engine.read_tables(source)
    _fill_row_estimates(engine, source, catalog)
    return catalog


def read_timeout(source: CatalogSource) -> float:
    return max(source.timeout_s, CATALOG_READ_S)


def wanted_schemas(setting: str | None) -> set[str] | None:
    """The `schemas` setting as a set of lower-cased names (`search_path` for the search path's); None for
    every readable schema."""
    if setting is None or setting.strip() == "*":
        return None
    return {s.strip().lower() for s in setting.split(",") if s.strip()}


def read_schemas(engine: Engine, cursor: Cursor, setting: str | None) -> tuple[list[str | None], list[str]]:
    """The schemas a server's catalog reads, by the `schemas` setting: those of the search path (their tables
    by plain name), then the other readable ones. The catalog and the schema's fingerprint read the same."""
    path, others = engine.schemas(cursor)
    wanted = wanted_schemas(setting)
    if wanted is not None:
        others = [s for s in others if s.lower() in wanted]
        if "search_path" not in wanted:
            path = [s for s in path if s is None or s.lower() in wanted]
    return path, others


def path_first(item: tuple[str, Table]) -> tuple[bool, str]:
    """Sort key of a catalog's tables: those named plainly (on the search path) first, by name."""
    return (item[1].local_name is not None, item[0])


def _fill_row_estimates(engine: Engine, source: CatalogSource, catalog: Catalog) -> None:
    """Row estimates from the engine's statistics; a bounded count where there are none, never COUNT(*)."""
    with source.session(read_timeout(source)) as cursor:
        estimates = engine.row_estimates(cursor)
    bound = source.exact_count_rows
    uncounted: list[Table] = []
    for table in catalog.tables.values():
        if table.kind != "table":
            continue
        known = estimates.get(table.name, estimates.get(f"{table.schema}.{table.identifier}"))
        if known is not None:
            table.row_estimate = known
        elif table.row_estimate is None or (engine.zero_estimate_unknown and table.row_estimate == 0):
            uncounted.append(table)
    if not uncounted:
        return
    count_sql = count_statement(source.dialect, bound)  # written once, for the first table that needs counting
    statements = (count_sql(table) for table in uncounted)
    if isinstance(engine, FileEngine) and engine.counts_in_one_session:
        counts = _counts_in_one_session(engine, source, statements)
    else:
        counts = (_bounded_count(source, sql) for sql in statements)
    for table, counted in zip(uncounted, counts, strict=True):
        # Past the bound the count says only "more than": it is shown as "at least".
        table.rows_at_least = counted is not None and counted > bound
        table.row_estimate = min(counted, bound) if counted is not None else None


def count_statement(dialect: str, bound: int) -> Callable[[Table], str]:
    """The statement that counts at most `bound`+1 rows of a table, written by sqlglot once: each table's
    reference is put in place of a placeholder's. Built and written per table, it cost 1 ms of CPU a table
    (5 s at 5,000 tables without statistics, most of a cached start)."""
    placeholder = exp.Table(this=exp.to_identifier("sophrosyne_counted_table", quoted=True))
    scan = exp.select("1").from_(placeholder).limit(bound + 1).subquery("t")
    template = exp.select(exp.Count(this=exp.Star())).from_(scan).sql(dialect=dialect)
    marker = placeholder.sql(dialect=dialect)
    if template.count(marker) != 1:  # a dialect that wrote the placeholder otherwise: each statement whole
        return lambda table: count_sql(table, dialect, bound)
    generator = Dialect.get_or_raise(dialect).generator()
    return lambda table: template.replace(marker, generator.generate(table_ref(table)))


def count_sql(table: Table, dialect: str, bound: int) -> str:
    """The statement that counts at most `bound`+1 rows of `table`, written whole."""
    scan = exp.select("1").from_(table_ref(table)).limit(bound + 1).subquery("t")
    return exp.select(exp.Count(this=exp.Star())).from_(scan).sql(dialect=dialect)


def _bounded_count(source: CatalogSource, query: str) -> int | None:
    """COUNT over at most `bound`+1 rows: exact for small tables, `bound`+1 means "more than bound"."""
    deadline.check("counting rows")
    try:
        rows = source.run(query)
    except SophrosyneError:
        return None
    value = rows[0][0] if rows else None
    return int(value) if value is not None else None


def _counts_in_one_session(
    engine: FileEngine, source: CatalogSource, statements: Iterable[str]
) -> Iterator[int | None]:
    """The bounded counts of `statements`, one after another in one session; None for one that failed (the
    session goes on: `counts_in_one_session`)."""
    with source.session(read_timeout(source)) as cursor:
        for sql in statements:
            deadline.check("counting rows")
            try:
                cursor.execute(sql)
                row = cursor.fetchone()
            except engine.error():
                yield None
                continue
            yield int(row[0]) if row and row[0] is not None else None
