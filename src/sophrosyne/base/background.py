"""Work done once in the background (a schema, an index), which calls wait for within their deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """One load of `T` in a thread of its own, started on first need; a failed load starts again when next
    needed (a file locked at start-up is read once it is free)."""

    def __init__(self, load: Callable[[], T], name: str) -> None:
        self._load = load
        self.name = name
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self._started: float | None = None

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self._error is None

    @property
    def running_s(self) -> float:
        """Seconds since the load started (0 before)."""
        return 0.0 if self._started is None else time.monotonic() - self._started

    def start(self) -> None:
        with self._lock:
            if self._started is not None and not (self._done.is_set() and self._error is not None):
                return
            self._done.clear()
            self._error = None
            self._started = time.monotonic()
        threading.Thread(target=self._run, name=self.name, daemon=True).start()

    def _run(self) -> None:
        try:
            self._value = self._load()
        except BaseException as exc:  # kept for the callers waiting on it
            self._error = exc
        finally:
            self._done.set()

    def wait(self, seconds: float | None) -> T | None:
        """The value, waiting at most `seconds` (None: until it is there; the load starts if needed); None if
        not ready by then. The load's own error is raised here, and the next call starts the load again."""
        self.start()
        if not self._done.wait(None if seconds is None else max(0.0, seconds)):
            return None
        if self._error is not None:
            raise self._error
        return self._value
