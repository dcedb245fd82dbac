"""A role's view of a catalog whose tables have parents (PostgreSQL partitions and INHERITS children), without
a server: catalogs built by hand, as the PostgreSQL reader gives them (sql/policy/view.py)."""

from __future__ import annotations

from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table
from sophrosyne.sql.policy import Role, TableRule, restrict
from sophrosyne.sql.policy.view import _ancestors, inherited

COLUMNS = ["id", "region", "salary"]
FILTER = TableRule(row_filter="region = 'north'", hidden=["salary"])
OTHER = TableRule(row_filter="region = 'south'")


def table(name: str, *parents: str, kind: str = "table", rows: int | None = 100) -> Table:
    return Table(
        name=name,
        columns=[Column(c, "TEXT") for c in COLUMNS],
        primary_key=["id"],
        parents=list(parents),
        kind=kind,
        row_estimate=rows,
    )


def catalog(*tables: Table) -> Catalog:
    return Catalog(tables={t.name: t for t in tables}, dialect="postgres")


# sales <- sales_2024 <- sales_2024_q1 (partitions), and a table with no family.
SALES = catalog(table("sales"), table("sales_2024", "sales"), table("sales_2024_q1", "sales_2024"), table("misc"))


def test_a_child_of_a_denied_table_is_denied_and_so_is_its_child() -> None:
    role = inherited(Role("r", denied=["sales"]), SALES)
    assert role.denied == ["sales", "sales_2024", "sales_2024_q1"]
    assert set(restrict(Role("r", denied=["sales"]), SALES).tables) == {"misc"}


def test_a_child_without_a_rule_takes_its_ancestors_rule() -> None:
    role = inherited(Role("r", tables={"sales": FILTER}), SALES)
    assert role.denied == []
    for name in ("sales_2024", "sales_2024_q1"):
        assert role.tables[name] == FILTER
        assert role.tables[name].hidden is not FILTER.hidden  # a copy: the policy's own rule is not shared
    seen = restrict(Role("r", tables={"sales": FILTER}), SALES)
    assert seen.tables["sales_2024_q1"].column_names == ["id", "region"]
    assert seen.tables["sales_2024_q1"].row_estimate is None  # the full count would tell what the filter hides
    assert seen.tables["misc"].row_estimate == 100


def test_without_unlisted_tables_a_child_without_a_rule_stays_unreadable() -> None:
    role = Role("r", tables={"sales": FILTER, "misc": TableRule()}, unlisted_allowed=False)
    assert inherited(role, SALES) is role
    assert set(restrict(role, SALES).tables) == {"sales", "misc"}


def test_the_nearest_ancestor_with_a_rule_is_the_one_inherited() -> None:
    role = inherited(Role("r", tables={"sales_2024": FILTER}), SALES)
    assert role.tables["sales_2024_q1"] == FILTER
    assert "sales" in role.denied  # a parent without a rule would return its protected child's rows
    assert "sales_2024_q1" not in role.denied


def test_two_different_rules_among_the_ancestors_deny_the_child() -> None:
    role = inherited(Role("r", tables={"sales": FILTER, "sales_2024": OTHER}), SALES)
    assert "sales_2024_q1" in role.denied
    assert "sales_2024_q1" not in role.tables
    assert "sales" not in role.denied and "sales_2024" not in role.denied


def test_the_same_rule_on_two_ancestors_is_inherited() -> None:
    role = inherited(Role("r", tables={"sales": FILTER, "sales_2024": TableRule(**vars(FILTER))}), SALES)
    assert role.tables["sales_2024_q1"] == FILTER
    assert role.denied == []


def test_a_child_with_its_own_rule_keeps_it_unless_an_ancestor_is_denied() -> None:
    own = TableRule(row_filter="id = '1'")
    kept = inherited(Role("r", tables={"sales": FILTER, "sales_2024": own}), SALES)
    assert kept.tables["sales_2024"] is own and "sales_2024" not in kept.denied
    denied = inherited(Role("r", tables={"sales_2024": own}, denied=["sales"]), SALES)
    assert denied.denied == ["sales", "sales_2024", "sales_2024_q1"]


def test_a_denied_child_stays_denied_once() -> None:
    role = inherited(Role("r", denied=["sales", "sales_2024"]), SALES)
    assert role.denied == ["sales", "sales_2024", "sales_2024_q1"]


def test_a_parent_without_a_rule_of_a_protected_child_is_denied_once() -> None:
    """Two protected children of one parent: reading the parent would return their rows unfiltered."""
    family = catalog(table("events"), table("events_a", "events"), table("events_b", "events"), table("misc"))
    role = inherited(Role("r", tables={"events_a": FILTER}, denied=["events_b"]), family)
    assert role.denied == ["events_b", "events"]
    assert set(restrict(Role("r", tables={"events_a": FILTER}, denied=["events_b"]), family).tables) == {
        "events_a",
        "misc",
    }


def test_a_parent_with_its_own_rule_is_not_denied_for_its_child() -> None:
    family = catalog(table("events"), table("events_a", "events"))
    role = inherited(Role("r", tables={"events": OTHER, "events_a": FILTER}), family)
    assert role.denied == []
    assert role.tables == {"events": OTHER, "events_a": FILTER}


