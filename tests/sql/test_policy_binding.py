"""The policy's baseline: the catalog it was checked against, kept as it is until the schema changes."""

from __future__ import annotations

import logging
import tomllib

import pytest

from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.sql.policy import parse_policy
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


def test_what_appeared_later_is_held_back_with_its_keys_and_named_once(caplog: pytest.LogCaptureFixture) -> None:
    binding = Binding()
    checked = Catalog(
        tables={
            "people": Table("people", [Column("id", "INT"), Column("team", "INT")], primary_key=["id"]),
            "teams": Table("teams", [Column("id", "INT")], primary_key=["id"]),
            "offices": Table("offices", [Column("id", "INT")]),
        },
        dialect="postgres",
    )
    binding.admit(checked, None)
    people = Table(
        "people",
        [Column("ID", "INT"), Column("team", "INT"), Column("badge", "INT"), Column("vault", "INT")],
        primary_key=["ID", "badge"],
        foreign_keys=[
            ForeignKey(["team"], "teams", ["id"]),
            ForeignKey(["badge"], "teams", ["id"]),  # over a new column
            ForeignKey(["team"], "vaults", ["id"]),  # to a new table
        ],
    )
    grown = Catalog(
        tables={
            "people": people,
            "teams": checked.tables["teams"],
            "offices": Table("offices", [Column("id", "INT")], foreign_keys=[ForeignKey(["id"], "vaults", ["id"])]),
            "vaults": Table("vaults", [Column("id", "INT")]),
        },
        dialect="postgres",
    )
    with caplog.at_level(logging.INFO, logger="sophrosyne.sql.policy"):
        admitted = binding.admit(grown, None)
        binding.admit(grown, None)
    assert admitted.dialect == "postgres"
    assert sorted(admitted.tables) == ["offices", "people", "teams"]
    assert admitted.tables["offices"].foreign_keys == []  # its one key points at a table held back
    kept = admitted.tables["people"]
    assert [c.name for c in kept.columns] == ["ID", "team"]
    assert kept.primary_key == ["ID"]
    assert kept.foreign_keys == [ForeignKey(["team"], "teams", ["id"])]
    assert admitted.tables["teams"] is grown.tables["teams"]  # unchanged, not copied
    assert [r.getMessage() for r in caplog.records] == [  # once, however often the catalog is read
        "held back from restricted roles until the policy is checked again (restart the server): "
        "column `people.badge`, column `people.vault`, table `vaults`, which appeared after the policy was checked"
    ]
    assert caplog.records[0].levelno == logging.INFO  # no policy file: nothing for an operator to act on


def test_a_name_the_policy_gives_that_disappears_is_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    policy = parse_policy(tomllib.loads('[roles.r.tables.people]\nhidden = ["salary"]'))
    binding = Binding()
    binding.admit(_catalog(("people", ["id", "salary"])), policy)
    with caplog.at_level(logging.WARNING, logger="sophrosyne.sql.policy"):
        for _ in range(2):
            binding.admit(_catalog(("people", ["id"])), policy)
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert message.startswith("the schema changed under the policy: ") and "salary" in message
