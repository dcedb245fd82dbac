"""Reading a live database's catalog: tables, views, columns, keys, comments and row estimates."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sophrosyne.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.errors import SophrosyneError

if TYPE_CHECKING:
    from sophrosyne.connection import Database


def read_catalog(db: Database) -> Catalog:
    """Read tables, views, columns, keys, comments and row estimates from a live database."""
    catalog = db.engine.read_tables(db)
    _fill_row_estimates(db, catalog)
    return catalog


# SQLite -------------------------------------------------------------------------------------------------
# Read with PRAGMA functions, giving what SQLAlchemy's inspector gave before (types named by the same
# affinity rules, foreign keys in the same order), so that schemas and their index keys stay the same.

_USER_OBJECTS = "m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite~_%' ESCAPE '~'"
# Declared type names SQLite knows by name, and the name each is shown as.
_SQLITE_TYPES = {
    **dict.fromkeys(re.findall(r"\w+", "BIGINT BLOB BOOLEAN CHAR DATE DATETIME DOUBLE DECIMAL FLOAT INTEGER JSON")),
    **dict.fromkeys(re.findall(r"\w+", "JSONB NUMERIC REAL SMALLINT TEXT TIME TIMESTAMP VARCHAR NVARCHAR NCHAR")),
    "BOOL": "BOOLEAN",
    "INT": "INTEGER",
    "DATE_CHAR": "DATE",
    "DATETIME_CHAR": "DATETIME",
    "TIME_CHAR": "TIME",
}
_STRING_TYPES = {"CHAR", "VARCHAR", "NVARCHAR", "NCHAR", "TEXT"}
_SCALED_TYPES = {"NUMERIC", "DECIMAL"}
# A table-level FOREIGN KEY clause in CREATE TABLE text: it orders and de-duplicates the keys.
_FK_CLAUSE = re.compile(
    r'(?:CONSTRAINT\s+(?:"(.+?)"|(\w+))\s+)?'
    r"FOREIGN\s+KEY\s*\(\s*(.+?)\s*\)\s+"
    r'REFERENCES\s+(?:(?:"(.+?)")|([a-z0-9_]+))\s*\(\s*((?:"[^"]+"|[a-z0-9_]+)(?:(?:\s*,\s*|\s+)(?:"[^"]+"|[a-z0-9_]+))*\s*)\)',
    re.I,
)
_FK_NAME = re.compile(r'(?:"(.+?)")|([a-z0-9_]+)', re.I)


def read_sqlite(db: Database) -> Catalog:
    with db.session(db.settings.timeout_s) as cursor:
        cursor.execute(f"SELECT m.name, m.type, m.sql FROM sqlite_master AS m WHERE {_USER_OBJECTS}")
        objects = cursor.fetchall()
        cursor.execute(
            'SELECT m.name, p.name, p.type, p."notnull", p.pk, p.hidden '
            f"FROM sqlite_master AS m JOIN pragma_table_xinfo(m.name, 'main') AS p WHERE {_USER_OBJECTS} "
            "ORDER BY m.name, p.cid"
        )
        columns = cursor.fetchall()
        cursor.execute(
            'SELECT m.name, f.id, f."table", f."from", f."to" '
            f"FROM sqlite_master AS m JOIN pragma_foreign_key_list(m.name, 'main') AS f WHERE {_USER_OBJECTS} "
            "ORDER BY m.name, f.id, f.seq"
        )
        references = cursor.fetchall()
    tables = {name: Table(name=name, columns=[], kind=kind) for name, kind, _ in objects}
    positions: dict[str, list[tuple[int, str]]] = {}
    for table_name, name, declared, notnull, pk, hidden in columns:
        if hidden == 1:  # a virtual table's hidden column
            continue
        tables[table_name].columns.append(Column(name=name, type=_sqlite_type(declared, hidden), nullable=not notnull))
        if pk:
            positions.setdefault(table_name, []).append((pk, name))
    for table_name, pk_columns in positions.items():
        table = tables[table_name]
        table.primary_key = [name for _, name in sorted(pk_columns, key=lambda p: p[0])]
        for column in table.columns:
            column.primary_key = column.name in table.primary_key
    keys_of = {name.lower(): table.primary_key for name, table in tables.items()}
    by_table: dict[str, dict[int, ForeignKey]] = {}
    for table_name, fk_id, ref_table, column, ref_column in references:
        keys = by_table.setdefault(table_name, {})
        if fk_id not in keys:
            # A key naming no column refers to the primary key of the table it names.
            ref_columns = [] if ref_column else list(keys_of.get(str(ref_table).lower(), []))
            keys[fk_id] = ForeignKey([], ref_table, ref_columns)
        keys[fk_id].columns.append(column)
        if ref_column:
            keys[fk_id].ref_columns.append(ref_column)
    sql_of = {name: sql for name, _, sql in objects}
    for table_name, keys in by_table.items():
        tables[table_name].foreign_keys = [
            fk for fk in _ordered_foreign_keys(list(keys.values()), sql_of.get(table_name) or "") if fk.ref_table
        ]
    return Catalog(tables=dict(sorted(tables.items())), dialect=db.dialect)


def _sqlite_type(declared: str, hidden: int) -> str:
    """The type name of a declared SQLite type, by SQLite's affinity rules (an empty one is shown as NULL)."""
    declared = (declared or "").upper()
    if hidden:  # a generated column's type reads "INTEGER GENERATED ALWAYS"
        declared = declared.replace("GENERATED", "").replace("ALWAYS", "").strip()
    match = re.match(r"([\w ]+)(\(.*?\))?", declared)
    name, args = (match.group(1), match.group(2)) if match else ("", "")
    if name in _SQLITE_TYPES:
        kind = _SQLITE_TYPES[name] or name
    elif "INT" in name:
        kind = "INTEGER"
    elif "CHAR" in name or "CLOB" in name or "TEXT" in name:
        kind = "TEXT"
    elif "BLOB" in name or not name:
        kind = "NULL"
    elif "REAL" in name or "FLOA" in name or "DOUB" in name:
        kind = "REAL"
    else:
        kind = "NUMERIC"
    numbers = [str(int(n)) for n in re.findall(r"\d+", args or "")]
    if kind in _STRING_TYPES and len(numbers) == 1 and numbers[0] != "0":
        return f"{kind}({numbers[0]})"
    if kind in _SCALED_TYPES and 0 < len(numbers) <= 4:
        return f"{kind}({', '.join(numbers[:2])})"
    return kind