def test_a_denied_parent_of_a_protected_child_is_not_listed_twice() -> None:
    family = catalog(table("events"), table("events_a", "events"))
    role = inherited(Role("r", tables={"events_a": FILTER}, denied=["EVENTS"]), family)
    assert role.denied == ["EVENTS", "events_a"]  # the child is denied with it, the parent not again


def test_names_match_without_regard_to_case() -> None:
    family = catalog(table("Sales"), table("Sales_2024", "Sales"))
    role = inherited(Role("r", denied=["sales"]), family)
    assert role.denied == ["sales", "Sales_2024"]


def test_a_catalog_without_parents_leaves_the_role_as_it_is() -> None:
    role = Role("r", tables={"sales": FILTER})
    assert inherited(role, catalog(table("sales"), table("misc"))) is role


def test_an_unrestricted_role_inherits_nothing() -> None:
    role = Role()
    assert inherited(role, SALES) is role
    assert restrict(role, SALES) is SALES


def test_ancestors_are_followed_through_cycles_and_missing_parents() -> None:
    """A parent the catalog does not hold (another schema) is still an ancestor; a cycle ends."""
    odd = catalog(table("a", "b", "outside"), table("b", "a"), table("c", "c"))
    role = inherited(Role("r", denied=["outside"]), odd)
    assert role.denied == ["outside", "a", "b"]  # c, its own parent, has no ancestor
    role = inherited(Role("r", tables={"b": FILTER}), odd)
    assert role.tables["a"] == FILTER  # b is a's parent, and a is b's: each has the other's rule
    assert inherited(Role("r", tables={"misc": FILTER}), odd).denied == []


def test_each_ancestor_is_listed_once_nearest_first_whatever_the_cycles() -> None:
    """a's parents are b (whose parent is a) and `outside`; d's parent e and e's parent f read each other."""
    odd = catalog(table("a", "b", "outside"), table("b", "a"), table("d", "e"), table("e", "f"), table("f", "e"))
    assert _ancestors(odd.tables["a"], odd) == ["b", "outside"]
    assert _ancestors(odd.tables["d"], odd) == ["e", "f"]
    assert inherited(Role("r", denied=["f"]), odd).denied == ["f", "d", "e"]


def test_ancestors_nearest_first_decide_which_rule_is_nearest() -> None:
    """q1's parents: h1 (no rule) then year (FILTER); year's parent root carries FILTER too: one rule."""
    family = catalog(table("root"), table("year", "root"), table("h1", "year"), table("q1", "h1", "year"))
    role = inherited(Role("r", tables={"root": FILTER}), family)
    assert {name for name, rule in role.tables.items() if rule == FILTER} == {"root", "year", "h1", "q1"}


def test_the_result_is_remembered_per_role_and_catalog() -> None:
    role = Role("r", tables={"sales": FILTER})
    first = inherited(role, SALES)
    assert inherited(role, SALES) is first
    again = catalog(*SALES.tables.values())
    assert inherited(role, again) is not first
    assert inherited(role, again) == first
    for i in range(40):  # the cache holds a few recent pairs, not every one
        inherited(Role(f"r{i}", tables={"sales": FILTER}), SALES)
    assert inherited(role, SALES) == first


def test_a_rule_naming_a_warehouse_table_by_its_last_part_denies_every_table_it_now_names() -> None:
    def warehouse(*names: str) -> Catalog:
        return Catalog(
            tables={n: Table(name=n, columns=[Column("id", "TEXT")], schema=n.rsplit(".", 1)[0]) for n in names},
            dialect="snowflake",
        )

    role = Role("r", tables={"orders": FILTER})
    assert inherited(role, warehouse("db.s1.orders", "db.s1.misc")) is role
    both = inherited(role, warehouse("db.s1.orders", "db.s2.orders", "db.s1.misc"))
    assert both.denied == ["db.s1.orders", "db.s2.orders"]
    assert inherited(Role("r", tables={"db.s1.orders": FILTER}), warehouse("db.s1.orders", "db.s2.orders")).denied == []


def test_the_restricted_catalog_drops_what_the_role_may_not_know() -> None:
    orders = Table(
        name="orders",
        columns=[Column("id", "INT"), Column("customer", "INT"), Column("secret", "TEXT")],
        primary_key=["id", "secret"],
        foreign_keys=[
            ForeignKey(["customer"], "customers", ["id"]),
            ForeignKey(["customer"], "vault", ["id"]),
            ForeignKey(["secret"], "customers", ["id"]),
        ],
        row_estimate=10,
        description="Orders.",
        schema="public",
    )
    tables = [orders, table("customers"), table("vault"), table("a_view", kind="view"), table("listed", kind="view")]
    role = Role("r", tables={"orders": TableRule(hidden=["secret"]), "listed": TableRule()}, denied=["vault"])
    seen = restrict(role, catalog(*tables))
    assert set(seen.tables) == {"orders", "customers", "listed"}
    shown = seen.tables["orders"]
    assert shown.column_names == ["id", "customer"]
    assert shown.primary_key == ["id"]
    assert [(fk.columns, fk.ref_table) for fk in shown.foreign_keys] == [(["customer"], "customers")]
    assert shown.row_estimate == 10  # no row filter: the count hides nothing
    assert (shown.description, shown.schema, shown.kind) == ("Orders.", "public", "table")
    assert seen.dialect == "postgres"
