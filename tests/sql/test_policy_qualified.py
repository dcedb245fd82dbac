"""Warehouse names in the policy: `project.dataset.table` and `catalog.schema.table` tables found by their
qualified parts, a policy naming them whole or by their last parts, and BigQuery wildcard tables for a role."""

from __future__ import annotations

import tomllib

import pytest
import sqlglot

from sophrosyne.errors import ConfigError, RejectedSQL, UnknownTable
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.guard import check_sql
from sophrosyne.sql.policy import Role, TableRule, parse_policy, restrict, rewrite_for
from sophrosyne.sql.policy.qualified import find_table, names_table, qualified_parts, tables_named


def _warehouse(dialect: str, *names: str) -> Catalog:
    columns = [Column("id", "INT64"), Column("region", "STRING"), Column("salary", "INT64")]
    tables = {n: Table(name=n, columns=list(columns), schema=n.rsplit(".", 1)[0]) for n in names}
    return Catalog(tables=tables, dialect=dialect)


BQ = _warehouse(
    "bigquery",
    "shop-prod.sales.orders",
    "shop-prod.sales.events_20240101",
    "shop-prod.sales.events_20240102",
    "shop-prod.hr.staff",
    "shop-prod.archive.orders",
)
SF = _warehouse("snowflake", "DB.SALES.ORDERS", "DB.HR.STAFF")


def _rewrite(role: Role, sql: str, catalog: Catalog) -> str:
    dialect = catalog.dialect
    return rewrite_for(role, check_sql(sql, dialect), catalog, dialect).sql(dialect=dialect)


def test_qualified_parts_of_each_kind_of_table() -> None:
    assert qualified_parts(BQ.tables["shop-prod.sales.orders"]) == ("shop-prod", "sales", "orders")
    assert qualified_parts(Table(name="orders", columns=[], schema="public")) == ("orders",)
    local = Table(name="sales.orders", columns=[], schema="sales", local_name="orders")
    assert qualified_parts(local) == ("sales", "orders")


def test_a_table_is_found_by_its_full_name_or_by_last_parts_that_only_it_ends_with() -> None:
    assert find_table(BQ, ["shop-prod", "sales", "orders"]) is BQ.tables["shop-prod.sales.orders"]
    assert find_table(BQ, ["sales", "orders"]) is BQ.tables["shop-prod.sales.orders"]
    assert find_table(BQ, ["staff"]) is BQ.tables["shop-prod.hr.staff"]
    assert find_table(BQ, ["orders"]) is None  # two datasets have one
    assert find_table(BQ, ["other", "sales", "orders"]) is None
    assert find_table(SF, ["db", "sales", "orders"]) is SF.tables["DB.SALES.ORDERS"]


def test_postgres_names_keep_their_meaning() -> None:
    catalog = Catalog(
        tables={
            "orders": Table(name="orders", columns=[], schema="public"),
            "a.b": Table(name="a.b", columns=[], schema="public"),
            "sales.orders": Table(name="sales.orders", columns=[], schema="sales", local_name="orders"),
        },
        dialect="postgres",
    )
    assert find_table(catalog, ["orders"]) is catalog.tables["orders"]
    assert find_table(catalog, ["public", "orders"]) is catalog.tables["orders"]
    assert find_table(catalog, ["sales", "orders"]) is catalog.tables["sales.orders"]
    assert find_table(catalog, ["a", "b"]) is None  # schema `a`, table `b`: not the table named "a.b"
    assert find_table(catalog, ["db", "public", "orders"]) is None  # another database


def test_a_policy_name_means_the_table_whole_or_by_its_last_parts() -> None:
    assert names_table("shop-prod.sales.orders", "shop-prod.sales.orders")
    assert names_table("SALES.ORDERS", "shop-prod.sales.orders")
    assert names_table("orders", "shop-prod.sales.orders")
    assert not names_table("les.orders", "shop-prod.sales.orders")
    assert not names_table("orders", "sales.orders")  # a PostgreSQL schema's table: named whole