def _ordered_foreign_keys(keys: list[ForeignKey], sql: str) -> list[ForeignKey]:
    """Keys declared by FOREIGN KEY clauses first, in the order of the CREATE TABLE text, then the others;
    keys with the same columns and target once."""
    by_signature = {(*fk.columns, fk.ref_table, *fk.ref_columns): fk for fk in keys}
    ordered = []
    for match in _FK_CLAUSE.finditer(sql):
        columns = _fk_names(match.group(3))
        ref_table = match.group(4) or match.group(5)
        signature = (*columns, ref_table, *(_fk_names(match.group(6)) or columns))
        if signature in by_signature:
            ordered.append(by_signature.pop(signature))
    return ordered + list(by_signature.values())


def _fk_names(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _FK_NAME.finditer(text or "")]


# DuckDB -------------------------------------------------------------------------------------------------


def read_duckdb(db: Database) -> Catalog:
    where = "WHERE schema_name = current_schema() AND database_name = current_database()"
    with db.session(db.settings.timeout_s) as cursor:
        cursor.execute(
            f"SELECT table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() {where} "
            "ORDER BY table_name, column_index"
        )
        cols = cursor.fetchall()
        cursor.execute(
            f"SELECT table_name, comment, estimated_size, 'table' FROM duckdb_tables() {where} "
            f"UNION ALL SELECT view_name, comment, NULL, 'view' FROM duckdb_views() {where} AND NOT internal"
        )
        tabs = cursor.fetchall()
        cursor.execute(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
            f"referenced_column_names FROM duckdb_constraints() {where} "
            "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        )
        cons = cursor.fetchall()
    tables = {
        name: Table(name=name, columns=[], description=(comment or "").strip(), row_estimate=size, kind=kind)
        for name, comment, size, kind in tabs
    }
    for table_name, column, dtype, nullable, comment in cols:
        if table_name in tables:
            tables[table_name].columns.append(
                Column(name=column, type=str(dtype), nullable=bool(nullable), description=(comment or "").strip())
            )
    for table_name, kind, names, ref_table, ref_names in cons:
        table = tables.get(table_name)
        if table is None:
            continue
        if kind == "PRIMARY KEY":
            table.primary_key = list(names)
            for column in table.columns:
                column.primary_key = column.name in names
        elif ref_table:
            table.foreign_keys.append(ForeignKey(list(names), ref_table, list(ref_names)))
    return Catalog(tables=dict(sorted(tables.items())), dialect=db.dialect)


# Server engines -------------------------------------------------------------------------------------------


def read_inspected(db: Database) -> Catalog:
    """Through SQLAlchemy's inspector, which knows each server's catalog views."""
    import sqlalchemy as sa
    from sqlalchemy.engine.reflection import ObjectKind

    from sophrosyne.connection import ServerPool

    assert isinstance(db.pool, ServerPool)
    inspector = sa.inspect(db.pool.engine)
    tables: dict[str, Table] = {}
    kinds = {name: "table" for name in inspector.get_table_names()}
    kinds.update({name: "view" for name in inspector.get_view_names()})
    columns = inspector.get_multi_columns(kind=ObjectKind.ANY)
    pks = inspector.get_multi_pk_constraint()
    fks = inspector.get_multi_foreign_keys()
    comments = inspector.get_multi_table_comment() if db.pool.engine.dialect.supports_comments else {}
    for (_, name), cols in columns.items():
        if name not in kinds:
            continue
        pk_info: dict[str, Any] = dict(pks.get((None, name)) or {})
        pk = list(pk_info.get("constrained_columns") or [])
        tables[name] = Table(
            name=name,
            columns=[
                Column(
                    name=c["name"],
                    type=_type_name(c["type"]),
                    nullable=bool(c.get("nullable", True)),
                    primary_key=c["name"] in pk,
                    description=(c.get("comment") or "").strip(),
                )
                for c in cols
            ],
            primary_key=pk,
            foreign_keys=[
                ForeignKey(list(fk["constrained_columns"]), fk["referred_table"], list(fk["referred_columns"]))
                for fk in fks.get((None, name), [])
                if fk.get("referred_table")
            ],
            description=str(dict(comments.get((None, name)) or {}).get("text") or "").strip(),
            kind=kinds[name],
        )
    return Catalog(tables=dict(sorted(tables.items())), dialect=db.dialect)


def _type_name(sa_type: Any) -> str:
    try:
        return str(sa_type)
    except Exception:  # some reflected types cannot compile without a dialect
        return type(sa_type).__name__.upper()


# Row estimates ----------------------------------------------------------------------------------------------


def _fill_row_estimates(db: Database, catalog: Catalog) -> None:
    """Row estimates from the engine's statistics; a bounded count where there are none, never COUNT(*)."""
    with db.session(db.settings.timeout_s) as cursor:
        estimates = db.engine.row_estimates(cursor)
    for table in catalog.tables.values():
        if table.kind != "table":
            continue
        if table.name in estimates:
            table.row_estimate = estimates[table.name]
        elif table.row_estimate is None or (db.engine.zero_estimate_unknown and table.row_estimate == 0):
            table.row_estimate = _bounded_count(db, table.name, db.settings.exact_count_rows)


def _bounded_count(db: Database, table: str, bound: int) -> int | None:
    """COUNT over at most `bound`+1 rows: exact for small tables, `bound`+1 means "more than bound"."""
    quoted = exp.to_identifier(table, quoted=True).sql(dialect=db.dialect)
    try:
        result = db.run(f"SELECT COUNT(*) FROM (SELECT 1 FROM {quoted} LIMIT {bound + 1}) AS t", limit=1)
    except SophrosyneError:
        return None
    value = result.rows[0][0] if result.rows else None
    return int(value) if value is not None else None
