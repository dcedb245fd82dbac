"""Tolerant comparison of result tables and the majority vote over FlexSQL's candidates."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from sophrosyne.agent.outcome import Candidate

TOLERANCE = 1e-2
# Words by which a question asks for an order; otherwise results are compared as bags of rows.
_ORDERS = re.compile(
    r"\b(order(ed)?|sort(ed)?|rank(ed|ing)?|ascending|descending|top|highest|lowest|first|last|"
    r"in (alphabetical|chronological) order)\b",
    re.IGNORECASE,
)


def question_orders(question: str) -> bool:
    return bool(_ORDERS.search(question))


def normal(value: Any) -> Any:
    """A comparable value: numbers (and numeric text) as floats, text stripped, NaN as NULL."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text[:10] if re.fullmatch(r"\d{4}-\d\d-\d\d[ T]00:00:00", text) else text
    return None if math.isnan(number) else number


def _key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, float):
        return (1, value)
    return (2, value)


def _close(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tolerance
    return bool(a == b)


def _rows_close(a: Sequence[Any], b: Sequence[Any], tolerance: float) -> bool:
    return all(_close(x, y, tolerance) for x, y in zip(a, b, strict=True))


def tables_match(
    a_rows: list[list[Any]],
    b_rows: list[list[Any]],
    *,
    ordered: bool = False,
    tolerance: float = TOLERANCE,
) -> bool:
    """Same row count and width; columns matched by their values (names and column order do not matter);
    numbers equal within `tolerance`; rows in any order unless `ordered`."""
    if len(a_rows) != len(b_rows):
        return False
    if not a_rows:
        return True
    width = len(a_rows[0])
    if any(len(r) != width for r in a_rows) or any(len(r) != width for r in b_rows):
        return False
    a = [[normal(v) for v in r] for r in a_rows]
    b = [[normal(v) for v in r] for r in b_rows]
    a_columns = [sorted((r[i] for r in a), key=_key) for i in range(width)]
    b_columns = [sorted((r[i] for r in b), key=_key) for i in range(width)]
    options = [[j for j in range(width) if _rows_close(a_columns[i], b_columns[j], tolerance)] for i in range(width)]

    def rows_agree(order: list[int]) -> bool:
        moved = [[r[j] for j in order] for r in b]
        if ordered:
            return all(_rows_close(x, y, tolerance) for x, y in zip(a, moved, strict=True))
        left = sorted(a, key=lambda r: [_key(v) for v in r])
        right = sorted(moved, key=lambda r: [_key(v) for v in r])
        return all(_rows_close(x, y, tolerance) for x, y in zip(left, right, strict=True))

    def assign(i: int, used: list[int]) -> bool:
        if i == width:
            return rows_agree(used)
        return any(assign(i + 1, [*used, j]) for j in options[i] if j not in used)

    return assign(0, [])


def vote(candidates: list[Candidate], *, ordered: bool) -> list[list[Candidate]]:
    """Group candidates with a result into classes of matching tables, largest class first (ties: the higher
    summed plan probability, then the earlier plan). Sets each candidate's `group`."""
    groups: list[list[Candidate]] = []
    for candidate in candidates:
        if candidate.error is not None:
            continue
        for group in groups:
            first = group[0]
            if len(first.columns) == len(candidate.columns) and tables_match(
                first.rows, candidate.rows, ordered=ordered
            ):
                group.append(candidate)
                break
        else:
            groups.append([candidate])
    groups.sort(key=lambda g: (-len(g), -sum(c.probability for c in g), min(c.plan for c in g)))
    for number, group in enumerate(groups, 1):
        for candidate in group:
            candidate.group = number
    return groups
