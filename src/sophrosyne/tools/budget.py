"""Bounding responses: every tool result fits the token budget, as text and as structured content, with a note."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from sophrosyne.base.text import CHARS_PER_TOKEN, estimate_tokens, shorten
from sophrosyne.tools.results import (
    DistinctValues,
    FoundRows,
    QueryOutput,
    QueryPlan,
    SchemaHits,
    TableDescription,
    TableList,
    render,
)

R = TypeVar("R", bound=BaseModel)
# The nonce has a fixed length: measuring with this one measures what any other renders.
_NONCE = "0" * 8
# Below this many characters a string is not cut (a name, a number): lists are cut instead.
_SHORT = 24


def measure(result: BaseModel) -> int:
    """Tokens of the larger of the two forms a client gets: the rendered text and the structured JSON."""
    text = render(result, _NONCE)
    data = json.dumps(result.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"), default=str)
    return max(estimate_tokens(text), estimate_tokens(data))


def fits(result: BaseModel, budget: int) -> bool:
    return measure(result) <= budget


def fit(result: R, budget: int) -> R:
    """`result` within `budget` tokens in both forms: long echoed strings cut first, then the lists the type
    names (the note says what was left out and how to see it), then every string, then every list."""
    if fits(result, budget):
        return result
    cut = result.model_copy(deep=True)
    chars = budget * CHARS_PER_TOKEN
    # An echoed input (a 1 MB question, a huge SQL text) may take at most a quarter of the budget.
    _shorten_strings(cut, max(_SHORT, chars // 4))
    cutter = _CUTTERS.get(type(cut))
    if cutter is not None and not fits(cut, budget):
        cutter(cut, budget)
    limit = chars // 8
    while not fits(cut, budget) and limit > _SHORT:
        _shorten_strings(cut, limit)
        limit //= 2
    if not fits(cut, budget):
        _empty_lists(cut)
        _note(cut, "cut: the response was emptied to fit the token budget; ask for less.")
    return cut


# -- cutting lists ---------------------------------------------------------------------------------------------


def cut_lists(result: BaseModel, fields: list[str], budget: int, note: Callable[[dict[str, int]], None]) -> None:
    """Cut the named list fields of `result` (each keeps a leading part) until it fits `budget`.

    The list that costs most is halved until the whole fits; then the last one halved grows back as far as
    the budget allows. `note(kept)` writes the note for the counts kept, and is measured with them."""
    full = {f: list(getattr(result, f)) for f in fields}
    # No item costs less than a few characters: more than this many can never fit.
    most = budget * CHARS_PER_TOKEN // 4
    keep = {f: min(len(items), most) for f, items in full.items()}

    def apply() -> bool:
        for f in fields:
            setattr(result, f, full[f][: keep[f]])
        note(dict(keep))
        return fits(result, budget)

    last: str | None = None
    before = 0
    while not apply() and any(keep.values()):
        last = max((f for f in fields if keep[f]), key=lambda f: len(json.dumps(getattr(result, f), default=_dump)))
        before = keep[last]
        keep[last] //= 2
    if last is None:
        return
    low, high = keep[last], before - 1
    while low < high:  # the largest count of the last list halved that still fits
        mid = (low + high + 1) // 2
        keep[last] = mid
        if apply():
            low = mid
        else:
            high = mid - 1
    keep[last] = low
    apply()


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else str(value)


def _cut_table_list(r: TableList, budget: int) -> None:
    totals = {"tables": len(r.tables), "groups": len(r.groups), "directives": len(r.directives)}
    base = r.cut

    def note(kept: dict[str, int]) -> None:
        parts = [f"{kept[f]} of {totals[f]} {f}" for f in totals if kept.get(f, totals[f]) < totals[f]]
        r.cut = _join(base, f"cut: showing {', '.join(parts)} (token budget)." if parts else None)

    cut_lists(r, ["directives", "groups", "tables"], budget, note)


def _cut_description(r: TableDescription, budget: int) -> None:
    total = len(r.columns)
    base = r.cut

    def note(kept: dict[str, int]) -> None:
        shown = kept["columns"]
        more = "" if shown == total else f"cut: showing {shown} of {total} columns (token budget)."
        r.cut = _join(base, more or None)

    cut_lists(r, ["referenced_by", "references", "columns"], budget, note)


def _cut_values(r: DistinctValues, budget: int) -> None:
    total, base = len(r.values), r.cut

    def note(kept: dict[str, int]) -> None:
        left = total - kept["values"]
        r.cut = _join(
            base, f"cut: {left} more values not shown (token budget); pass a smaller limit." if left else None
        )

    cut_lists(r, ["values"], budget, note)


def _cut_hits(r: SchemaHits, budget: int) -> None:
    total = len(r.hits)

    def note(kept: dict[str, int]) -> None:
        r.cut = f"cut: showing {kept['hits']} of {total} columns (token budget)." if kept["hits"] < total else None

    cut_lists(r, ["hits"], budget, note)


def _cut_plan(r: QueryPlan, budget: int) -> None:
    total = len(r.plan)

    def note(kept: dict[str, int]) -> None:
        r.cut = f"cut: showing {kept['plan']} of {total} plan lines (token budget)." if kept["plan"] < total else None

    cut_lists(r, ["hints", "plan"], budget, note)


def _cut_query(r: QueryOutput, budget: int) -> None:
    base = r.cut
    width = len(r.columns)
    # A wide result: the columns that fit in one row's share of the budget, then the rows that fit.
    if width > 1 and not _first_row_fits(r, budget // 2):
        columns, rows = list(r.columns), [list(row) for row in r.rows]
        low, high = 1, width - 1
        while low < high:
            mid = (low + high + 1) // 2
            r.columns, r.rows = columns[:mid], [row[:mid] for row in rows]
            if _first_row_fits(r, budget // 2):
                low = mid
            else:
                high = mid - 1
        r.columns, r.rows = columns[:low], [row[:low] for row in rows]
        base = _join(base, f"cut: showing {low} of {width} columns (token budget); select the columns you need.")
    total = len(r.rows)

    def note(kept: dict[str, int]) -> None:
        shown = kept["rows"]
        r.row_count = shown
        more = None
        if shown < total:
            more = f"cut: showing {shown} of {total} rows (token budget); aggregate, or add a WHERE or LIMIT."
            r.truncated = True
        r.cut = _join(base, more)

    cut_lists(r, ["rows"], budget, note)


def _first_row_fits(r: QueryOutput, budget: int) -> bool:
    head = r.model_copy(update={"rows": r.rows[:1]})
    return fits(head, budget)


def _cut_found(r: FoundRows, budget: int) -> None:
    total, base = len(r.matches), r.cut
    share = max(1, budget // max(1, total))
    for match in r.matches:
        # Each table's rows get an equal share; a wide table keeps the columns that fit in it.
        kept = _rows_within(match.columns, match.rows, share)
        if kept < len(match.rows):
            match.rows = match.rows[:kept]
            base = _join(base, f"rows of {match.table} cut to {kept} (token budget).")

    def note(kept: dict[str, int]) -> None:
        left = total - kept["matches"]
        r.cut = _join(base, f"cut: {left} more tables with matches not shown (token budget)." if left else None)

    cut_lists(r, ["matches"], budget, note)


def _rows_within(columns: list[str], rows: list[list[Any]], budget: int) -> int:
    used = estimate_tokens(json.dumps(columns, default=str))
    for i, row in enumerate(rows):
        used += estimate_tokens(json.dumps(row, ensure_ascii=False, default=str)) * 2
        if used > budget:
            return max(0, i)
    return len(rows)


_CUTTERS: dict[type, Callable[[Any, int], None]] = {
    TableList: _cut_table_list,
    TableDescription: _cut_description,
    DistinctValues: _cut_values,
    SchemaHits: _cut_hits,
    QueryPlan: _cut_plan,
    QueryOutput: _cut_query,
    FoundRows: _cut_found,
}


# -- the last resorts ------------------------------------------------------------------------------------------


def _shorten_strings(value: Any, limit: int) -> Any:
    """Every string inside `value` (models, lists) cut to `limit` characters; notes are ours and kept."""
    if isinstance(value, str):
        return shorten(value, limit)
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _shorten_strings(item, limit)
        return value
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            if name in ("cut", "note"):
                continue
            setattr(value, name, _shorten_strings(getattr(value, name), limit))
        return value
    return value


def _empty_lists(value: BaseModel) -> None:
    for name in type(value).model_fields:
        item = getattr(value, name)
        if isinstance(item, list):
            setattr(value, name, [])
        elif isinstance(item, str) and name not in ("cut", "note"):
            setattr(value, name, shorten(item, _SHORT))


def _note(value: BaseModel, text: str) -> None:
    if "cut" in type(value).model_fields:
        value.cut = text  # type: ignore[attr-defined]


def _join(*notes: str | None) -> str | None:
    joined = " ".join(n for n in notes if n)
    return joined or None
