"""Every shape limit at its exact boundary, without a server: a statement at the limit passes, one more refused
with the setting named. Tables count as the planner meets them (sql/shape.py): one query's join with CTE
reads and FROM subqueries flattened into it, and the whole statement's reads at most twice that."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import sqlglot
from sqlglot import exp

from sophrosyne.errors import RejectedSQL
from sophrosyne.sql.guard import check_sql
from sophrosyne.sql.shape import ShapeLimits, check_tokens, check_tree

DEFAULTS = ShapeLimits.defaults()


def limits(**changes: int) -> ShapeLimits:
    return dataclasses.replace(DEFAULTS, **changes)


def tree_depth(tree: exp.Expr) -> int:
    """The depth check_tree measures: the root is 1, each child one more."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest


def joins(n: int) -> str:
    return "SELECT 1 FROM t0" + "".join(f" JOIN t{i} ON t{i}.a = t0.a" for i in range(1, n))


def ctes(n: int) -> str:
    return "WITH " + ", ".join(f"c{i} AS (SELECT {i} AS a)" for i in range(n)) + " SELECT 1"


def nested_queries(n: int) -> str:
    return "SELECT " + "(SELECT " * (n - 1) + "1" + ")" * (n - 1)


def unions(n: int) -> str:
    return " UNION ".join(f"SELECT {i}" for i in range(n + 1))


def cte_read_in_subqueries(n: int) -> str:
    """One CTE of one table, read by `n` scalar subqueries: n reads, each a join of one relation."""
    reads = ", ".join(f"(SELECT max(a) FROM c) AS r{i}" for i in range(n))
    return f"WITH c AS (SELECT a FROM t) SELECT {reads}"


def doubling_chain(n: int) -> str:
    """Each CTE joins the one before with itself: an engine that inlines CTEs plans 2^n relations."""
    parts = ["c0 AS (SELECT a FROM t)"]
    parts += [f"c{i} AS (SELECT x.a FROM c{i - 1} x JOIN c{i - 1} y ON x.a = y.a)" for i in range(1, n + 1)]
    return f"WITH {', '.join(parts)} SELECT a FROM c{n}"


# (setting, a statement of size n, the limit's field, the size at the default, a message fragment)
BOUNDARIES: dict[str, tuple[Callable[[int], str], str, int]] = {
    "tables": (joins, "tables", DEFAULTS.tables),
    "ctes": (ctes, "ctes", DEFAULTS.ctes),
    "query_depth": (nested_queries, "query_depth", DEFAULTS.query_depth),
    "set_operations": (unions, "set_operations", DEFAULTS.set_operations),
    "literal_chars": (lambda n: f"SELECT '{'x' * n}'", "literal_chars", DEFAULTS.literal_chars),
    "pattern_chars": (lambda n: f"SELECT 1 FROM t WHERE a LIKE '{'x' * n}'", "pattern_chars", DEFAULTS.pattern_chars),
}


@pytest.mark.parametrize("name", list(BOUNDARIES))
@pytest.mark.parametrize("limit", ["default", 5])
def test_a_statement_at_the_limit_passes_and_one_more_is_refused(name: str, limit: int | str) -> None:
    build, field, default = BOUNDARIES[name]
    at = default if limit == "default" else int(limit)
    allowed = limits(**{field: at})
    check_sql(build(at), "sqlite", allowed)
    with pytest.raises(RejectedSQL) as caught:
        check_sql(build(at + 1), "sqlite", allowed)
    assert f"setting `sql_max_{field}`" in caught.value.message
    assert f"at most {at:,} are allowed" in caught.value.message
    assert caught.value.hint


@pytest.mark.parametrize("limit", [DEFAULTS.depth, 20])
def test_parentheses_at_the_depth_limit_pass_the_tokens_and_one_more_is_refused(limit: int) -> None:
    def tokens(n: int) -> list[sqlglot.tokens.Token]:
        return sqlglot.tokenize("SELECT " + "(" * n + "1" + ")" * n)

    check_tokens(tokens(limit), limits(depth=limit))
    with pytest.raises(RejectedSQL, match=f"nested {limit + 1} levels deep; at most {limit} are allowed"):
        check_tokens(tokens(limit + 1), limits(depth=limit))


