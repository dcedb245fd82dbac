"""Spider 2.0-lite cloud gold SQL (BigQuery and Snowflake) through the guard in its own dialect, then through a
transparent role's rewrite: the rewritten statement parses again in that dialect and reads the same base tables.

The dialect of an instance is its prefix's (`sf...` Snowflake, else BigQuery), as the folders of its DDL say.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.spider2 import read_catalog
from sophrosyne.errors import RejectedSQL, SophrosyneError, UnknownTable
from sophrosyne.schema.catalog import Catalog
from sophrosyne.sql import shape
from sophrosyne.sql.guard import check_sql
from sophrosyne.sql.policy import Role, TableRule, rewrite_for

# Scripts: DECLARE or CREATE TEMP FUNCTION before the query (several statements).
SCRIPTS = {"bq001", "bq002", "bq350", "bq406"}


def _folder() -> Path:
    return shared_datasets("spider2_lite") / "spider2_lite"


def _gold() -> list[tuple[str, str, str]]:
    """(instance, dialect, SQL) of every gold query."""
    paths = sorted((_folder() / "gold_sql").glob("*.sql"))
    return [(p.stem, "snowflake" if p.stem.startswith("sf") else "bigquery", p.read_text()) for p in paths]


def test_the_guard_accepts_every_single_statement_and_refuses_the_scripts() -> None:
    verdicts: dict[str, str | None] = {}
    dialect_of = {}
    for instance, dialect, sql in _gold():
        dialect_of[instance] = dialect
        try:
            check_sql(sql, dialect)
            verdicts[instance] = None
        except RejectedSQL as error:
            verdicts[instance] = error.message
    accepted = [i for i, why in verdicts.items() if why is None]
    by_dialect = {d: sum(1 for i in accepted if dialect_of[i] == d) for d in ("bigquery", "snowflake")}
    print(f"spider2-lite gold: {len(verdicts)} queries, {len(accepted)} accepted {by_dialect}")
    assert len(verdicts) == 232
    refused = {i: why for i, why in verdicts.items() if why is not None}
    print(f"refused: {sorted(refused)}")
    assert set(refused) == SCRIPTS
    for instance in SCRIPTS:
        assert "statements were sent: only one statement may run per call" in str(refused[instance])
    assert by_dialect == {"bigquery": 144, "snowflake": 84}


def test_the_largest_gold_statements_pass_with_little_room_to_spare() -> None:
    """The shape limits count what the planner meets: bq419 joins 16 CTEs of one table each in one query
    (16 relations), bq098 reads one CTE of three relations in six places (24 reads, under twice 20). One
    table fewer allowed refuses each, so the limits are not far above real analytics."""
    gold = {instance: (dialect, sql) for instance, dialect, sql in _gold()}
    for instance, tables, message in (("bq419", 16, "One query joins 16"), ("bq098", 12, "twice the limit")):
        dialect, sql = gold[instance]
        at = dataclasses.replace(shape.ShapeLimits.defaults(), tables=tables)
        check_sql(sql, dialect, at)
        with pytest.raises(RejectedSQL, match=message):
            check_sql(sql, dialect, dataclasses.replace(at, tables=tables - 1))


@cache
def _database_folders(dialect: str) -> dict[str, Path]:
    """The database folder of each schema qualifier (`project.dataset`, `DB.SCHEMA`), lower-cased."""
    root = _folder() / "databases" / dialect
    folders = {}
    for schema in sorted(root.glob("*/*/DDL.csv")):
        database = schema.parent.parent
        qualifier = schema.parent.name if dialect == "bigquery" else f"{database.name}.{schema.parent.name}"
        folders[qualifier.lower()] = database
    return folders


@cache
def _database(folder: Path, dialect: str) -> Catalog:
    return read_catalog(folder, dialect)


def _catalog_for(tree: exp.Expr, dialect: str) -> Catalog:
    """The tables of every database whose schema the statement names, in one catalog."""
    tables = {}
    for table in tree.find_all(exp.Table):
        qualifier = ".".join(part.name for part in table.parts[:-1]).lower()
        folder = _database_folders(dialect).get(qualifier)
        if folder is not None:
            tables.update(_database(folder, dialect).tables)
    return Catalog(tables=tables, dialect=dialect)


def _base_tables(tree: exp.Expr) -> set[str]:
    """The qualified names of the tables a statement reads (not its CTEs), lower-cased."""
    ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE)}
    return {
        ".".join(part.name for part in table.parts).lower()
        for table in tree.find_all(exp.Table)
        if isinstance(table.this, exp.Identifier)
        and (table.args.get("db") or table.args.get("catalog") or table.name.lower() not in ctes)
    }


def _without_ddl(tables: set[str], catalog: Catalog) -> set[str]:
    """The tables the dataset has no columns for (its README lists the DDL files too large to ship)."""
    missing = set()
    for name in tables:
        if name.endswith("*"):
            continue
        table = catalog.table(name)
        if table is None or not table.columns:
            missing.add(name)
    return missing


@pytest.mark.slow
def test_transparent_rewrites_parse_again_and_read_the_same_tables() -> None:
    """Slow: it reads the DDL of every database the gold SQL names (about 7 s) and rewrites 215 statements."""
    rewritten, no_ddl, failures = 0, [], []
    for instance, dialect, sql in _gold():
        if instance in SCRIPTS:
            continue
        tree = check_sql(sql, dialect)
        catalog = _catalog_for(tree, dialect)
        # A role whose one rule restricts nothing: restricted, so the rewrite runs, and it sees every table whole.
        tables = _base_tables(tree)
        role = Role("transparent", tables={min(tables): TableRule()})
        try:
            result = rewrite_for(role, tree, catalog, dialect)
        except UnknownTable as error:
            if _without_ddl(tables, catalog):
                no_ddl.append(instance)
            else:
                failures.append((instance, error.message))
            continue
        except SophrosyneError as error:
            failures.append((instance, error.message))
            continue
        again = sqlglot.parse_one(result.sql(dialect=dialect), read=dialect)
        if _base_tables(again) != tables:
            failures.append((instance, f"reads {_base_tables(again) ^ tables}"))
        rewritten += 1
    print(f"spider2-lite transparent rewrites: {rewritten} rewritten, {len(no_ddl)} read tables without DDL here")
    assert failures == []
    # Each of these reads a table whose DDL file the dataset does not ship (census_bureau_acs, gnomAD,
    # GITHUB_REPOS_DATE) or lists without columns (DEPS_DEV_V1.PACKAGEVERSIONS).
    assert len(no_ddl) == 13
    assert rewritten == 228 - len(no_ddl)
