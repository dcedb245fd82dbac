"""Row filters: parsed once, checked to be pure predicates, and read for the values they allow."""

from __future__ import annotations

import functools
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from sophrosyne.errors import ConfigError
from sophrosyne.sql import functions as sql_functions
from sophrosyne.sql.guard import syntax_error
from sophrosyne.sql.policy.claims import CLAIM_PREFIX, claim_placeholder


def normalize_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float | Decimal):
        try:
            return str(Decimal(str(value)).normalize())
        except InvalidOperation:
            return str(value)
    return str(value).casefold()


def scope_of(predicate: exp.Expr) -> dict[str, set[str]]:
    scope: dict[str, set[str]] = {}
    for term in predicate.flatten() if isinstance(predicate, exp.And) else [predicate]:
        term = term.unnest()
        if isinstance(term, exp.EQ):
            left, right = term.this, term.expression
            if isinstance(right, exp.Column) and isinstance(left, exp.Literal):
                left, right = right, left
            if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
                scope.setdefault(left.name.lower(), set()).add(_literal_value(right))
        elif isinstance(term, exp.In) and isinstance(term.this, exp.Column):
            values = term.expressions
            if values and all(isinstance(v, exp.Literal) for v in values):
                scope.setdefault(term.this.name.lower(), set()).update(_literal_value(v) for v in values)
    return scope


def _literal_value(literal: exp.Literal) -> str:
    if literal.is_string:
        return normalize_value(literal.this)
    return normalize_value(Decimal(literal.this))


def parse_row_filter(text: str, dialect: str | None, where: str) -> exp.Expr:
    """Parse a row filter and check it is a pure predicate; ConfigError says what is wrong and where."""
    return _parse_row_filter(text, dialect, where).copy()


@functools.lru_cache(maxsize=512)
def _parse_row_filter(text: str, dialect: str | None, where: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except ParseError as error:
        raise ConfigError(
            f"row filter of {where} does not parse: {text!r}: {syntax_error(error).message}",
            hint="Write a predicate such as `region = 'EU'` or `dept IN ('D1', 'D2')`.",
        ) from None
    except ValueError as error:
        raise ConfigError(f"row filter of {where} does not parse: {text!r}", hint=str(error)[:200]) from None
    predicate = statements[0] if len(statements) == 1 else exp.Block(expressions=statements)
    # `:claims.NAME`, the caller's claim, becomes a placeholder bound per call (claims.py); any other is refused.
    predicate = predicate.transform(lambda node: claim_placeholder(node, where) or node)
    if (
        not isinstance(predicate, exp.Condition)
        or isinstance(predicate, exp.Query)
        or predicate.find(exp.DDL, exp.DML, exp.Command)
    ):
        raise ConfigError(f"row filter of {where} must be a predicate such as `region = 'EU'`, got {text!r}")
    for node in predicate.walk():
        if isinstance(node, exp.AggFunc | exp.Window) and node.find_ancestor(exp.Select) is None:
            raise ConfigError(f"row filter of {where} may not use aggregates or window functions")
        if isinstance(node, exp.Func) and (refused := function_refusal(node, dialect)):
            name, why = refused
            raise ConfigError(f"row filter of {where}: function `{name}` is not allowed" + (f": {why}" if why else ""))
        if isinstance(node, exp.Table) and (not isinstance(node.this, exp.Identifier) or node.args.get("db")):
            raise ConfigError(f"row filter of {where} may read only plain table names in its subqueries")
        if isinstance(node, exp.Placeholder) and str(node.this).startswith(CLAIM_PREFIX):
            continue
        if isinstance(node, exp.Placeholder | exp.Parameter):
            raise ConfigError(f"row filter of {where} may not contain parameters")
    return predicate


def function_refusal(node: exp.Func, dialect: str | None) -> tuple[str, str | None] | None:
    """The name of a function a restricted role (and a row filter) may not call on `dialect`, and why when
    the reason is not the role's, or None."""
    if sql_functions.refused_for_restricted(node):
        return sql_functions.written_name(node, dialect), None
    return sql_functions.refusal(node, dialect)
