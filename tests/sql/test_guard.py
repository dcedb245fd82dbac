"""Guard verdicts from tests/golden/guard.sql, plus error positions, messages and Unicode tricks."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlglot import exp

from sophrosyne.errors import ConfigError, RejectedSQL, SQLSyntaxError
from sophrosyne.sql.guard import check_sent, check_sql

GOLDEN = Path(__file__).parents[1] / "golden" / "guard.sql"
DIALECTS = {"sqlite", "duckdb", "postgres", "mysql", "spark", "databricks", "hive", "bigquery", "snowflake"}


@dataclass(frozen=True)
class Case:
    name: str
    dialect: str
    expect: str  # "allow", "reject" or "syntax"
    message: str  # a part of the expected message, for reject and syntax
    sql: str


def load_cases(path: Path = GOLDEN) -> list[Case]:
    cases = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines or not lines[0].startswith("-- case:"):
            assert all(line.startswith("--") for line in lines), f"stray text in {path}: {block!r}"
            continue
        header = dict(line[3:].split(":", 1) for line in lines[:3])
        verdict, _, message = header["expect"].strip().partition(":")
        cases.append(
            Case(
                name=header["case"].strip(),
                dialect=header["dialect"].strip(),
                expect=verdict.strip(),
                message=message.strip(),
                sql="\n".join(lines[3:]),
            )
        )
    return cases


CASES = load_cases()


def test_golden_file_is_well_formed() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    assert len(CASES) >= 100
    for case in CASES:
        assert case.dialect in DIALECTS, case.name
        assert case.expect in {"allow", "reject", "syntax"}, case.name
        assert case.sql.strip(), case.name
        assert (case.expect == "allow") == (not case.message), case.name
    for dialect in DIALECTS:
        verdicts = {case.expect for case in CASES if case.dialect == dialect}
        assert {"allow", "reject"} <= verdicts, dialect


@pytest.mark.parametrize("case", CASES, ids=[f"{case.dialect}-{case.name}" for case in CASES])
def test_golden(case: Case) -> None:
    if case.expect == "allow":
        tree = check_sql(case.sql, case.dialect)
        assert isinstance(tree, (exp.Select, exp.SetOperation, exp.Subquery))
        return
    error_type = RejectedSQL if case.expect == "reject" else SQLSyntaxError
    with pytest.raises(error_type) as caught:
        check_sql(case.sql, case.dialect)
    assert case.message in caught.value.message
    assert caught.value.hint


def test_returns_the_parsed_statement() -> None:
    tree = check_sql("SELECT a FROM t WHERE b = 1;", "sqlite")
    assert isinstance(tree, exp.Select)
    assert tree.sql(dialect="sqlite") == "SELECT a FROM t WHERE b = 1"


def test_delete_message_says_what_and_why() -> None:
    with pytest.raises(RejectedSQL) as caught:
        check_sql("DELETE FROM t", "sqlite")
    assert caught.value.message == (
        "`DELETE` is not allowed: only read-only queries (SELECT, WITH ... SELECT, set operations) run here."
    )
    assert caught.value.code == "rejected"


def test_syntax_error_position_points_at_the_token() -> None:
    with pytest.raises(SQLSyntaxError) as caught:
        check_sql("SELECT a\nFROM t\nWHERE FROM x", "postgres")
    error = caught.value
    assert (error.line, error.column) == (3, 7)
    assert "line 3, column 7" in error.message
    assert "<Token" not in error.message  # sqlglot's token repr is an internal detail


def test_unterminated_string_position() -> None:
    with pytest.raises(SQLSyntaxError) as caught:
        check_sql("SELECT 1,\n  'abc FROM t", "sqlite")
    assert (caught.value.line, caught.value.column) == (2, 3)
    assert "not closed" in caught.value.message


@pytest.mark.parametrize("sql", ["", "   \n\t", "-- only a comment", "/* nothing */"])
def test_empty_input_is_rejected(sql: str) -> None:
    with pytest.raises(RejectedSQL, match="empty"):
        check_sql(sql, "sqlite")


def test_zero_width_space_cannot_smuggle_a_second_statement() -> None:
    with pytest.raises((RejectedSQL, SQLSyntaxError)):
        check_sql("SELECT 1;\u200bDROP TABLE t", "sqlite")


def test_zero_width_space_is_shown_escaped() -> None:
    # The parser reads `SELECT\u200b1` as one identifier, so it is not a query at all.
    with pytest.raises(RejectedSQL) as caught:
        check_sql("SELECT\u200b1", "sqlite")
    assert "SELECT\\u200b1" in caught.value.message


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize(
    "statement",
    ["DELETE FROM t", "UPDATE t SET a = 1", "INSERT INTO t VALUES (1)", "DROP TABLE t", "CREATE TABLE x (a INT)"],
)
@pytest.mark.parametrize(
    "wrap",
    [
        "{}",
        "{};",
        "/* SELECT */ {}",
        "-- SELECT\n{}",
        "SELECT 1; {}",
        "SELECT 1;\n{}",
        "WITH x AS (SELECT 1) {}",
        "\ufeff{}",
    ],
)
def test_writes_never_pass(dialect: str, statement: str, wrap: str) -> None:
    with pytest.raises((RejectedSQL, SQLSyntaxError)):
        check_sql(wrap.format(statement), dialect)


def test_command_fallback_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sqlglot"), pytest.raises(RejectedSQL, match="VACUUM"):
        check_sql("VACUUM", "sqlite")
    assert not caplog.records


def test_other_sqlglot_dialects_get_every_deny_list() -> None:
    with pytest.raises(RejectedSQL, match="pg_sleep"):
        check_sql("SELECT pg_sleep(1)", "trino")
    with pytest.raises(RejectedSQL, match="is not allowed as a table"):
        check_sql("SELECT * FROM x.parquet", "snowflake")


@pytest.mark.parametrize(("alias", "function"), [("mariadb", "SLEEP(1)"), ("postgresql", "pg_sleep(1)")])
def test_sqlalchemy_dialect_names_are_accepted(alias: str, function: str) -> None:
    assert isinstance(check_sql("SELECT 1", alias), exp.Select)
    with pytest.raises(RejectedSQL, match="sleep"):
        check_sql(f"SELECT {function}", alias)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_nul_character_is_rejected(dialect: str) -> None:
    # MySQL ends a `--` comment at a NUL, so `-- \x00, SLEEP(5)` would hide a call from the parser.
    with pytest.raises(RejectedSQL, match="NUL"):
        check_sql("SELECT 1 -- \x00, SLEEP(5)", dialect)


def test_unknown_dialect_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        check_sql("SELECT 1", "no-such-dialect")


def test_deep_nesting_fails_closed() -> None:
    sql = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    with pytest.raises((RejectedSQL, SQLSyntaxError)):
        check_sql(sql, "sqlite")


@pytest.mark.parametrize(
    ("sql", "meant"),
    [
        ("SELEC * FROM employees", "SELECT"),
        ("selct name FROM employees", "SELECT"),
        ("WTIH a AS (SELECT 1) SELECT 1", "WITH"),
    ],
)
def test_a_misspelt_first_word_is_named_with_the_keyword_meant(sql: str, meant: str) -> None:
    with pytest.raises(SQLSyntaxError) as caught:
        check_sql(sql, "sqlite")
    assert f"starts with `{sql.split()[0]}`, which is not an SQL keyword: did you mean {meant}?" in caught.value.message
    assert (caught.value.line, caught.value.column) == (1, 1)
    assert "MUL" not in caught.value.message


def test_the_text_sent_to_spark_may_not_hold_a_substitution() -> None:
    """A name from the catalog (`${x}` is a legal backquoted name) must not reach Spark's substitution."""
    tree = check_sql("SELECT a FROM t", "spark")
    tree.find(exp.Table).set("this", exp.to_identifier("${env:HOME}", quoted=True))  # as a rewrite could write
    with pytest.raises(RejectedSQL, match="holds `\\$\\{`"):
        check_sent(tree.sql(dialect="spark"), "spark")
    check_sent("SELECT '${x}'", "postgres")  # only the engines that substitute
    check_sent("SELECT a FROM t", "databricks")
