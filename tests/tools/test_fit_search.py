"""The search for the most entries that fit a budget: the same count as trying each, in few measures."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from sophrosyne.tools.budget import most_that_fit


@given(
    st.lists(st.integers(0, 400), min_size=0, max_size=700),
    st.integers(0, 3000),
    st.integers(0, 20_000),
)
def test_the_most_that_fit_is_what_trying_each_count_finds(steps: list[int], base: int, budget: int) -> None:
    # Any cost that grows with the count (entries of any sizes, a fixed part before them).
    costs = [base]
    for step in steps:
        costs.append(costs[-1] + step)
    measured: list[int] = []

    def cost(count: int) -> int:
        measured.append(count)
        return costs[count]

    most = len(costs) - 1
    expected = max((n for n in range(most + 1) if costs[n] <= budget), default=0)
    assert most_that_fit(cost, budget, most) == expected
    # Never more than twice a bisection's measures, plus the two ends.
    assert len(measured) <= 2 * math.ceil(math.log2(most + 1)) + 2


def test_entries_of_about_one_size_take_a_few_measures() -> None:
    measured: list[int] = []

    def cost(count: int) -> int:
        measured.append(count)
        return 300 + 31 * count + (count % 3)

    assert most_that_fit(cost, 4000, 666) == 119
    assert len(measured) <= 5