def test_case_counts_as_a_level_of_the_tokens() -> None:
    sql = "SELECT " + "CASE WHEN 1 = 1 THEN " * 12 + "1" + " END" * 12
    check_tokens(sqlglot.tokenize(sql), limits(depth=12))
    with pytest.raises(RejectedSQL, match="sql_max_depth"):
        check_tokens(sqlglot.tokenize(sql), limits(depth=11))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 FROM t WHERE " + " AND ".join(["a > 0"] * 30),  # no parentheses: only the tree is deep
        "SELECT " + " + ".join(["a"] * 30) + " FROM t",
        nested_queries(12),
    ],
    ids=["and_chain", "plus_chain", "nested_queries"],
)
def test_a_tree_at_the_depth_limit_passes_and_one_level_more_is_refused(sql: str) -> None:
    tree = sqlglot.parse_one(sql, read="sqlite")
    depth = tree_depth(tree)
    check_tree(tree, limits(depth=depth))
    with pytest.raises(RejectedSQL, match=f"more than {depth - 1} levels deep; at most {depth - 1} are allowed"):
        check_tree(tree, limits(depth=depth - 1))


def test_ctes_at_the_limit_pass_the_tokens_and_the_tree_and_one_more_is_refused_by_each() -> None:
    allowed = limits(ctes=6)
    check_tokens(sqlglot.tokenize(ctes(6)), allowed)
    check_tree(sqlglot.parse_one(ctes(6)), allowed)
    with pytest.raises(RejectedSQL, match="defines 7 CTEs; at most 6"):
        check_tokens(sqlglot.tokenize(ctes(7)), allowed)
    with pytest.raises(RejectedSQL, match="more than 6 CTEs; at most 6"):
        check_tree(sqlglot.parse_one(ctes(7)), allowed)


def test_materialized_ctes_count_in_the_tokens() -> None:
    sql = "WITH " + ", ".join(f"c{i} AS {'NOT ' * (i % 2)}MATERIALIZED (SELECT 1)" for i in range(4)) + " SELECT 1"
    check_tokens(sqlglot.tokenize(sql, read="postgres"), limits(ctes=4))
    with pytest.raises(RejectedSQL, match="defines 4 CTEs"):
        check_tokens(sqlglot.tokenize(sql, read="postgres"), limits(ctes=3))


def test_a_long_literal_or_pattern_is_measured_in_characters_not_bytes() -> None:
    check_sql(f"SELECT '{'é' * 100}' LIKE '{'é' * 10}'", "sqlite", limits(literal_chars=100, pattern_chars=10))


@pytest.mark.parametrize("pattern", ["a GLOB '{p}'", "regexp_like(a, '{p}')", "a ILIKE '{p}'"])
def test_every_pattern_form_is_bounded(pattern: str) -> None:
    sql = "SELECT 1 FROM t WHERE " + pattern.format(p="x" * 11)
    with pytest.raises(RejectedSQL, match="pattern is 11 characters"):
        check_sql(sql, "duckdb", limits(pattern_chars=10))
    check_sql(sql, "duckdb", limits(pattern_chars=11))


def test_a_cte_join_counts_as_the_tables_it_joins() -> None:
    """A CTE read in FROM is flattened into the join: two CTEs of three tables each, joined, make six."""
    three = "SELECT t1.a FROM t1 JOIN t2 ON t1.a = t2.a JOIN t3 ON t1.a = t3.a"
    sql = f"WITH x AS ({three}), y AS ({three}) SELECT 1 FROM x JOIN y ON x.a = y.a"
    check_sql(sql, "sqlite", limits(tables=6))
    with pytest.raises(RejectedSQL, match="One query joins 6 tables"):
        check_sql(sql, "sqlite", limits(tables=5))


def test_a_subquery_in_from_counts_as_the_tables_it_joins() -> None:
    sql = f"SELECT 1 FROM ({joins(4)}) AS s JOIN u ON 1 = 1"
    check_sql(sql, "sqlite", limits(tables=5))
    with pytest.raises(RejectedSQL, match="One query joins 5 tables"):
        check_sql(sql, "sqlite", limits(tables=4))


