"""A checked statement written as SQL, and the syntax error for a function call sqlglot cannot build or write.

sqlglot builds a function's node from its arguments as they come: too few, or of a kind it does not expect,
fails in Python (`DATE_ADD(1)` on MySQL raised a TypeError) rather than as a parse error, while parsing or
when the SQL is written (`INITCAP()` on DuckDB). Such a failure is the caller's SQL, and is said so."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from sophrosyne.base.text import shorten
from sophrosyne.errors import SQLSyntaxError
from sophrosyne.sql import functions as sql_functions

__all__ = ["ARGUMENT_ERRORS", "arguments_error", "raised_by_sqlglot", "render", "shown"]

# What sqlglot raises, in parsing or in writing SQL, for a function called with arguments that do not fit it.
ARGUMENT_ERRORS = (TypeError, ValueError, AttributeError, KeyError, SqlglotError)


def render(tree: exp.Expr, dialect: str | Dialect, *, copy: bool = True) -> str:
    """The SQL of a checked statement for `dialect`. A function the parser took with arguments that do not fit
    it can still fail when sqlglot writes it (`INITCAP()` on DuckDB, `REGEXP_REPLACE(a, b)` on Spark): that is
    refused as a syntax error naming the function, never sqlglot's own exception."""
    try:
        return tree.sql(dialect=dialect, copy=copy)
    except ARGUMENT_ERRORS as error:
        if not raised_by_sqlglot(error):
            raise
        failing = next((f for f in _deepest_first(tree) if not _renders(f, dialect)), None)
        name = sql_functions.written_name(failing, dialect) if failing else None
        raise _arguments_error_for(name, dialect if isinstance(dialect, str) else type(dialect).__name__) from None


def _deepest_first(tree: exp.Expr) -> list[exp.Func]:
    return [node for node in reversed(list(tree.walk())) if isinstance(node, exp.Func)]


def _renders(node: exp.Func, dialect: str | Dialect) -> bool:
    try:
        node.sql(dialect=dialect)
    except ARGUMENT_ERRORS:
        return False
    return True


def raised_by_sqlglot(error: BaseException) -> bool:
    """Whether `error` comes from sqlglot's own code (its innermost frame), not from Sophrosyne's."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return isinstance(error, SqlglotError) or (
        tb is not None and "sqlglot" in Path(tb.tb_frame.f_code.co_filename).parts
    )


def arguments_error(tokens: list[Token], index: int, dialect: str) -> SQLSyntaxError:
    """The parser failed building a function call at token `index`: the function whose parenthesis is open."""
    depth = 0
    for at in range(min(index, len(tokens)) - 1, 0, -1):
        kind = tokens[at].token_type
        if kind == TokenType.R_PAREN:
            depth += 1
        elif kind == TokenType.L_PAREN and depth:
            depth -= 1
        elif kind == TokenType.L_PAREN:
            name = tokens[at - 1]
            return _arguments_error_for(name.text, dialect, name.line, name.col - len(name.text) + 1)
    return _arguments_error_for(None, dialect)


def _arguments_error_for(
    name: str | None, dialect: str, line: int | None = None, column: int | None = None
) -> SQLSyntaxError:
    where = f" at line {line}, column {column}" if line is not None else ""
    called = f"the function `{shown(name)}`" if name else "a function"
    return SQLSyntaxError(
        f"Syntax error{where}: {called} is called with arguments it does not take (too few, too many, or of "
        "another kind).",
        hint=f"Give the function the arguments the {dialect} documentation lists, e.g. DATE_ADD(d, INTERVAL 1 DAY) "
        "on MySQL.",
        line=line,
        column=column,
    )


def shown(text: str, limit: int = 60) -> str:
    """Text of the caller's SQL in a message: shortened, invisible characters (zero-width spaces, controls)
    escaped, so the reader sees the trick."""
    visible = "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") and c != "\n" else c for c in text
    )
    return shorten(visible, limit)
