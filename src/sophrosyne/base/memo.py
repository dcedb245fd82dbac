"""What is derived from an object once, kept by that object's identity: catalogs and lexicons are not hashable and
do not change once made, and a warehouse's thousands of tables make deriving again per question cost milliseconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

Owner = TypeVar("Owner")
V = TypeVar("V")


def per_object(limit: int) -> Callable[[Callable[[Owner], V]], Callable[[Owner], V]]:
    """Keep a one-argument function's result per argument object (by identity, with the object held so that
    its id is not reused while kept); at most `limit` objects, all forgotten at once when the limit is reached."""

    def decorate(derive: Callable[[Owner], V]) -> Callable[[Owner], V]:
        kept: dict[int, tuple[Owner, V]] = {}

        def get(owner: Owner) -> V:
            known = kept.get(id(owner))
            if known is not None and known[0] is owner:
                return known[1]
            value = derive(owner)
            if len(kept) >= limit:
                kept.clear()
            kept[id(owner)] = (owner, value)
            return value

        get.__doc__ = derive.__doc__
        get.__name__ = derive.__name__
        return get

    return decorate
