"""The guard and a restricted role's function and type checks refuse no gold query of BIRD dev, Spider dev or
BIRD mini-dev (its SQLite, PostgreSQL and MySQL forms), and every gold query stays within the shape limits
with room to spare (`-m slow -s` prints the largest value of each measure)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.files import load_questions
from sophrosyne.errors import RejectedSQL
from sophrosyne.sql import functions as sql_functions
from sophrosyne.sql import shape
from sophrosyne.sql.guard import check_sql
from sophrosyne.sql.policy.row_filter import function_refusal

SETS = [
    ("bird_dev/dev.json", "sqlite"),
    ("spider/dev.json", "sqlite"),
    ("bird_mini_dev/mini_dev_sqlite.json", "sqlite"),
    ("bird_mini_dev/mini_dev_postgresql.json", "postgres"),
    ("bird_mini_dev/mini_dev_mysql.json", "mysql"),
]


def _restricted_refusal(tree: exp.Expr, dialect: str) -> str | None:
    for node in tree.walk():
        if isinstance(node, exp.Func) and (refused := function_refusal(node, dialect)):
            return f"function {refused}"
        if isinstance(node, exp.DataType) and not sql_functions.cast_allowed(node, dialect):
            return f"type {node.sql(dialect=dialect)}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize(("path", "dialect"), SETS, ids=[p for p, _ in SETS])
def test_no_gold_query_is_refused(path: str, dialect: str) -> None:
    root = shared_datasets(path.split("/")[0])
    refused = []
    questions = load_questions(root / path)
    for question in questions:
        try:
            tree = check_sql(question.sql, dialect)
        except RejectedSQL as error:
            refused.append((question.id, error.message))
            continue
        if reason := _restricted_refusal(tree, dialect):
            refused.append((question.id, reason))
    print(f"{path}: {len(questions)} gold queries, {len(refused)} refused")
    assert not refused


@pytest.mark.slow
def test_gold_queries_stay_far_below_the_shape_limits() -> None:
    """Each measure's largest value over the gold SQL is at most half its default."""
    root = shared_datasets("bird_dev", "spider", "bird_mini_dev")
    names = list(shape.ShapeLimits.__dataclass_fields__)
    defaults = shape.ShapeLimits.defaults()
    halves = shape.ShapeLimits(**{n: getattr(defaults, n) // 2 for n in names})
    for path, dialect in SETS:
        for question in load_questions(root / path):
            shape.check_tokens(sqlglot.tokenize(question.sql, read=dialect), halves)
            shape.check_tree(sqlglot.parse_one(question.sql, read=dialect), halves)
