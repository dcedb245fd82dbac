"""Reading a live database's catalog: tables, views, columns, keys, comments and row estimates."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sophrosyne.base import deadline
from sophrosyne.errors import SophrosyneError
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table, table_ref

if TYPE_CHECKING:
    from sophrosyne.database import Database


# The catalog is read in the background, not within a call: its statements may take longer than a call's
# timeout (the column list of 20,000 tables takes seconds), though not for ever.
CATALOG_READ_S = 120.0


def read_timeout(db: Database) -> float:
    return max(db.settings.timeout_s, CATALOG_READ_S)


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
    with db.session(read_timeout(db)) as cursor:
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
    """Every schema of the file: the current one's tables by plain name, the others' as `schema.table`."""
    where = "WHERE database_name = current_database() AND NOT internal"
    with db.session(read_timeout(db)) as cursor:
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
    wanted = _wanted_schemas(db.settings.schemas)

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
    return Catalog(tables=dict(sorted(tables.items(), key=_path_first)), dialect=db.dialect)


# Server engines -------------------------------------------------------------------------------------------


def read_inspected(db: Database) -> Catalog:
    """Through SQLAlchemy's inspector, which knows each server's catalog views, schema by schema: the search
    path's schemas first, their tables by plain name; other readable schemas' tables as `schema.table`."""
    import sqlalchemy as sa

    from sophrosyne.database import ServerPool

    assert isinstance(db.pool, ServerPool)
    # A session first: a server that cannot be reached is told as such (the inspector connects on its own,
    # and would raise the driver's error untranslated).
    with db.session(read_timeout(db)) as cursor:
        path, others = db.engine.schemas(cursor)
        inherits = db.engine.table_parents(cursor)
    inspector = sa.inspect(db.pool.engine)
    wanted = _wanted_schemas(db.settings.schemas)
    if wanted is not None:
        others = [s for s in others if s.lower() in wanted]
        if "search_path" not in wanted:
            path = [s for s in path if s is None or s.lower() in wanted]
    tables: dict[str, Table] = {}
    keys: dict[tuple[str | None, str], str] = {}  # (schema, name) -> the catalog's name for it
    for position, schema in enumerate([*path, *others]):
        deadline.check("reading the schema")
        _read_schema(db, inspector, schema, position < len(path), tables, keys)
    # A child names its parent by schema and name too; a parent the catalog does not hold is not readable.
    for schema, name, parent_schema, parent in inherits:
        child, parent_key = keys.get((schema, name)), keys.get((parent_schema, parent))
        if child is not None and parent_key is not None:
            tables[child].parents.append(parent_key)
    # A foreign key names its target by schema and name: the catalog's name for it is known only now.
    for table in tables.values():
        for fk in table.foreign_keys:
            schema, _, name = fk.ref_table.partition("\0")
            fk.ref_table = keys.get((schema or None, name)) or keys.get((None, name)) or name
    return Catalog(tables=dict(sorted(tables.items(), key=_path_first)), dialect=db.dialect)


def _wanted_schemas(setting: str | None) -> set[str] | None:
    """The `schemas` setting as a set of lower-cased names (`search_path` for the search path's); None for
    every readable schema."""
    if setting is None or setting.strip() == "*":
        return None
    return {s.strip().lower() for s in setting.split(",") if s.strip()}


def _path_first(item: tuple[str, Table]) -> tuple[bool, str]:
    return (item[1].local_name is not None, item[0])


def _read_schema(
    db: Database,
    inspector: Any,
    schema: str | None,
    on_path: bool,
    tables: dict[str, Table],
    keys: dict[tuple[str | None, str], str],
) -> None:
    from sqlalchemy.engine.reflection import ObjectKind

    from sophrosyne.database import ServerPool

    assert isinstance(db.pool, ServerPool)
    kinds = {name: "table" for name in inspector.get_table_names(schema=schema)}
    kinds.update({name: "view" for name in inspector.get_view_names(schema=schema)})
    if not kinds:
        return
    columns = inspector.get_multi_columns(schema=schema, kind=ObjectKind.ANY)
    pks = inspector.get_multi_pk_constraint(schema=schema)
    fks = inspector.get_multi_foreign_keys(schema=schema)
    comments = inspector.get_multi_table_comment(schema=schema) if db.pool.engine.dialect.supports_comments else {}
    for (_, name), cols in columns.items():
        if name not in kinds:
            continue
        # A table shadowed on the search path by one of the same name is named with its schema.
        plain = on_path and name not in tables
        key = name if plain else f"{schema}.{name}"
        keys[(schema, name)] = key
        if plain:
            keys.setdefault((None, name), key)
        pk_info: dict[str, Any] = dict(pks.get((schema, name)) or {})
        pk = list(pk_info.get("constrained_columns") or [])
        tables[key] = Table(
            name=key,
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
                ForeignKey(
                    list(fk["constrained_columns"]),
                    # Resolved once every schema is read; no schema means one on the search path.
                    f"{fk.get('referred_schema') or ''}\0{fk['referred_table']}",
                    list(fk["referred_columns"]),
                )
                for fk in fks.get((schema, name), [])
                if fk.get("referred_table")
            ],
            description=str(dict(comments.get((schema, name)) or {}).get("text") or "").strip(),
            kind=kinds[name],
            # Plain names resolve on the search path, as before schemas were read: no schema pins them.
            schema=None if plain else schema,
            local_name=None if plain else name,
        )


def _type_name(sa_type: Any) -> str:
    try:
        return str(sa_type)
    except Exception:  # some reflected types cannot compile without a dialect
        return type(sa_type).__name__.upper()


# Row estimates ----------------------------------------------------------------------------------------------


def _fill_row_estimates(db: Database, catalog: Catalog) -> None:
    """Row estimates from the engine's statistics; a bounded count where there are none, never COUNT(*)."""
    with db.session(read_timeout(db)) as cursor:
        estimates = db.engine.row_estimates(cursor)
    bound = db.settings.exact_count_rows
    for table in catalog.tables.values():
        if table.kind != "table":
            continue
        known = estimates.get(table.name, estimates.get(f"{table.schema}.{table.identifier}"))
        if known is not None:
            table.row_estimate = known
        elif table.row_estimate is None or (db.engine.zero_estimate_unknown and table.row_estimate == 0):
            deadline.check("counting rows")
            counted = _bounded_count(db, table, bound)
            # Past the bound the count says only "more than": it is shown as "at least".
            table.rows_at_least = counted is not None and counted > bound
            table.row_estimate = min(counted, bound) if counted is not None else None


def _bounded_count(db: Database, table: Table, bound: int) -> int | None:
    """COUNT over at most `bound`+1 rows: exact for small tables, `bound`+1 means "more than bound"."""
    scan = exp.select("1").from_(table_ref(table)).limit(bound + 1).subquery("t")
    query = exp.select(exp.Count(this=exp.Star())).from_(scan).sql(dialect=db.dialect)
    try:
        result = db.run(query, limit=1)
    except SophrosyneError:
        return None
    value = result.rows[0][0] if result.rows else None
    return int(value) if value is not None else None
