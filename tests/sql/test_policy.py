"""Policy files, bearer tokens, restricted catalogs and the post-execution row filter."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from sophrosyne.database import open_database
from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.policy import Policy, Role, TableRule, hash_token, load_policy, parse_policy, restrict

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "policy.toml"
DEMO = ROOT / "src" / "sophrosyne" / "data" / "demo.sqlite"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def test_example_policy_loads_and_matches_the_demo_database() -> None:
    policy = load_policy(EXAMPLE)
    assert policy.default_role.name == "ops_manager"
    assert set(policy.roles) == {"hr_admin", "ops_manager", "trainer"}
    assert policy.role("hr_admin").unrestricted
    database = open_database(DEMO)
    try:
        policy.check(database.catalog())
        seen = restrict(policy.role("trainer"), database.catalog())
    finally:
        database.close()
    assert set(seen.tables) == {"training_courses", "training_enrollments", "employees"}
    assert seen.tables["employees"].column_names == ["employee_id", "first_name", "last_name", "department"]
    assert "score" not in seen.tables["training_enrollments"].column_names


def test_tokens_map_to_roles_by_hash() -> None:
    policy = load_policy(EXAMPLE)
    role = policy.role_for_token("ops-manager-token")
    assert role is not None and role.name == "ops_manager"
    assert policy.role_for_token("hr-admin-token") is policy.role("hr_admin")
    assert policy.role_for_token("ops-manager-token ") is None
    assert policy.role_for_token("") is None
    assert policy.role_for_token(hash_token("ops-manager-token")) is None  # the hash is not the token


def test_unknown_role_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="no role `boss`") as info:
        load_policy(EXAMPLE).role("boss")
    assert info.value.hint is not None and "ops_manager" in info.value.hint


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[roles.a]\nfoo = 1\n", "unknown key `roles.a.foo`"),
        ("default_role = 'a'\n[roles.a.tables.t]\nrowfilter = 'x = 1'\n", "unknown key `roles.a.tables.t.rowfilter`"),
        ("colour = 'red'\n[roles.a]\n", "unknown key `colour`"),
        ("[roles.a.tables.t]\nrow_filter = 'x = '\n", "row filter of `roles.a.tables.t` does not parse"),
        ("[roles.a.tables.t]\nrow_filter = 'SELECT 1'\n", "must be a predicate"),
        ("[roles.a.tables.t]\nrow_filter = 'x = 1; DROP TABLE t'\n", "row filter"),
        ("[roles.a.tables.t]\nrow_filter = \"x = pg_read_file('/etc/passwd')\"\n", "`pg_read_file` is not allowed"),
        ("[roles.a.tables.t]\nrow_filter = 'x = my_udf(1)'\n", "`my_udf` is not allowed"),
        ("[roles.a.tables.t]\nrow_filter = 'COUNT(*) > 1'\n", "aggregates"),
        ("[roles.a.tables.t]\nrow_filter = 'x IN (SELECT y FROM other.u)'\n", "plain table names"),
        ("[roles.a.tables.t]\nrow_filter = 'x = ?'\n", "parameters"),
        ("[roles.a.tables.t]\ncolumns = 'x'\n", "must be a list"),
        ("[roles.a]\nunlisted = 'maybe'\n", "unlisted"),
        ("[roles.a]\n[roles.b]\n", "`default_role` is missing"),
        ("default_role = 'c'\n[roles.a]\n", "unknown role `c`"),
        ("[roles.a]\n[tokens]\nsecret = 'a'\n", "not a sha256 hex digest"),
        (f"[roles.a]\n[tokens]\n'{'0' * 64}' = 'b'\n", "unknown role `b`"),
        ("default_role = 'a'\n", "defines no role"),
        ("[roles.a\n", "not valid TOML"),
        ("[roles.a]\ndeny = ['T']\n[roles.a.tables.t]\n", "both denied and given a rule"),
    ],
)
def test_bad_policy_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_policy(write(tmp_path, text))
    assert str(tmp_path) in info.value.message


def test_a_row_filter_that_does_not_parse_says_where_in_plain_text(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(write(tmp_path, "[roles.a.tables.t]\nrow_filter = \"region = = 'EU'\"\n"))
    shown = f"{info.value.message} {info.value.hint}"
    assert "at line 1, column 10" in shown and "region = 'EU'" in shown
    assert "\x1b" not in shown and "<class" not in shown  # no terminal escapes, no sqlglot class names


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_policy(tmp_path / "nope.toml")


def catalog() -> Catalog:
    def table(name: str, *cols: str) -> Table:
        return Table(name=name, columns=[Column(c, "TEXT") for c in cols])

    return Catalog(tables={"emp": table("emp", "id", "dept", "pay"), "dept": table("dept", "code")})


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("[roles.a.tables.nope]\n", "no such table"),
        ("[roles.a.tables.emp]\nhidden = ['salary']\n", "no column `salary`"),
        ("[roles.a.tables.emp]\nrow_filter = \"department = 'x'\"\n", "unknown column `department`"),
        ("[roles.a.tables.emp]\nrow_filter = 'id IN (SELECT x FROM ghosts)'\n", "unknown table `ghosts`"),
    ],
)
def test_check_against_a_catalog(rule: str, message: str) -> None:
    import tomllib

    policy = parse_policy(tomllib.loads(rule))
    with pytest.raises(ConfigError, match=message):
        policy.check(catalog())


def test_single_role_is_the_default() -> None:
    policy = parse_policy({"roles": {"only": {}}})
    assert isinstance(policy, Policy) and policy.default_role.name == "only"


def test_restricted_catalog_hides_views_without_a_rule() -> None:
    base = catalog()
    base.tables["v"] = Table(name="v", columns=[Column("id", "TEXT")], kind="view")
    assert "v" in restrict(Role("all"), base).tables
    role = Role("r", denied=["dept"])
    assert set(restrict(role, base).tables) == {"emp"}
    role.tables["v"] = TableRule()
    assert set(restrict(role, base).tables) == {"emp", "v"}


def test_a_table_with_no_visible_column_is_absent() -> None:
    role = Role("r", tables={"dept": TableRule(hidden=["code"])})
    assert set(restrict(role, catalog()).tables) == {"emp"}
    assert not role.can_see_table("sqlite_master")


ROLE = Role(
    "m",
    tables={
        "emp": TableRule(row_filter="dept IN ('D042', 'D043') AND id > 0 AND region = 'EU'", hidden=["pay"]),
        "dept": TableRule(row_filter="code = 7"),
    },
)


def test_row_scope_comes_from_equality_and_in_terms() -> None:
    assert ROLE.row_scope("emp") == {"dept": {"d042", "d043"}, "region": {"eu"}}
    assert ROLE.row_scope("dept") == {"code": {"7"}}
    assert ROLE.row_scope("other") == {}


def test_filter_rows_drops_rows_outside_the_scope() -> None:
    rows = [("D042", 1, "EU"), ("D999", 2, "EU"), ("d043", 3, "EU"), ("D042", 4, "US"), (None, 5, "EU")]
    assert ROLE.filter_rows("emp", ["DEPT", "id", "region"], rows) == [("D042", 1, "EU"), ("d043", 3, "EU")]
    assert ROLE.filter_rows("emp", ["id"], rows[:2]) == [("D042", 1, "EU"), ("D999", 2, "EU")]
    assert ROLE.filter_rows("dept", ["code"], [(7,), (7.0,), ("7",), (8,)]) == [(7,), (7.0,), ("7",)]
    assert ROLE.filter_rows(None, ["dept"], rows) == [tuple(r) for r in rows]
    assert Role().filter_rows("emp", ["dept"], rows) == rows


@pytest.mark.parametrize(
    ("sql", "table"),
    [
        ("SELECT dept, id FROM emp WHERE id > 3", "emp"),
        ("SELECT id FROM emp", "emp"),
        ("SELECT e.dept AS dept FROM emp AS e", "emp"),
        ("SELECT 'D042' AS dept FROM emp", None),
        ("SELECT code AS dept FROM dept", "dept"),
        ("SELECT dept, COUNT(*) FROM emp GROUP BY dept", None),
        ("SELECT dept FROM emp JOIN dept ON code = id", None),
        ("SELECT dept FROM emp WHERE id IN (SELECT code FROM dept)", None),
        ("SELECT dept FROM emp UNION SELECT code FROM dept", None),
    ],
)
def test_scoped_table(sql: str, table: str | None) -> None:
    assert ROLE.scoped_table(sqlglot.parse_one(sql)) == table
