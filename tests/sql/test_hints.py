"""Performance hints from the query as written: each names its table and column, sized as the role sees it."""

from __future__ import annotations

import sqlglot

from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.hints import query_hints
from sophrosyne.sql.policy import Role, TableRule, restrict


def catalog() -> Catalog:
    columns = [Column("id", "INTEGER", primary_key=True), Column("name", "TEXT"), Column("team_id", "INTEGER")]
    return Catalog(
        tables={
            "people": Table("people", columns, primary_key=["id"], row_estimate=2_000_000),
            "teams": Table("teams", [Column("id", "INTEGER"), Column("title", "TEXT")], row_estimate=50),
        }
    )


def hints(sql: str, of: Catalog | None = None) -> list[str]:
    return query_hints(sqlglot.parse_one(sql, read="sqlite"), of or catalog())


def test_a_leading_wildcard_like_on_a_large_table_names_table_and_column() -> None:
    (hint,) = hints("SELECT id FROM people AS p WHERE p.name LIKE '%son'")
    assert hint.startswith("leading-wildcard LIKE on people.name (~2,000,000 rows)")
    assert hints("SELECT id FROM people WHERE name LIKE 'john%'") == []
    assert hints("SELECT id FROM teams WHERE title LIKE '%ops%'") == []  # a small table: no hint


def test_a_cartesian_product_is_named() -> None:
    (hint,) = hints("SELECT * FROM people AS p JOIN teams AS t WHERE p.name = 'x'")
    assert hint.startswith("cartesian product: teams is joined with no condition")
    assert hints("SELECT * FROM people AS p JOIN teams AS t ON t.id = p.team_id") == []
    assert hints("SELECT * FROM people AS p, teams AS t WHERE t.id = p.team_id") == []


def test_a_filtered_table_gets_no_size_hint() -> None:
    # A restricted role's catalog has no row estimate for a filtered table: no hint may call it large.
    role = Role("r", tables={"people": TableRule(row_filter="team_id = 1")})
    assert hints("SELECT id FROM people WHERE name LIKE '%son'", restrict(role, catalog())) == []


def test_unindexed_filters_and_joins_name_table_and_column() -> None:
    leads = {"people": {"id"}, "teams": {"id"}}
    (scan,) = query_hints(sqlglot.parse_one("SELECT id FROM people WHERE name = 'x'"), catalog(), leads)
    assert scan == (
        "full scan of people (~2,000,000 rows): it is filtered on name, which no index leads; "
        "a filter on id would use an index."
    )
    assert query_hints(sqlglot.parse_one("SELECT name FROM people WHERE id = 3"), catalog(), leads) == []
    sql = "SELECT p.name FROM people AS p JOIN teams AS t ON t.title = p.name"
    (join,) = query_hints(sqlglot.parse_one(sql), catalog(), leads)
    assert join.startswith("join teams.title = people.name has no index on either side")
    on_key = "SELECT p.name FROM people AS p JOIN teams AS t ON t.id = p.team_id"
    assert query_hints(sqlglot.parse_one(on_key), catalog(), leads) == []


def test_hints_never_name_a_hidden_column() -> None:
    role = Role("r", tables={"people": TableRule(hidden=["name"])})
    restricted = restrict(role, catalog())
    assert (
        query_hints(sqlglot.parse_one("SELECT id FROM people WHERE name = 'x'"), restricted, {"people": {"id"}}) == []
    )