def test_a_cte_read_by_many_subqueries_counts_each_read_up_to_twice_the_limit() -> None:
    """Each scalar subquery plans the CTE again where engines inline it: 2 x sql_max_tables reads in all."""
    check_sql(cte_read_in_subqueries(10), "sqlite", limits(tables=5))
    with pytest.raises(RejectedSQL, match="twice the limit of one join: 10; at most 5 are allowed") as caught:
        check_sql(cte_read_in_subqueries(11), "sqlite", limits(tables=5))
    assert "setting `sql_max_tables`" in caught.value.message


def test_an_unread_cte_counts_once() -> None:
    """Engines may plan a CTE no one reads: its tables count once beside the reads (7 here)."""

    def sql(unread: int) -> str:
        reads = ", ".join(f"(SELECT max(a) FROM c) AS r{i}" for i in range(7))
        return f"WITH unread AS ({joins(unread)}), c AS (SELECT a FROM t) SELECT {reads}"

    check_sql(sql(3), "sqlite", limits(tables=5))
    with pytest.raises(RejectedSQL, match="twice the limit of one join"):
        check_sql(sql(4), "sqlite", limits(tables=5))


@pytest.mark.parametrize("n", [4, 5])
def test_a_cte_joined_with_itself_at_each_step_grows_as_two_to_the_n(n: int) -> None:
    """The chain PostgreSQL plans for 1.1 s at 2^6 relations and 22 s at 2^9 (inlined): refused once one
    join reaches past the limit, at 2^5 for the default of 20."""
    if 2**n <= DEFAULTS.tables:
        check_sql(doubling_chain(n), "postgres")
    else:
        with pytest.raises(RejectedSQL, match=f"One query joins {2**n} tables") as caught:
            check_sql(doubling_chain(n), "postgres")
        assert "setting `sql_max_tables`" in caught.value.message


def test_a_recursive_cte_reading_itself_is_counted_once() -> None:
    sql = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5), "
        "s AS (SELECT a FROM s JOIN t ON 1 = 1) SELECT n FROM r"
    )
    check_sql(sql, "postgres", limits(tables=2))


def test_a_self_join_counts_each_alias() -> None:
    """The same table forty times is forty relations to plan."""
    sql = "SELECT e0.a FROM e e0" + "".join(f" JOIN e e{i} ON e{i}.a = e{i - 1}.b" for i in range(1, 40))
    with pytest.raises(RejectedSQL, match="One query joins 40 tables"):
        check_sql(sql, "sqlite")


def test_set_operations_inside_a_cte_count_as_often_as_it_is_read() -> None:
    sql = "WITH u AS (SELECT 1 AS a UNION SELECT 2 UNION SELECT 3) SELECT a FROM u UNION ALL SELECT a FROM u"
    check_sql(sql, "sqlite", limits(set_operations=5))  # 2 + 2 + the UNION ALL
    with pytest.raises(RejectedSQL, match="sql_max_set_operations"):
        check_sql(sql, "sqlite", limits(set_operations=4))


def test_query_depth_counts_a_cte_read_as_the_query_it_holds() -> None:
    sql = "WITH c AS (SELECT (SELECT (SELECT 1)) AS a) SELECT (SELECT a FROM c)"
    check_sql(sql, "sqlite", limits(query_depth=5))  # outer, scalar, c, and c's two
    with pytest.raises(RejectedSQL, match="sql_max_query_depth"):
        check_sql(sql, "sqlite", limits(query_depth=4))


