"""The sizes a function call asks for (widths, lengths, counts, precisions, in its arguments and inside its
format string), bounded before it runs.

Some engines build a function's value in one call that their deadline cannot stop: SQLite's printf fills
`%.*c`'s precision a character at a time and checks no progress handler meanwhile, PostgreSQL's format()
pads `%1000000000s` without checking for a cancel, and the work goes on long after the call was answered.
So a size must be a number the guard can read, at most `sql_max_size_argument`: a literal, arithmetic of
literals, or an expression inside LEAST(..., n) (and GREATEST(..., -n) where a negative width counts too).
A count the engine stops by itself (rows of a table function) is not a size here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sqlglot import exp

from sophrosyne.errors import RejectedSQL
from sophrosyne.settings import Limits

__all__ = ["DEFAULT_LIMIT", "SizeBudget"]

_INF = math.inf
# The setting's default, for a statement checked without settings.
DEFAULT_LIMIT: int = Limits.model_fields["sql_max_size_argument"].default


@dataclass(frozen=True)
class _Size:
    """Which argument of a call is a size (a negative one asks for nothing there), and what it sizes."""

    position: int
    what: str
    # The argument is an array of dimensions whose product is the size (PostgreSQL's array_fill).
    dimensions: bool = False
    # A bound of its own, below the setting's.
    most: int | None = None


# By the name the call is written with (sqlglot's typed classes keep their arguments in this order too).
# Some are on no engine's list today (array_fill, list_resize, ...): they are bounded the day they are.
SIZES: dict[str, tuple[_Size, ...]] = {
    "repeat": (_Size(1, "repeat count"),),
    "lpad": (_Size(1, "padded length"),),
    "rpad": (_Size(1, "padded length"),),
    "space": (_Size(0, "number of spaces"),),
    "randstr": (_Size(0, "string length"),),
    "zeroblob": (_Size(0, "blob length"),),
    "randomblob": (_Size(0, "blob length"),),
    "array_fill": (_Size(1, "array size", dimensions=True),),
    "array_repeat": (_Size(1, "repeat count"),),
    "list_resize": (_Size(1, "list length"),),
    "array_resize": (_Size(1, "list length"),),
    "bar": (_Size(3, "bar width"),),
    "to_base": (_Size(2, "minimum length"),),
    "bitstring": (_Size(1, "bit string length"),),
    # Spark's stack(n, ...) makes n rows in one call, which its cancel reaches only when the call ends (2**31 rows
    # answered at 5 s with a 2 s timeout).
    "stack": (_Size(0, "row count"),),
    # Written out for DuckDB as a list of that many quantiles, by sqlglot, in this process: 2147483647 of
    # them held the server's thread and 13 GB before any statement was sent.
    "approx_quantiles": (_Size(1, "bucket count", most=1000),),
}
# Typed classes whose name varies by dialect (SPACE compiles to REPEAT(' ', n) on MySQL and Spark).
_TYPED: dict[type[exp.Func], str] = {
    exp.Repeat: "repeat", exp.Pad: "lpad", exp.Space: "space", exp.Randstr: "randstr",
    exp.ApproxQuantiles: "approx_quantiles", exp.Stack: "stack",
}  # fmt: skip
# Functions whose first argument is a format string, with widths and precisions written in it: C's printf
# style, and DuckDB's format(), which is Python's (fmt's) `{:>10}` style.
_PRINTF_STYLE = frozenset({"printf", "format", "format_string", "sprintf"})
_FMT_STYLE_ON = frozenset({"duckdb"})
# A printf conversion: an optional argument position, flags, a width and a precision (each digits, `*` or
# `*n$`), then the conversion itself (or `%%`).
_CONVERSION = re.compile(r"%(?:(\d+)\$)?([-+ 0#!,'I]*)(\*(?:\d+\$)?|\d+)?(?:\.(\*(?:\d+\$)?|\d*))?(%|[a-zA-Z]?)")
_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_DIGITS = re.compile(r"\d+")


class SizeBudget:
    """The sizes the calls of one statement ask for, each and together at most `limit`: an engine evaluates a
    row's expressions in one step too, so a thousand calls of a width each within the bound add up."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.asked = 0.0

    def check(self, node: exp.Func, dialect: str) -> None:
        """Refuse a call whose width, length, count or precision is past the bound, or cannot be read as a
        number in the SQL (a column, an expression without LEAST around it), or that brings the statement's
        sum past it."""
        kind = _kind(node)
        if kind is None:
            return
        arguments = _arguments(node)
        name = _written(node, kind)
        if kind in _PRINTF_STYLE:
            self._add(name, _format_size(name, arguments, dialect, self.limit))
            return
        for size in SIZES.get(kind, ()):
            if size.position >= len(arguments):
                continue
            argument = arguments[size.position]
            most = min(self.limit, size.most or self.limit)
            asked = _dimensions(argument) if size.dimensions else _bounds(argument)[1]
            if asked > most:
                _refuse(name, size.what, argument, most)
            self._add(name, max(0.0, asked))

    def _add(self, name: str, asked: float) -> None:
        self.asked += asked
        if self.asked > self.limit:
            raise RejectedSQL(
                f"`{name}()` is not allowed here: with it, the widths, lengths and counts that this statement's "
                f"calls ask for add up to more than {self.limit:,}, and an engine builds a row's values in one "
                "step that its time limit cannot stop.",
                hint=f"Ask for smaller sizes: at most {self.limit:,} in all.",
            )


