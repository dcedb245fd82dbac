"""The guard's refusals word for word where a mutation test found them loose: where an unclosed string starts,
the SQL quoted in the engine's own dialect, the hint; and sqlglot's log left alone outside the guard."""

from __future__ import annotations

import logging

import pytest

from sophrosyne.errors import RejectedSQL, SQLSyntaxError
from sophrosyne.sql.guard import check_sql

UNCLOSED = "a string, quoted name or comment is not closed."


@pytest.mark.parametrize(
    ("sql", "dialect", "line", "column"),
    [
        ("SELECT 'abc", "sqlite", 1, 8),
        ("SELECT 1,\n2,\n  'abc", "sqlite", 3, 3),
        ('SELECT "abc', "sqlite", 1, 8),
        ("SELECT $$abc", "postgres", 1, 8),
        ("SELECT `abc", "mysql", 1, 8),
        ("SELECT '", "sqlite", None, None),  # the tokenizer names no offset here
        ("SELECT 1 /* x", "postgres", None, None),
    ],
)
def test_an_unclosed_string_says_where_it_starts_when_the_tokenizer_does(
    sql: str, dialect: str, line: int | None, column: int | None
) -> None:
    with pytest.raises(SQLSyntaxError) as caught:
        check_sql(sql, dialect)
    where = f" at line {line}, column {column}" if line is not None else ""
    assert caught.value.message == f"The SQL could not be tokenized{where}: {UNCLOSED}"
    assert caught.value.hint == "Close every quote and comment."
    assert (caught.value.line, caught.value.column) == (line, column)


def test_a_field_of_a_parenthesized_expression_is_refused_in_the_engines_dialect() -> None:
    with pytest.raises(RejectedSQL) as caught:
        check_sql("SELECT (a ~ 'x').b FROM t", "postgres")
    assert caught.value.message == (
        "`(a ~ 'x').b` is not allowed: a field of an expression in parentheses can call a function on PostgreSQL."
    )
    assert caught.value.hint == (
        "Select the column by its table or alias (`t.col`), not from a parenthesized expression."
    )


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
def test_a_field_of_a_column_is_a_name_not_a_call(dialect: str) -> None:
    check_sql("SELECT a.b.c.d.e FROM t", dialect)


def test_a_table_named_by_a_variable_is_refused_in_the_engines_dialect() -> None:
    with pytest.raises(RejectedSQL) as caught:
        check_sql("SELECT * FROM TABLE($1)", "snowflake")
    assert caught.value.message.startswith("`TABLE($1)` is not allowed: TABLE(...) reads rows here only from a ")


def test_sqlglots_log_is_quiet_only_while_the_guard_parses(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sqlglot"):
        logging.getLogger("sqlglot").warning("outside the guard")
    assert [r.getMessage() for r in caplog.records] == ["outside the guard"]
