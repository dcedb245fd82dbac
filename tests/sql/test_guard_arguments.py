"""A function called with arguments sqlglot cannot build or write (too few, too many, of another kind) is a
syntax error naming the function, on every dialect: never sqlglot's own TypeError, KeyError or ValueError,
which a client would see as an internal error (`SELECT date_add(1)` on MySQL raised a TypeError)."""

from __future__ import annotations

import logging

import pytest
from sqlglot.dialects.dialect import Dialect

from sophrosyne.errors import RejectedSQL, SQLSyntaxError
from sophrosyne.schema.catalog import Catalog, Column, Table
from sophrosyne.sql.guard import check_sql
from sophrosyne.sql.policy import Role, TableRule, rewrite_for
from sophrosyne.sql.rendering import arguments_error, render

DIALECTS = ["sqlite", "duckdb", "postgres", "mysql", "spark"]
TAKES = "is called with arguments it does not take (too few, too many, or of another kind)."


def hint(dialect: str) -> str:
    return (
        f"Give the function the arguments the {dialect} documentation lists, e.g. DATE_ADD(d, INTERVAL 1 DAY) on MySQL."
    )


@pytest.mark.parametrize(
    ("sql", "dialect", "name", "line", "column"),
    [
        ("SELECT date_add(1)", "mysql", "date_add", 1, 8),
        ("SELECT a,\n  date_sub() + 2 FROM t", "mysql", "date_sub", 2, 3),
        ("SELECT date_add(date_add(1, INTERVAL 1 DAY))", "mysql", "date_add", 1, 8),  # the outer call
        ("SELECT date_add(upper(lower('x')))", "mysql", "date_add", 1, 8),  # past two closed calls
        ("date_add(1)", "mysql", "date_add", 1, 1),  # the call is the first word
        ("SELECT x, date_trunc() FROM t", "spark", "date_trunc", 1, 11),
        ("SELECT AND(*)", "spark", "AND", 1, 8),
    ],
)
def test_a_call_the_parser_cannot_build_is_a_syntax_error_at_the_function(
    sql: str, dialect: str, name: str, line: int, column: int
) -> None:
    with pytest.raises(SQLSyntaxError) as caught:
        check_sql(sql, dialect)
    assert caught.value.message == f"Syntax error at line {line}, column {column}: the function `{name}` {TAKES}"
    assert (caught.value.line, caught.value.column) == (line, column)
    assert caught.value.hint == hint({"mysql": "MySQL", "spark": "Spark"}[dialect])


@pytest.mark.parametrize(
    ("sql", "dialect", "name"),
    [
        ("SELECT upper(initcap())", "duckdb", "initcap"),
        ("SELECT regexp_replace('a', 'b')", "spark", "regexp_replace"),
        ("SELECT array_insert(1, 2, 3, 4)", "postgres", "array_insert"),
    ],
)
def test_a_call_sqlglot_cannot_write_is_a_syntax_error_naming_the_function(sql: str, dialect: str, name: str) -> None:
    tree = check_sql(sql, dialect)  # the parser took it
    with pytest.raises(SQLSyntaxError) as caught:
        render(tree, dialect)
    assert caught.value.message == f"Syntax error: the function `{name}` {TAKES}"
    assert caught.value.hint == hint(dialect)
    assert (caught.value.line, caught.value.column) == (None, None)


def test_a_failure_outside_any_open_call_names_no_function() -> None:
    tokens = Dialect.get_or_raise("mysql").tokenize("SELECT 1 + (2)")
    error = arguments_error(tokens, len(tokens), "MySQL")
    assert error.message == f"Syntax error: a function {TAKES}"
    assert error.hint == hint("MySQL")


def test_an_error_of_sophrosynes_own_while_writing_is_not_taken_for_the_users() -> None:
    """Only what sqlglot raises is the user's arguments; an error of ours stays an error (fails closed)."""

    class Broken:  # sqlglot's compiled classes take no subclass; the guard only calls `sql`
        def sql(self, dialect: object = None, copy: bool = True) -> str:
            raise TypeError("a bug of ours")

    with pytest.raises(TypeError, match="a bug of ours"):
        render(Broken(), "sqlite")  # type: ignore[arg-type]


ARGUMENTS = ["", "1", "'a', 'b'", "1, 2, 3, 4", "*", "INTERVAL 1 DAY"]


def _every_call(dialect: str) -> list[str]:
    parser = Dialect.get_or_raise(dialect).parser_class
    names = sorted({*parser.FUNCTIONS, *parser.FUNCTION_PARSERS})
    return [f"SELECT {name}({args}) FROM t" for name in names for args in ARGUMENTS]


@pytest.mark.slow  # 2-4 s per dialect; .ci/run runs it
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_function_of_the_dialect_with_odd_arguments_is_run_refused_or_a_syntax_error(dialect: str) -> None:
    """Every function sqlglot knows for the dialect, with none, one, four, a star or an interval for
    arguments, through the guard, a restricted role's rewrite and the writing of the SQL sent."""
    role = Role("ops", tables={"t": TableRule(row_filter="region = 'EU'")})
    catalog = Catalog(tables={"t": Table("t", [Column("x", "INTEGER"), Column("region", "TEXT")])}, dialect=dialect)
    logging.disable(logging.WARNING)  # sqlglot warns of each argument a dialect does not write
    try:
        for sql in _every_call(dialect):
            try:
                tree = check_sql(sql, dialect)
                render(tree, dialect)
                render(rewrite_for(role, tree, catalog, dialect), dialect)
            except (SQLSyntaxError, RejectedSQL):
                pass
            except Exception as error:  # anything else reaches the client as an internal error
                pytest.fail(f"{sql!r} on {dialect}: {type(error).__name__}: {error}")
    finally:
        logging.disable(logging.NOTSET)
