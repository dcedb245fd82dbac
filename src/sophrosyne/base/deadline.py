"""Deadlines of tool calls: one time limit per call, seen by every statement and step it runs, and cancellation."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from sophrosyne.errors import CallCancelled, QueryTimeout

R = TypeVar("R")
P = ParamSpec("P")


class Deadline:
    """When a call must be done by, and whether its caller went away.

    `cancel()` may come from any thread (the server's, when the client cancels or disconnects): it runs
    the interrupts that the running statements registered, so the engine stops too, not only our code.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self._cancelled = threading.Event()
        self._interrupts: dict[int, Callable[[], None]] = {}
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.at

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def stopped(self) -> bool:
        """Cancelled or past its time: the work should end now."""
        return self._cancelled.is_set() or time.monotonic() >= self.at

    def check(self, doing: str = "the call") -> None:
        """Raise when the work should stop: CallCancelled if the caller left, QueryTimeout if time is up."""
        if self._cancelled.is_set():
            raise CallCancelled("the call was cancelled by its client.")
        if time.monotonic() >= self.at:
            raise QueryTimeout(
                f"{doing} ran longer than the {self.seconds:g} s time limit and was stopped.",
                hint="Narrow the request (a shorter question, a table or a pattern), or ask again.",
            )

    def cancel(self) -> None:
        """Stop the work: later checks raise, and running statements are interrupted (in a thread of their
        own, as a server's cancel request is a network round trip and the caller may be an event loop)."""
        self._cancelled.set()
        with self._lock:
            interrupts = list(self._interrupts.values())
        if interrupts:
            threading.Thread(target=_run_all, args=(interrupts,), name="sophrosyne-cancel", daemon=True).start()

    @contextmanager
    def interruptible(self, interrupt: Callable[[], None]) -> Iterator[None]:
        """While the block runs (one statement), cancelling this deadline calls `interrupt`."""
        key = id(interrupt)
        with self._lock:
            self._interrupts[key] = interrupt
        try:
            if self._cancelled.is_set():
                interrupt()
            yield
        finally:
            with self._lock:
                self._interrupts.pop(key, None)


def _run_all(interrupts: list[Callable[[], None]]) -> None:
    for interrupt in interrupts:
        with suppress(Exception):  # a connection already gone has nothing left to stop
            interrupt()


_current: ContextVar[Deadline | None] = ContextVar("sophrosyne_deadline", default=None)


def current() -> Deadline | None:
    return _current.get()


@contextmanager
def within(deadline: Deadline) -> Iterator[Deadline]:
    """Run the block under `deadline` (a worker thread takes over the deadline of the call it serves)."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


@contextmanager
def bounded(seconds: float) -> Iterator[Deadline]:
    """A deadline `seconds` from now for the block, unless one is running: a call inside a call shares it."""
    running = _current.get()
    if running is not None:
        yield running
        return
    with within(Deadline(seconds)) as deadline:
        yield deadline


def remaining(default: float) -> float:
    """The time the current call has left, at most `default` (all of `default` outside a call)."""
    running = _current.get()
    return default if running is None else min(default, running.remaining())


def left(margin: float = 0.0) -> float | None:
    """The time the current call has left less `margin`; None outside a call (wait as long as it takes)."""
    running = _current.get()
    return None if running is None else max(0.0, running.remaining() - margin)


def check(doing: str = "the call") -> None:
    """Stop here if the current call was cancelled or ran out of time."""
    running = _current.get()
    if running is not None:
        running.check(doing)


class _HasTimeout(Protocol):
    @property
    def timeout_s(self) -> float: ...


class _HasLimits(Protocol):
    @property
    def limits(self) -> _HasTimeout: ...


class _HasSettings(Protocol):
    @property
    def settings(self) -> _HasLimits: ...


S = TypeVar("S", bound=_HasSettings)


def bounded_call(
    method: Callable[Concatenate[S, P], R], seconds: Callable[[Any], float] | None = None
) -> Callable[Concatenate[S, P], R]:
    """A tool method of an object with `settings.limits.timeout_s`: the whole call, every step in it, has that
    long, or `seconds(settings)` (an export's export_timeout_s)."""
    import functools

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with bounded(self.settings.limits.timeout_s if seconds is None else seconds(self.settings)):
            return method(self, *args, **kwargs)

    return call


def run_side(work: Callable[[], R], wait_s: float | None, *, name: str) -> tuple[bool, R | None]:
    """Run `work` in a helper thread under the current deadline; wait at most `wait_s` (None: no limit).

    Returns (done, value). Work that is not done goes on, and stops at its own next check once the call
    ends (the deadline is cancelled by whoever gave up on it). Errors of the work are raised here.
    """
    running = _current.get()
    box: dict[str, object] = {}
    done = threading.Event()

    def target() -> None:
        try:
            if running is not None:
                with within(running):
                    box["value"] = work()
            else:
                box["value"] = work()
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=name, daemon=True).start()
    if not done.wait(None if wait_s is None else max(0.0, wait_s)):
        return False, None
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return True, box.get("value")  # type: ignore[return-value]