def _written(node: exp.Func, kind: str) -> str:
    """The name the call is written with (never rendered for the engine: sqlglot writes some calls out at
    length, approx_quantiles as a list of its bucket count's quantiles)."""
    if isinstance(node, exp.Anonymous):
        return node.name
    if isinstance(node, exp.Pad):
        return "lpad" if node.args.get("is_left") else "rpad"
    return kind


def _kind(node: exp.Func) -> str | None:
    for kind, name in _TYPED.items():
        if isinstance(node, kind):
            return name
    if isinstance(node, exp.Format):
        return "format"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return None


def _arguments(node: exp.Func) -> list[exp.Expr]:
    """The call's arguments in the order they are written."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    if isinstance(node, exp.Format):
        return [node.this, *node.expressions]
    values: list[exp.Expr] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            values.extend(value)
        elif isinstance(value, exp.Expr) and not isinstance(value, exp.Boolean):
            values.append(value)
    return values


def _dimensions(argument: exp.Expr) -> float:
    """The number of elements an array of dimensions asks for (infinite where it is no array literal)."""
    if not isinstance(argument, exp.Array):
        return _INF
    product = 1.0
    for dimension in argument.expressions:
        product *= max(0.0, _bounds(dimension)[1])
    return product


def _format_size(name: str, arguments: list[exp.Expr], dialect: str, limit: int) -> float:
    """The sum of the widths and precisions a format asks for (each within `limit`, else refused)."""
    if not arguments:
        return 0.0
    template = arguments[0]
    if not (isinstance(template, exp.Literal) and template.is_string):
        raise RejectedSQL(
            f"`{name}()` is not allowed with a format that is not a string literal: its widths and precisions "
            "must be readable in the SQL.",
            hint=f"Write the format of {name}() as a string literal, with widths of at most {limit:,}.",
        )
    text = template.name
    if dialect in _FMT_STYLE_ON and name.lower() == "format":
        return _fields_size(name, text, limit)
    asked = 0.0
    following = 1  # the argument the next conversion takes
    for match in _CONVERSION.finditer(text):
        position, _, width, precision, conversion = match.groups()
        if conversion == "%":
            continue
        for part in (width, precision):
            if not part:
                continue
            if part.startswith("*"):
                # `*n$` names its argument; a plain `*` takes the next one.
                index = int(part[1:-1]) if len(part) > 1 else following
                following = following if len(part) > 1 else following + 1
                argument = arguments[index] if index < len(arguments) else None
                low, high = _bounds(argument) if argument is not None else (-_INF, _INF)
                if high > limit or low < -limit:
                    # A negative width asks for as much: its sign only left-justifies.
                    _refuse(name, "width or precision given by `*`", argument, limit, signed=True)
                asked += max(high, -low)
            elif int(part) > limit:
                _refuse(name, f"width or precision `{match.group(0)}`", None, limit)
            else:
                asked += int(part)
        following = int(position) + 1 if position else following + 1
    return asked


def _fields_size(name: str, text: str, limit: int) -> float:
    asked = 0.0
    for match in _FIELD.finditer(text):
        field = match.group(1)
        if field is None:
            continue  # `{{` or `}}`
        spec = field.partition(":")[2]
        if "{" in spec:
            raise RejectedSQL(
                f"`{name}()` is not allowed with a width or precision taken from an argument (`{{{field}}}`).",
                hint=f"Write the width as a number of at most {limit:,} in the format.",
            )
        for digits in _DIGITS.findall(spec):
            if int(digits) > limit:
                _refuse(name, f"width or precision `{{{field}}}`", None, limit)
            asked += int(digits)
    return asked


def _bounds(node: exp.Expr) -> tuple[float, float]:
    """The least and the greatest value `node` can take, as far as the SQL tells (infinite where unknown)."""
    if isinstance(node, exp.Paren | exp.Cast | exp.TryCast | exp.Nullif):
        return _bounds(node.this)  # NULLIF(x, y) is x or NULL
    if isinstance(node, exp.Literal):
        if node.is_string:
            return (0.0, 0.0) if not _number(node.name) else _point(float(node.name))
        return _point(float(node.name)) if _number(node.name) else (-_INF, _INF)
    if isinstance(node, exp.Null | exp.Boolean):
        return 0.0, 1.0
    if isinstance(node, exp.Neg):
        low, high = _bounds(node.this)
        return -high, -low
    if isinstance(node, exp.Least | exp.Greatest):
        each = [_bounds(node.this), *(_bounds(e) for e in node.expressions)]
        if isinstance(node, exp.Least):
            return min(b[0] for b in each), min(b[1] for b in each)
        return max(b[0] for b in each), max(b[1] for b in each)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        (a, b), (c, d) = _bounds(node.this), _bounds(node.expression)
        if isinstance(node, exp.Add):
            return a + c, b + d
        if isinstance(node, exp.Sub):
            return a - d, b - c
        # Zero times an unknown bound is zero (infinity times zero is no number).
        products = [0.0 if x == 0 or y == 0 else x * y for x in (a, b) for y in (c, d)]
        return min(products), max(products)
    if isinstance(node, exp.Div | exp.IntDiv):
        (a, b), (c, d) = _bounds(node.this), _bounds(node.expression)
        if c <= 0 <= d:
            return -_INF, _INF
        # An integer division truncates toward zero: the bounds of the exact quotient, widened to zero.
        quotients = [x / y for x in (a, b) for y in (c, d)]
        return min(0.0, *quotients), max(0.0, *quotients)
    return -_INF, _INF


def _point(value: float) -> tuple[float, float]:
    return value, value


def _number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _refuse(name: str, what: str, argument: exp.Expr | None, limit: int, *, signed: bool = False) -> None:
    shown = f" (`{argument.sql()[:60]}`)" if argument is not None else ""
    bounded = f"LEAST(GREATEST(column, -{limit}), {limit})" if signed else f"LEAST(column, {limit})"
    raise RejectedSQL(
        f"`{name}()` is not allowed here with its {what}{shown}: a size must be a number of at most {limit:,} "
        "that the SQL states, since the engine builds the value in one step that its time limit cannot stop.",
        hint=f"Ask for a size of at most {limit:,}; for a size read from a column, write {bounded}.",
    )
