"""The robustness perturbations: warehouse names (abbreviated, DIM_/FACT_, _KEY), gold, values and knowledge
renamed with them, tables emptied, keys removed, synonym wording; the dataset's files never touched."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.types import Dataset, Question
from sophrosyne.bench.directives_bench import run_directives_bench
from sophrosyne.bench.perturb import abbreviate, perturb, read_values, warehouse_names
from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table


def _shop(tmp_path: Path) -> Dataset:
    """Departments, employees and their assignments, with a SQLite file holding values."""
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE department (department_id INTEGER PRIMARY KEY, department_name TEXT);"
            "CREATE TABLE employee (EmployeeID INTEGER PRIMARY KEY, full_name TEXT, department_id INTEGER);"
            "CREATE TABLE facility (facility_code TEXT, city TEXT);"
            "INSERT INTO department VALUES (1, 'Accounting'), (2, 'History');"
            "INSERT INTO employee VALUES (1, 'Ada Lovelace', 1);"
            "INSERT INTO facility VALUES ('B1', 'Springfield');"
        )
    connection.close()
    department = Table(
        "department",
        [Column("department_id", "INTEGER", primary_key=True), Column("department_name", "TEXT", description="its")],
        primary_key=["department_id"],
        description="Units of the firm",
    )
    employee = Table(
        "employee",
        [
            Column("EmployeeID", "INTEGER", primary_key=True),
            Column("full_name", "TEXT"),
            Column("department_id", "INT"),
        ],
        primary_key=["EmployeeID"],
        foreign_keys=[ForeignKey(["department_id"], "department", ["department_id"])],
    )
    facility = Table("facility", [Column("facility_code", "TEXT"), Column("city", "TEXT", readable_name="City")])
    catalog = Catalog(tables={t.name: t for t in (department, employee, facility)})
    questions = [
        Question(
            "q1",
            "shop",
            "Who works in History?",
            "History refers to `department_name` = 'History'; department_name is in the department table",
            "SELECT e.full_name FROM employee AS e JOIN department AS d ON e.department_id = d.department_id "
            "WHERE d.department_name = 'History'",
        ),
        Question("q2", "shop", "Which cities?", "", "SELECT city FROM"),  # does not parse
    ]
    return Dataset("shop", questions, {"shop": catalog}, {"shop": path})


def test_words_are_abbreviated_as_warehouses_write_them() -> None:
    assert [abbreviate(w) for w in ("department", "Employee", "facility", "hierarchy", "name", "state", "2017")] == [
        "DPRT",
        "EMPL",
        "FCLT",
        "HRCH",
        "NAME",
        "STATE",
        "2017",
    ]


def test_tables_get_dim_or_fact_prefixes_and_key_columns_a_key_suffix(tmp_path: Path) -> None:
    tables, columns = warehouse_names(_shop(tmp_path).catalogs["shop"])
    assert tables == {"department": "DIM_DPRT", "employee": "FACT_EMPL", "facility": "DIM_FCLT"}
    assert columns["employee"] == {"EmployeeID": "EMPL_KEY", "full_name": "FULL_NAME", "department_id": "DPRT_KEY"}
    assert columns["department"] == {"department_id": "DPRT_KEY", "department_name": "DPRT_NAME"}
    assert columns["facility"] == {"facility_code": "FCLT_CODE", "city": "CITY"}
    # Deterministic, unique within the catalog, qualified names keep their qualifier, nested fields their path.
    clash = Catalog(
        tables={
            "p.ds.orders_2020": Table(
                "p.ds.orders_2020", [Column("id", "INT"), Column("totals.hits", "INT")], schema="p.ds"
            ),
            "Orders2020": Table("Orders2020", [Column("shipping", "TEXT"), Column("shopping", "TEXT")]),
            "orders_2020": Table("orders_2020", [Column("x", "TEXT")]),
        }
    )
    tables, columns = warehouse_names(clash)
    assert tables == {
        "Orders2020": "DIM_ORDR_2020",
        "orders_2020": "DIM_ORDR_2020_2",
        "p.ds.orders_2020": "p.ds.DIM_ORDR_2020",
    }
    assert columns["p.ds.orders_2020"] == {"id": "ORDR_2020_KEY", "totals.hits": "TLS.HITS"}
    assert columns["Orders2020"] == {"shipping": "SHPN", "shopping": "SHPN_2"}
    assert warehouse_names(clash) == (tables, columns)


def test_the_warehouse_renames_gold_values_and_knowledge_and_drops_descriptions(tmp_path: Path) -> None:
    dataset = _shop(tmp_path)
    path = dataset.database_files["shop"]
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    warehouse = perturb(dataset, "warehouse")
    catalog = warehouse.catalogs["shop"]
    assert set(catalog.tables) == {"DIM_DPRT", "FACT_EMPL", "DIM_FCLT"}
    assert not any(t.description for t in catalog.tables.values())
    assert not any(c.description or c.readable_name for t in catalog.tables.values() for c in t.columns)
    employee = catalog.tables["FACT_EMPL"]
    assert employee.primary_key == ["EMPL_KEY"]
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in employee.foreign_keys] == [
        (["DPRT_KEY"], "DIM_DPRT", ["DPRT_KEY"])
    ]
    # The gold follows the rename; a gold query that does not parse is skipped, as an unperturbed run does.
    assert warehouse.gold == {"q1": frozenset({"FACT_EMPL", "DIM_DPRT"})}
    assert [s["id"] for s in warehouse.skipped] == ["q2"] and [q.id for q in warehouse.questions] == ["q1"]
    assert warehouse.questions[0].knowledge == (
        "History refers to `DPRT_NAME` = 'History'; DPRT_NAME is in the department table"
    )
    values = read_values(catalog, path, warehouse.source_names["shop"])
    assert values.complete and values.lookup("History") == [("DIM_DPRT", "DPRT_NAME")]
    assert values.lookup("Springfield") == [("DIM_FCLT", "CITY")]
    # The original is untouched, in memory and on disk.
    assert "department" in dataset.catalogs["shop"].tables and dataset.catalogs["shop"].tables["department"].description
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    run = run_directives_bench(warehouse)
    assert run.settings["perturbation"] == "warehouse"
    oracle = next(o for o in run.outcomes if o.system == "oracle")
    assert oracle.gold == {"FACT_EMPL", "DIM_DPRT"} and oracle.flagged == {"DIM_FCLT"}


def test_schema_only_empties_every_table_and_no_keys_removes_every_key(tmp_path: Path) -> None:
    dataset = _shop(tmp_path)
    empty = perturb(dataset, "schema-only")
    assert not empty.database_files and empty.perturbation == "schema-only"
    assert empty.catalogs["shop"].tables["department"].description == "Units of the firm"
    keyless = perturb(dataset, "no-keys").catalogs["shop"]
    assert not any(t.primary_key or t.foreign_keys for t in keyless.tables.values())
    assert not any(c.primary_key for t in keyless.tables.values() for c in t.columns)
    assert perturb(dataset, "none") is dataset
    with pytest.raises(ConfigError, match="unknown perturbation"):
        perturb(dataset, "upside-down")
    with pytest.raises(ConfigError, match="Spider-Syn rewords only Spider's training questions"):
        perturb(dataset, "synonyms")


def test_perturbations_compose_in_the_order_written(tmp_path: Path) -> None:
    dataset = _shop(tmp_path)
    hidden = perturb(dataset, "warehouse+schema-only+no-keys")
    assert hidden.perturbation == "warehouse+schema-only+no-keys"
    assert not hidden.database_files  # schema-only
    catalog = hidden.catalogs["shop"]
    assert set(catalog.tables) == {"DIM_DPRT", "FACT_EMPL", "DIM_FCLT"}  # warehouse
    assert not any(t.primary_key or t.foreign_keys for t in catalog.tables.values())  # no-keys
    assert hidden.gold["q1"] == frozenset({"DIM_DPRT", "FACT_EMPL"})
    for bad in ("warehouse+warehouse", "none+no-keys", "warehouse+", "no-keys+upside-down"):
        with pytest.raises(ConfigError):
            perturb(dataset, bad)


def test_synonyms_give_spider_syn_wording_to_the_original_questions() -> None:
    root = shared_datasets("spider_syn", "spider")
    first = Question("syn-0", "department_management", "How many heads of the departments are older than 56 ?", "", "")
    original = Dataset("spider-syn-original", [first], {})
    reworded = perturb(original, "synonyms", root)
    assert reworded.questions[0].question == "How many leaders of the divisions are older than 56 ?"
    assert reworded.perturbation == "synonyms" and original.questions[0] is first
