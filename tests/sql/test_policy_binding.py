"""The policy's baseline: the catalog it was checked against, kept as it is until the schema changes."""

from __future__ import annotations

from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.policy.binding import Binding


def _catalog(*tables: tuple[str, list[str]]) -> Catalog:
    return Catalog(tables={name: Table(name, [Column(c, "TEXT") for c in columns]) for name, columns in tables})


def test_the_baseline_is_the_catalog_itself_until_another_one_comes() -> None:
    binding = Binding()
    first = _catalog(("people", ["id", "name"]))
    assert binding.admit(first, None) is first
    assert binding.admit(first, None) is first  # another role's first look: nothing is derived for it
    assert binding._known is None  # no names held twice while the schema is the one checked

    grown = _catalog(("people", ["id", "name", "salary"]), ("secrets", ["code"]))
    admitted = binding.admit(grown, None)
    assert sorted(admitted.tables) == ["people"]
    assert [c.name for c in admitted.tables["people"].columns] == ["id", "name"]
    assert binding._baseline is None and binding.bound  # from now on the names alone are kept

    again = _catalog(("PEOPLE", ["ID", "Name", "salary"]))
    assert [c.name for c in binding.admit(again, None).tables["PEOPLE"].columns] == ["ID", "Name"]
