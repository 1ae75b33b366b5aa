"""The hourly move budget's history: parsed leniently, counted over a one-hour window."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from manager.coordination.move_budget import (
    WINDOW_S,
    from_plan,
    moves_in_window,
    recent,
    to_field,
    with_started,
)

NOW = 1_800_000_000.0


def test_a_plan_without_history_has_none() -> None:
    assert from_plan({}) == []
    assert from_plan({"moves": [], "moves_started": None}) == []


def test_entries_that_are_not_seconds_and_a_count_are_dropped() -> None:
    plan: dict[str, Any] = {
        "moves_started": [
            [NOW, 3],
            [NOW, -1],
            ["yesterday", 2],
            [NOW, 2.5],
            [True, 1],
            [NOW, False],
            [NOW],
            "x",
            [NOW - 10, 4],
        ]
    }
    assert from_plan(plan) == [(NOW, 3), (NOW - 10, 4)]


def test_the_window_is_one_hour_inclusive() -> None:
    history = [(NOW - WINDOW_S - 1, 100), (NOW - WINDOW_S, 5), (NOW - 60, 7), (NOW + 30, 1)]
    assert moves_in_window(history, NOW) == 13  # a future entry (clock step) still counts
    assert recent(history, NOW) == history[1:]


def test_starting_moves_prunes_and_appends() -> None:
    history = [(NOW - 2 * WINDOW_S, 50), (NOW - 100, 2)]
    assert with_started(history, NOW, 4) == [(NOW - 100, 2), (NOW, 4)]


entries = st.lists(
    st.tuples(st.floats(min_value=NOW - 3 * WINDOW_S, max_value=NOW), st.integers(0, 10_000)),
    max_size=30,
)


@given(entries)
def test_stored_history_round_trips_and_counts_like_brute_force(history: list[Any]) -> None:
    stored = from_plan({"moves_started": to_field(history)})
    assert [n for _, n in stored] == [n for _, n in history]
    assert all(abs(a - b) <= 0.001 for (a, _), (b, _) in zip(stored, history, strict=True))
    brute = sum(n for t, n in history if NOW - t <= WINDOW_S)
    # Rounding to milliseconds may move an entry across the boundary by at most 1 ms.
    edge = sum(n for t, n in history if abs(NOW - t - WINDOW_S) <= 0.001)
    assert abs(moves_in_window(stored, NOW) - brute) <= edge


@given(entries, st.integers(0, 500))
def test_the_window_after_starting_moves_counts_them(history: list[Any], count: int) -> None:
    after = with_started(history, NOW, count)
    assert moves_in_window(after, NOW) == moves_in_window(history, NOW) + count
