"""What is in a database: tables, columns, types, keys, descriptions, row estimates, table groups."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine.reflection import ObjectKind
from sqlglot import exp

from sophrosyne.errors import SophrosyneError

if TYPE_CHECKING:
    from sophrosyne.connection import Database


TEXT_TYPES = ("CHAR", "TEXT", "CLOB", "STRING", "VARCHAR", "NAME", "ENUM")


def is_text_type(type_name: str) -> bool:
    """Whether a column of this declared type holds text (SQLite columns without a type count as text)."""
    upper = (type_name or "").upper()
    return not upper or any(t in upper for t in TEXT_TYPES)


@dataclass
class Column:
    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    readable_name: str = ""
    description: str = ""
    value_description: str = ""


@dataclass
class ForeignKey:
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


@dataclass
class Table:
    name: str
    columns: list[Column]
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    description: str = ""
    row_estimate: int | None = None
    kind: str = "table"  # "table" or "view"
    schema: str | None = None

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


@dataclass
class TableGroup:
    """Tables with the same columns whose names differ only by a date or number suffix."""

    pattern: str
    tables: list[str]


@dataclass
class Catalog:
    tables: dict[str, Table]
    dialect: str = "sqlite"
    # Derived once: a catalog does not change after it is read (a refresh builds a new one).
    _groups: list[TableGroup] | None = field(default=None, init=False, repr=False, compare=False)
    _incoming: dict[str, list[tuple[str, ForeignKey]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def table(self, name: str) -> Table | None:
        if name in self.tables:
            return self.tables[name]
        lowered = name.lower()
        return next((t for t in self.tables.values() if t.name.lower() == lowered), None)

    @property
    def table_names(self) -> list[str]:
        return list(self.tables)

    def references_to(self, table: str) -> list[tuple[str, ForeignKey]]:
        """Foreign keys of other tables that point at `table`."""
        if self._incoming is None:
            incoming: dict[str, list[tuple[str, ForeignKey]]] = {}
            for t in self.tables.values():
                for fk in t.foreign_keys:
                    incoming.setdefault(fk.ref_table.lower(), []).append((t.name, fk))
            self._incoming = incoming
        return list(self._incoming.get(table.lower(), []))

    def groups(self) -> list[TableGroup]:
        if self._groups is None:
            self._groups = group_tables(list(self.tables.values()))
        return self._groups


_SUFFIX = re.compile(r"^(?P<stem>.*?[A-Za-z_])(?P<suffix>\d{2,}(?:_\d+)*)$")


def group_tables(tables: list[Table], min_size: int = 3) -> list[TableGroup]:
    """Tables sharing a name stem and the same column list, differing by a numeric (date) suffix."""
    buckets: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for table in tables:
        match = _SUFFIX.match(table.name)
        if not match:
            continue
        key = (match["stem"], tuple(c.name.lower() for c in table.columns))
        buckets.setdefault(key, []).append(table.name)
    return [
        TableGroup(pattern=f"{stem}*", tables=sorted(names))
        for (stem, _), names in sorted(buckets.items())
        if len(names) >= min_size
    ]


def load_bird_descriptions(catalog: Catalog, folder: Path) -> None:
    """Fill column descriptions from BIRD's `database_description/<table>.csv` files, where present."""
    folder = Path(folder)
    for path in sorted(folder.glob("*.csv")):
        table = catalog.table(path.stem)
        if table is None:
            continue
        for row in _read_description_csv(path):
            name = (row.get("original_column_name") or "").strip()
            column = table.column(name) if name else None
            if column is None:
                continue
            readable = (row.get("column_name") or "").strip()
            if readable.lower() != name.lower():
                column.readable_name = readable
            column.description = (row.get("column_description") or "").strip()
            column.value_description = (row.get("value_description") or "").strip()


def _read_description_csv(path: Path) -> list[dict[str, str]]:
    raw = path.read_bytes()
    for encoding in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    rows = list(csv.DictReader(text.splitlines()))
    return [{(k or "").strip().lower(): (v or "") for k, v in row.items()} for row in rows]


def read_catalog(db: Database) -> Catalog:
    """Read tables, views, columns, keys, comments and row estimates from a live database."""
    catalog = _read_duckdb(db) if db.backend == "duckdb" else _read_inspector(db)
    _fill_row_estimates(db, catalog)
    return catalog


def _read_inspector(db: Database) -> Catalog:
    inspector = sa.inspect(db.engine)
    tables: dict[str, Table] = {}
    kinds = {name: "table" for name in inspector.get_table_names()}
    kinds.update({name: "view" for name in inspector.get_view_names()})
    columns = inspector.get_multi_columns(kind=ObjectKind.ANY)
    pks = inspector.get_multi_pk_constraint()
    fks = inspector.get_multi_foreign_keys()
    comments = inspector.get_multi_table_comment() if db.engine.dialect.supports_comments else {}
    for (_, name), cols in columns.items():
        if name not in kinds or name.startswith("sqlite_"):
            continue
        pk_info: dict[str, Any] = dict(pks.get((None, name)) or {})
        pk = list(pk_info.get("constrained_columns") or [])
        table = Table(
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
        tables[name] = table
    return Catalog(tables=dict(sorted(tables.items())), dialect=db.dialect)


def _read_duckdb(db: Database) -> Catalog:
    # duckdb-engine cannot read keys through SQLAlchemy's inspector: ask DuckDB itself.
    where = "WHERE schema_name = current_schema() AND database_name = current_database()"
    with db.session(db.settings.timeout_s) as conn:
        cols = conn.exec_driver_sql(
            f"SELECT table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() {where} "
            "ORDER BY table_name, column_index"
        ).fetchall()
        tabs = conn.exec_driver_sql(
            f"SELECT table_name, comment, estimated_size, 'table' FROM duckdb_tables() {where} "
            f"UNION ALL SELECT view_name, comment, NULL, 'view' FROM duckdb_views() {where} AND NOT internal"
        ).fetchall()
        cons = conn.exec_driver_sql(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
            f"referenced_column_names FROM duckdb_constraints() {where} "
            "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        ).fetchall()
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


def _fill_row_estimates(db: Database, catalog: Catalog) -> None:
    """Row estimates from the engine's statistics; a bounded count where there are none, never COUNT(*)."""
    estimates: dict[str, int] = {}
    with db.session(db.settings.timeout_s) as conn:
        if db.backend == "sqlite":
            has_stat = conn.exec_driver_sql(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"
            ).first()
            if has_stat:
                for tbl, stat in conn.exec_driver_sql("SELECT tbl, stat FROM sqlite_stat1").fetchall():
                    head = str(stat or "").split(" ")[0]
                    if head.isdigit():
                        estimates[tbl] = max(estimates.get(tbl, 0), int(head))
        elif db.backend == "postgresql":
            rows = conn.exec_driver_sql(
                "SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'm')"
            ).fetchall()
            estimates = {name: int(n) for name, n in rows if n is not None and n >= 0}
        elif db.backend in ("mysql", "mariadb"):
            rows = conn.exec_driver_sql(
                "SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = DATABASE()"
            ).fetchall()
            estimates = {name: int(n) for name, n in rows if n is not None}
    for table in catalog.tables.values():
        if table.kind != "table":
            continue
        if table.name in estimates:
            table.row_estimate = estimates[table.name]
        elif table.row_estimate is None or (db.backend in ("mysql", "mariadb") and table.row_estimate == 0):
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


def _type_name(sa_type: Any) -> str:
    try:
        return str(sa_type)
    except Exception:  # some reflected types cannot compile without a dialect
        return type(sa_type).__name__.upper()
