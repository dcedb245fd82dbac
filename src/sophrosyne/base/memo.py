"""What is derived from an object once, kept by that object's identity: catalogs and lexicons are not hashable and
do not change once made, and a warehouse's thousands of tables make deriving again per question cost milliseconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

Owner = TypeVar("Owner")
V = TypeVar("V")


class PerObject(Generic[Owner, V]):
    """A one-argument function whose result is kept per argument object (by identity, with the object held so
    that its id is not reused while kept); at most `limit` objects, all forgotten at once when the limit is
    reached. `keep` gives it a result found elsewhere (a cache on disk)."""

    def __init__(self, derive: Callable[[Owner], V], limit: int) -> None:
        self._derive = derive
        self._limit = limit
        self._kept: dict[int, tuple[Owner, V]] = {}
        self.__doc__ = derive.__doc__
        self.__name__ = derive.__name__

    def __call__(self, owner: Owner) -> V:
        known = self._kept.get(id(owner))
        if known is not None and known[0] is owner:
            return known[1]
        value = self._derive(owner)
        self.keep(owner, value)
        return value

    def kept(self, owner: Owner) -> V | None:
        """The result held for `owner`, if any (nothing is derived)."""
        known = self._kept.get(id(owner))
        return known[1] if known is not None and known[0] is owner else None

    def keep(self, owner: Owner, value: V) -> None:
        """Hold `value` as the result for `owner`."""
        if len(self._kept) >= self._limit:
            self._kept.clear()
        self._kept[id(owner)] = (owner, value)


def per_object(limit: int) -> Callable[[Callable[[Owner], V]], PerObject[Owner, V]]:
    """Keep a one-argument function's result per argument object (see PerObject)."""

    def decorate(derive: Callable[[Owner], V]) -> PerObject[Owner, V]:
        return PerObject(derive, limit)

    return decorate
