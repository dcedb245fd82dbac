"""The ground floor: deadlines shared by a call's steps, loads in the background, patterns in linear time."""

from __future__ import annotations

import threading
import time

import pytest

from sophrosyne.base import deadline, patterns
from sophrosyne.base.background import Background
from sophrosyne.base.version import __version__
from sophrosyne.errors import CallCancelled, QueryTimeout


def test_a_call_inside_a_call_shares_its_deadline() -> None:
    assert deadline.current() is None and deadline.left() is None
    with deadline.bounded(5.0) as outer:
        with deadline.bounded(60.0) as inner:
            assert inner is outer
        assert 0 < deadline.remaining(100.0) <= 5.0
        assert deadline.remaining(1.0) == 1.0
    assert deadline.current() is None


def test_time_up_and_cancel_raise_where_the_work_checks() -> None:
    with deadline.bounded(0.01) as running:
        time.sleep(0.02)
        assert running.expired and running.stopped
        with pytest.raises(QueryTimeout, match=r"reading ran longer than the 0\.01 s time limit"):
            deadline.check("reading")
    cancelled = deadline.Deadline(60)
    cancelled.cancel()
    with pytest.raises(CallCancelled), deadline.within(cancelled):
        deadline.check()


def test_cancel_interrupts_the_running_statement() -> None:
    interrupted = threading.Event()
    running = deadline.Deadline(60)
    with running.interruptible(interrupted.set):
        running.cancel()
        assert interrupted.wait(5)
    after = threading.Event()
    with running.interruptible(after.set):  # registered after the cancel: interrupted at once
        assert after.is_set()


def test_a_background_load_runs_once_and_a_failed_one_again() -> None:
    calls: list[int] = []
    gate = threading.Event()

    def load() -> int:
        calls.append(1)
        gate.wait(5)
        if len(calls) == 1:
            raise OSError("locked")
        return 42

    work = Background(load, "test-load")
    assert work.wait(0.01) is None and not work.ready  # not ready yet: the caller goes on
    gate.set()
    with pytest.raises(OSError, match="locked"):
        work.wait(5)
    assert work.wait(5) == 42 and work.ready
    assert work.wait(0) == 42 and len(calls) == 2


@pytest.mark.parametrize(
    ("glob", "name", "matches"),
    [
        ("emp*", "employees", True),
        ("emp*", "temp", False),
        ("t?ble", "table", True),
        ("[!a]*", "b_table", True),
        ("[!a]*", "a_table", False),
        ("[", "[", True),
        ("a.b", "axb", False),
    ],
)
def test_globs_match_whole_names(glob: str, name: str, matches: bool) -> None:
    assert bool(patterns.glob(glob).match(name)) is matches


def test_a_backtracking_pattern_runs_in_linear_time_or_is_refused() -> None:
    started = time.monotonic()
    assert patterns.regex("(a+)+$").search("a" * 100_000 + "b") is None
    assert time.monotonic() - started < 2.0  # Python's re would take longer than the age of the universe
    with pytest.raises(patterns.PatternError, match="is not a pattern RE2 can run"):
        patterns.regex(r"(a)\1")


def test_the_version_is_the_packages() -> None:
    import sophrosyne

    assert sophrosyne.__version__ == __version__ and __version__.count(".") == 2
