"""SQL that does not parse, said as the user wrote it: where, near what, which clause is incomplete, which
function got arguments it does not take; never sqlglot's class names or its raw exceptions."""

from __future__ import annotations

import difflib
import re
import unicodedata
from pathlib import Path

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from sophrosyne.base.text import shorten
from sophrosyne.errors import SQLSyntaxError
from sophrosyne.sql import functions as sql_functions

QUERY_STARTS = ("SELECT", "WITH", "VALUES")
HINT_QUERY = "Send exactly one SELECT (optionally with WITH, UNION, INTERSECT or EXCEPT) that only reads."


_TOKEN_ERROR_AT = re.compile(r"from \d+:(\d+)$")
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+.*?>")
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


def arguments_error(tokens: list[Token], index: int, engine: Dialect) -> SQLSyntaxError:
    """The parser failed building a function call: the function whose parenthesis is open at `index`."""
    depth = 0
    for at in range(min(index, len(tokens)) - 1, 0, -1):
        kind = tokens[at].token_type
        if kind == TokenType.R_PAREN:
            depth += 1
        elif kind == TokenType.L_PAREN and depth:
            depth -= 1
        elif kind == TokenType.L_PAREN:
            name = tokens[at - 1]
            return _arguments_error_for(name.text, type(engine).__name__, name.line, name.col - len(name.text) + 1)
    return _arguments_error_for(None, type(engine).__name__)


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


_INTERNAL_CLASS = re.compile(r"(?:Required keyword: '\w+' missing)? for <class '(?:[\w.]+\.)?(\w+)'>")


def unknown_first_word(tokens: list[Token]) -> SQLSyntaxError | None:
    """A statement whose first word misspells SELECT, WITH or VALUES (`SELEC * FROM t`): said so, rather than
    what the parser made of the rest (`SELEC * FROM` reads as a multiplication missing its right side)."""
    first = tokens[0] if tokens else None
    if first is None or first.token_type != TokenType.VAR:
        return None
    close = difflib.get_close_matches(first.text.upper(), QUERY_STARTS, n=1, cutoff=0.6)
    if not close:
        return None  # a word of another statement (START, SET): the parser's own error says where it fails
    column = first.col - len(first.text) + 1
    return SQLSyntaxError(
        f"Syntax error at line {first.line}, column {column}: the statement starts with `{shown(first.text)}`, "
        f"which is not an SQL keyword: did you mean {close[0]}?",
        hint=HINT_QUERY,
        line=first.line,
        column=column,
    )


def syntax_error(error: ParseError) -> SQLSyntaxError:
    """sqlglot's parse error in words: where, near what, and which clause is incomplete (no class names)."""
    first = error.errors[0] if error.errors else {}
    line, end_col = first.get("line"), first.get("col")
    near = str(first.get("highlight") or "")
    description = _TOKEN_REPR.sub(lambda m: f"`{m.group(1)}`", str(first.get("description") or error))
    # sqlglot names its own classes ("... missing for <class 'sqlglot...Where'>"): say the clause instead.
    description = _INTERNAL_CLASS.sub(lambda m: f"the {m.group(1).upper()} clause is incomplete", description)
    # sqlglot points at the last character of the offending token; readers expect its first.
    column = end_col - len(near) + 1 if isinstance(end_col, int) and near and "\n" not in near else end_col
    where = f" at line {line}, column {column}" if line is not None else ""
    near_text = f" near `{shown(near)}`" if near else ""
    return SQLSyntaxError(
        f"Syntax error{where}{near_text}: {description}.",
        hint="Fix the SQL at that position; send one read-only query written for this database's dialect.",
        line=line,
        column=column,
    )


def token_error(sql: str, error: TokenError) -> SQLSyntaxError:
    # The inner error names the offset where an unterminated string or comment starts. Compiled sqlglot
    # (sqlglotc) keeps it as the context only: its `raise ... from` sets no cause.
    match = _TOKEN_ERROR_AT.search(str(error.__cause__ or error.__context__ or ""))
    line = column = None
    if match and int(match.group(1)) <= len(sql):
        before = sql[: int(match.group(1))]
        line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
    where = f" at line {line}, column {column}" if line is not None else ""
    return SQLSyntaxError(
        f"The SQL could not be tokenized{where}: a string, quoted name or comment is not closed.",
        hint="Close every quote and comment.",
        line=line,
        column=column,
    )


def shown(text: str, limit: int = 60) -> str:
    # Invisible characters (zero-width spaces, controls) are shown escaped, so the reader sees the trick.
    visible = "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") and c != "\n" else c for c in text
    )
    return shorten(visible, limit)