DEPTH_HINT = (
    "Flatten it: a list of values in IN (...) rather than a long chain of OR, a CTE or a join rather than a "
    "subquery in a subquery."
)
# (what is refused, how) -> (the message, the hint): what an agent reads, word for word.
MESSAGES: dict[str, tuple[Callable[[], object], str, str]] = {
    "depth_tokens": (
        lambda: check_tokens(sqlglot.tokenize("SELECT ((1))"), limits(depth=1)),
        "The query is nested 2 levels deep; at most 1 are allowed (setting `sql_max_depth`, SOPHROSYNE_SQL_MAX_DEPTH).",
        DEPTH_HINT,
    ),
    "depth_tree": (
        lambda: check_tree(sqlglot.parse_one("SELECT 1 + 2"), limits(depth=2)),
        "The query is nested more than 2 levels deep; at most 2 are allowed (setting `sql_max_depth`, "
        "SOPHROSYNE_SQL_MAX_DEPTH).",
        DEPTH_HINT,
    ),
    "ctes_tokens": (
        lambda: check_tokens(sqlglot.tokenize(ctes(2)), limits(ctes=1)),
        "The query defines 2 CTEs; at most 1 are allowed (setting `sql_max_ctes`, SOPHROSYNE_SQL_MAX_CTES).",
        "Merge steps into fewer CTEs, or run the work as several queries.",
    ),
    "ctes_tree": (
        lambda: check_tree(sqlglot.parse_one(ctes(2)), limits(ctes=1)),
        "The query defines more than 1 CTEs; at most 1 are allowed (setting `sql_max_ctes`, SOPHROSYNE_SQL_MAX_CTES).",
        "Merge steps into fewer CTEs, or run the work as several queries.",
    ),
    "one_join": (
        lambda: check_sql(joins(3), "sqlite", limits(tables=2)),
        "One query joins 3 tables or subqueries in FROM and JOIN (a CTE or subquery there counted as the tables it "
        "joins); at most 2 are allowed (setting `sql_max_tables`, SOPHROSYNE_SQL_MAX_TABLES).",
        "Join fewer tables in one query: join what is needed, aggregate a part in a CTE, or split the work into "
        "several queries.",
    ),
    "every_read": (
        lambda: check_sql(cte_read_in_subqueries(5), "sqlite", limits(tables=2)),
        "The query reads more tables or subqueries in FROM and JOIN in all, each CTE counted as often as it is read, "
        "than twice the limit of one join: 4; at most 2 are allowed (setting `sql_max_tables`, "
        "SOPHROSYNE_SQL_MAX_TABLES).",
        "Read each CTE fewer times (join it once rather than in many subqueries), or split the work into several "
        "queries.",
    ),
    "set_operations": (
        lambda: check_sql(unions(2), "sqlite", limits(set_operations=1)),
        "The query has more than 1 UNION, INTERSECT or EXCEPT operations (each CTE counted as often as it is read); "
        "at most 1 are allowed (setting `sql_max_set_operations`, SOPHROSYNE_SQL_MAX_SET_OPERATIONS).",
        "Combine the branches: one SELECT with a WHERE ... IN (...) or a CASE often replaces many.",
    ),
    "query_depth": (
        lambda: check_sql(nested_queries(3), "sqlite", limits(query_depth=2)),
        "The query nests more than 2 queries in one another (a CTE read counts as the query it holds); at most 2 "
        "are allowed (setting `sql_max_query_depth`, SOPHROSYNE_SQL_MAX_QUERY_DEPTH).",
        "Nest fewer subqueries: join the tables, or compute steps in fewer CTEs.",
    ),
    "literal_chars": (
        lambda: check_sql("SELECT 'abc'", "sqlite", limits(literal_chars=2)),
        "A string literal is 3 characters long; at most 2 are allowed (setting `sql_max_literal_chars`, "
        "SOPHROSYNE_SQL_MAX_LITERAL_CHARS).",
        "Use a shorter literal: match a distinctive part of the text with LIKE.",
    ),
    "pattern_chars": (
        lambda: check_sql("SELECT 1 FROM t WHERE a LIKE 'abc'", "sqlite", limits(pattern_chars=2)),
        "A pattern is 3 characters long; at most 2 are allowed (setting `sql_max_pattern_chars`, "
        "SOPHROSYNE_SQL_MAX_PATTERN_CHARS).",
        "Use a shorter pattern.",
    ),
}


@pytest.mark.parametrize("case", list(MESSAGES))
def test_each_refusal_says_what_passed_which_setting_and_what_to_do(case: str) -> None:
    refuse, message, hint = MESSAGES[case]
    with pytest.raises(RejectedSQL) as caught:
        refuse()
    assert (caught.value.message, caught.value.hint) == (message, hint)
