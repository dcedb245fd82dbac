"""What a long call has done so far, said by its work in any thread and read by whoever tells its client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Progress:
    """The latest word of a call's work (`message`), None until it says any."""

    message: str | None = None


_current: ContextVar[Progress | None] = ContextVar("sophrosyne_progress", default=None)


@contextmanager
def tracking() -> Iterator[Progress]:
    """Follow the work of the block: the threads it starts take the same Progress (contexts are copied)."""
    progress = Progress()
    token = _current.set(progress)
    try:
        yield progress
    finally:
        _current.reset(token)


def report(message: str) -> None:
    """Say how far the current call is; nothing when no one follows it."""
    progress = _current.get()
    if progress is not None:
        progress.message = message
