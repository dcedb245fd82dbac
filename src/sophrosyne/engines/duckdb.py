"""DuckDB, each connection in a capped process of its own (see duckdb_process.py): sessions, plans and its
catalog."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sophrosyne.engines.base import CatalogSource, Cursor, FileEngine, Row
from sophrosyne.engines.catalogs import path_first, read_timeout, wanted_schemas
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table


class DuckDB(FileEngine):
    name = "duckdb"
    file_suffixes = (".duckdb",)
    driver = "duckdb"
    default_schema = "main"
    fence_materialized = True
    has_ilike = True
    reads_file_names = True
    names_columns_by_rendering = True
    # A DuckDB connection, even read-only, holds the file's lock: no other process could open the file to
    # write while the server is idle. Opening one costs about 165 ms, so idle ones go only after a pause.
    idle_close_s = 1.0

    def connect(self, path: Path) -> Any:
        from sophrosyne.engines.duckdb_process import ProcessConnection

        # No files, network or extensions, no Python variables standing in for tables, and no spilling to a
        # temporary folder beside the database: a statement past its memory stops with DuckDB's error.
        config: dict[str, str | bool | int | float | list[str]] = {
            "enable_external_access": False,
            "python_enable_replacements": False,
            "temp_directory": "",
        }
        if "?" not in str(path):
            return ProcessConnection(str(path), config)
        # DuckDB names the write-ahead log of `a?b` as `a.wal?b`, a path outside the database, which it may
        # not open without external access: the access is closed right after opening (and cannot be opened
        # again while the database runs), before any statement.
        del config["enable_external_access"]
        return ProcessConnection(str(path), config, after_open=["SET enable_external_access = false"])

    def error(self) -> type[Exception]:
        import duckdb

        return duckdb.Error

    def interrupt(self, raw: Any) -> None:
        raw.interrupt()

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        import duckdb

        raw.limit(timeout_s)  # its process stops a statement past this
        try:
            # The connection is its own cursor: cursor() would open another connection, which interrupt()
            # does not reach.
            yield raw
        finally:
            # No transaction is open in the usual case: statements here commit themselves. This also ends
            # the session's time limit.
            with contextlib.suppress(duckdb.TransactionException):
                raw.rollback()

    def read_plan(self, columns: list[str], rows: Sequence[Row]) -> tuple[list[str], set[str]]:
        lines = [line for row in rows for line in str(row[-1]).splitlines() if line.strip()]
        text = "\n".join(lines)
        scanned: set[str] = set()
        if "Seq Scan" in text or "SEQ_SCAN" in text:
            scanned = {m.split(".")[-1].lower() for m in re.findall(r"Table: ([^\s│]+)", text)}
        return lines, scanned

    def schema_fingerprint(self, cursor: Cursor, schemas: str | None) -> object:
        cursor.execute(
            "SELECT count(*), sum(hash(schema_name || '.' || table_name || '.' || column_name || ':' || data_type)) "
            "FROM duckdb_columns() WHERE database_name = current_database()"
        )
        return tuple(cursor.fetchone() or ())

    def read_tables(self, source: CatalogSource) -> Catalog:
        # Row estimates come with the tables: DuckDB keeps them in its own catalog.
        return read_duckdb(source)


# Its catalog -------------------------------------------------------------------------------------------------


def read_duckdb(source: CatalogSource) -> Catalog:
    """Every schema of the file: the current one's tables by plain name, the others' as `schema.table`."""
    where = "WHERE database_name = current_database() AND NOT internal"
    with source.session(read_timeout(source)) as cursor:
        cursor.execute("SELECT current_schema()")
        current = str((cursor.fetchone() or ["main"])[0])
        cursor.execute(
            "SELECT schema_name, table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
            f"{where} ORDER BY schema_name, table_name, column_index"
        )
        cols = cursor.fetchall()
        cursor.execute(
            f"SELECT schema_name, table_name, comment, estimated_size, 'table' FROM duckdb_tables() {where} "
            f"UNION ALL SELECT schema_name, view_name, comment, NULL, 'view' FROM duckdb_views() {where}"
        )
        tabs = cursor.fetchall()
        cursor.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
            "referenced_column_names FROM duckdb_constraints() WHERE database_name = current_database() "
            "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        )
        cons = cursor.fetchall()
    wanted = wanted_schemas(source.schemas)

    def key(schema: str, name: str) -> str:
        return name if schema == current else f"{schema}.{name}"

    tables = {
        key(schema, name): Table(
            name=key(schema, name),
            columns=[],
            description=(comment or "").strip(),
            row_estimate=size,
            kind=kind,
            schema=None if schema == current else schema,
            local_name=None if schema == current else name,
        )
        for schema, name, comment, size, kind in tabs
        if schema == current or wanted is None or schema.lower() in wanted
    }
    for schema, table_name, column, dtype, nullable, comment in cols:
        if (table := tables.get(key(schema, table_name))) is not None:
            table.columns.append(
                Column(name=column, type=str(dtype), nullable=bool(nullable), description=(comment or "").strip())
            )
    for schema, table_name, kind, names, ref_table, ref_names in cons:
        table = tables.get(key(schema, table_name))
        if table is None:
            continue
        if kind == "PRIMARY KEY":
            table.primary_key = list(names)
            for column in table.columns:
                column.primary_key = column.name in names
        elif ref_table:
            table.foreign_keys.append(ForeignKey(list(names), key(schema, ref_table), list(ref_names)))
    return Catalog(tables=dict(sorted(tables.items(), key=path_first)), dialect=source.dialect)
