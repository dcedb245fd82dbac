"""Bounding responses: every tool result fits the token budget, as text and as structured content, with a note."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from sophrosyne.base.text import CHARS_PER_TOKEN, estimate_tokens, shorten
from sophrosyne.tools.base import Result, render

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
    if isinstance(cut, Result) and not fits(cut, budget):
        cut.cut_to_budget(budget)
    limit = chars // 8
    while not fits(cut, budget) and limit > _SHORT:
        _shorten_strings(cut, limit)
        limit //= 2
    if not fits(cut, budget):
        _empty_lists(cut)
        _note(cut, "cut: the response was emptied to fit the token budget; ask for less.")
    return cut


def most_that_fit(cost: Callable[[int], int], budget: int, most: int, least: int = 0) -> int:
    """The largest count in `least`..`most` whose `cost` (tokens, growing with the count) is within `budget`;
    `least` when no larger one is (a count known to fit, or the fewest there may be). Each guess is interpolated
    from the costs measured at the two ends (entries cost about the same, so two or three measures find it),
    every other one halves instead, so it never takes more than twice the measures of a bisection."""
    if most <= least:
        return least
    high_cost = cost(most)
    if high_cost <= budget:
        return most
    low, high, low_cost = least, most, None
    step = 0
    while high - low > 1:
        if step % 2 == 0:
            low_cost = cost(low) if low_cost is None else low_cost
            guess = (
                low + int((budget - low_cost) * (high - low) / (high_cost - low_cost))
                if high_cost > low_cost
                else (low + high) // 2
            )
        else:
            guess = (low + high) // 2
        mid = min(max(guess, low + 1), high - 1)
        measured = cost(mid)
        if measured <= budget:
            low, low_cost = mid, measured
        else:
            high, high_cost = mid, measured
        step += 1
    return low


# -- cutting lists ---------------------------------------------------------------------------------------------


def cut_lists(result: BaseModel, fields: list[str], budget: int, note: Callable[[dict[str, int]], None]) -> None:
    """Cut the named list fields of `result` (each keeps a leading part) until it fits `budget`.

    The list that costs most is halved until the whole fits; then the last one halved grows back as far as
    the budget allows. `note(kept)` writes the note for the counts kept, and is measured with them."""
    full = {f: list(getattr(result, f)) for f in fields}
    # No item costs less than a few characters: more than this many can never fit.
    most = budget * CHARS_PER_TOKEN // 4
    keep = {f: min(len(items), most) for f, items in full.items()}

    def cut() -> None:
        for f in fields:
            setattr(result, f, full[f][: keep[f]])
        note(dict(keep))

    def apply() -> bool:
        cut()
        return fits(result, budget)

    last: str | None = None
    before = 0
    while not apply() and any(keep.values()):
        last = max((f for f in fields if keep[f]), key=lambda f: len(json.dumps(getattr(result, f), default=_dump)))
        before = keep[last]
        keep[last] //= 2
    if last is None:
        return
    grown = last

    def cost(count: int) -> int:
        keep[grown] = count
        cut()
        return measure(result)

    # The largest count of the last list halved that still fits, from its halved count up.
    keep[last] = most_that_fit(cost, budget, before - 1, least=keep[last])
    cut()


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else str(value)


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