@pytest.mark.parametrize(
    ("rule_name", "written"),
    [
        ("shop-prod.sales.orders", "SELECT * FROM `shop-prod.sales.orders`"),
        ("sales.orders", "SELECT * FROM `shop-prod`.sales.orders"),
        ("shop-prod.sales.orders", "SELECT * FROM sales.orders"),
    ],
)
def test_a_rule_applies_however_the_table_and_the_rule_are_qualified(rule_name: str, written: str) -> None:
    role = Role("eu", tables={rule_name: TableRule(row_filter="region = 'EU'", hidden=["salary"])})
    sql = _rewrite(role, written, BQ)
    assert "FROM `shop-prod`.`sales`.`orders` WHERE region = 'EU'" in sql
    assert "salary" not in sql


def test_a_deny_by_an_unqualified_name_hides_the_warehouse_table() -> None:
    role = Role("no_hr", denied=["staff"])
    with pytest.raises(UnknownTable):
        _rewrite(role, "SELECT * FROM `shop-prod.hr.staff`", BQ)
    with pytest.raises(UnknownTable):
        _rewrite(Role("no_hr", denied=["HR.STAFF"]), 'SELECT * FROM "DB"."HR"."STAFF"', SF)


def test_a_policy_name_that_means_several_tables_is_refused_at_start() -> None:
    policy = parse_policy(tomllib.loads('[roles.r]\ndeny = ["orders"]'))
    with pytest.raises(ConfigError, match="means 2 tables"):
        policy.check(BQ)
    parse_policy(tomllib.loads('[roles.r]\ndeny = ["sales.orders"]')).check(BQ)


def test_a_row_filter_reads_a_warehouse_table_by_its_plain_name() -> None:
    rule = "region IN (SELECT s.region FROM staff AS s WHERE s.id = 1)"  # plain names only, by design
    role = Role("r", tables={"sales.orders": TableRule(row_filter=rule)})
    parse_policy(tomllib.loads(f'[roles.r.tables."sales.orders"]\nrow_filter = "{rule}"')).check(BQ)
    sql = _rewrite(role, "SELECT id FROM `shop-prod.sales.orders`", BQ)
    assert "FROM `shop-prod`.`hr`.`staff` AS s" in sql


def test_a_column_written_with_the_table_path_reads_the_secured_table() -> None:
    role = Role("eu", tables={"sales.orders": TableRule(row_filter="region = 'EU'")})
    sql = _rewrite(role, "SELECT `shop-prod`.sales.orders.id, sales.orders.region FROM `shop-prod.sales.orders`", BQ)
    assert sql.endswith("SELECT orders.id, orders.region FROM _sec_shop_prod_sales_orders AS `orders`")
    assert sqlglot.parse_one(sql, read="bigquery") is not None


def test_a_wildcard_table_is_read_as_written_by_a_role_that_sees_every_table_it_reads() -> None:
    role = Role("sales", tables={"sales.orders": TableRule(row_filter="region = 'EU'")})
    sql = _rewrite(role, "SELECT COUNT(*) FROM `shop-prod.sales.events_*` WHERE _TABLE_SUFFIX > '20240101'", BQ)
    assert "FROM `shop-prod`.`sales`.`events_*`" in sql


@pytest.mark.parametrize(
    ("role", "message"),
    [
        (Role("r", tables={"events_20240102": TableRule(hidden=["salary"])}), "does not see whole"),
        (Role("r", tables={"events_20240101": TableRule(row_filter="region = 'EU'")}), "does not see whole"),
        (Role("r", denied=["sales.events_20240102"]), "does not see whole"),
        (Role("r", tables={"events_20240101": TableRule()}, unlisted_allowed=False), "tables created later"),
    ],
)
def test_a_wildcard_table_is_refused_where_it_would_read_past_the_role(role: Role, message: str) -> None:
    with pytest.raises(RejectedSQL, match=message) as caught:
        _rewrite(role, "SELECT * FROM `shop-prod.sales.events_*`", BQ)
    assert "events_20240102" not in caught.value.message  # a denied table is not named


def test_a_wildcard_over_no_table_is_unknown() -> None:
    with pytest.raises(UnknownTable):
        _rewrite(Role("r", denied=["hr.staff"]), "SELECT * FROM `shop-prod.sales.refunds_*`", BQ)


def test_a_whole_dataset_wildcard_is_refused_when_one_of_its_tables_is_restricted() -> None:
    role = Role("r", tables={"sales.orders": TableRule(hidden=["salary"])})
    with pytest.raises(RejectedSQL, match="does not see whole"):
        _rewrite(role, "SELECT * FROM `shop-prod.sales.*`", BQ)
    assert "`shop-prod`.`hr`.`*`" in _rewrite(role, "SELECT * FROM `shop-prod.hr.*`", BQ)


def test_snowflake_table_function_sources_are_checked_for_a_restricted_role() -> None:
    role = Role("r", denied=["HR.STAFF"])
    sql = _rewrite(role, "SELECT o.id, f.value FROM DB.SALES.ORDERS AS o, TABLE(FLATTEN(input => o.region)) AS f", SF)
    assert 'FROM "DB"."SALES"."ORDERS"' in sql


def test_a_snowflake_cte_recurses_without_the_keyword() -> None:
    role = Role("r", denied=["HR.STAFF"])
    sql = _rewrite(
        role,
        "WITH n AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
        "SELECT * FROM n JOIN DB.SALES.ORDERS ON id = i",
        SF,
    )
    assert "FROM n WHERE" in sql  # the recursive term reads the CTE, as Snowflake does


def test_a_rule_that_several_tables_end_with_later_denies_them_all() -> None:
    """`orders` named one table when the policy was checked; a second `orders` appeared since."""
    role = Role("eu", tables={"orders": TableRule(row_filter="region = 'EU'")})
    with pytest.raises(UnknownTable):
        _rewrite(role, "SELECT * FROM `shop-prod.sales.orders`", BQ)
    with pytest.raises(UnknownTable):
        _rewrite(role, "SELECT * FROM `shop-prod.archive.orders`", BQ)
    seen = restrict(role, BQ).tables
    assert "shop-prod.sales.orders" not in seen and "shop-prod.archive.orders" not in seen
    assert "shop-prod.hr.staff" in seen


def test_a_name_the_catalog_holds_whole_means_that_table_alone() -> None:
    """`orders` is a table of its own here, and also ends `shop.sales.orders`: the policy's `orders` is the first."""
    catalog = Catalog(
        tables={n: Table(name=n, columns=[Column("id", "INT")]) for n in ("orders", "shop.sales.orders")},
        dialect="snowflake",
    )
    assert [t.name for t in tables_named(catalog, "orders")] == ["orders"]
    assert [t.name for t in tables_named(catalog, "sales.orders")] == ["shop.sales.orders"]


WHOLE = "name the tables one by one (each gets the role's rules), or ask for a role that sees them all"


def test_a_wildcard_by_its_dataset_alone_reads_every_table_it_starts_when_the_role_sees_them_whole() -> None:
    # A rule that restricts nothing (no filter, no column list, nothing hidden) leaves its table whole.
    role = Role("r", tables={"events_20240101": TableRule()})
    assert _rewrite(role, "SELECT * FROM sales.`events_*`", BQ) == "SELECT * FROM sales.`events_*`"
    with pytest.raises(RejectedSQL) as caught:
        hidden = Role("r", tables={"events_20240101": TableRule(hidden=["salary"])})
        _rewrite(hidden, "SELECT * FROM sales.`events_*`", BQ)
    assert caught.value.message == (
        "the wildcard table `sales.events_*` is not allowed for role `r`: it reads a table the role does not see whole"
    )
    assert caught.value.hint == WHOLE


def test_the_refusals_of_a_wildcard_table_word_for_word() -> None:
    with pytest.raises(UnknownTable) as unknown:
        _rewrite(Role("r", denied=["hr.staff"]), "SELECT * FROM `shop-prod.sales.refunds_*`", BQ)
    assert unknown.value.message == "no table `shop-prod.sales.refunds_*`"
    assert unknown.value.hint == "call list_tables to see the tables you can read"
    listed = Role("r", tables={"events_20240101": TableRule()}, unlisted_allowed=False)
    with pytest.raises(RejectedSQL) as later:
        _rewrite(listed, "SELECT * FROM `shop-prod.sales.events_*`", BQ)
    assert later.value.message == (
        "the wildcard table `shop-prod.sales.events_*` is not allowed for role `r`: it would also read tables "
        "created later, which the role's policy does not list"
    )
    assert later.value.hint == WHOLE
