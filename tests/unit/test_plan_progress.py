"""A running plan's figures (pure): bytes copied of the total, the copy rate and the time left."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmedic.errors import KmedicError
from manager.model.plan_progress import (
    CopyRate,
    MoveFigures,
    PlanProgress,
    measure,
    move_bytes,
)

GB = 1_000_000_000

statuses = st.sampled_from(["pending", "in_flight", "completed", "failed", "cancelled"])
moves = st.builds(
    MoveFigures,
    size_bytes=st.integers(0, 10 * GB),
    adding=st.integers(1, 3),
    status=statuses,
    copied=st.none() | st.dictionaries(st.integers(1, 6), st.integers(0, 20 * GB), max_size=3),
)


def test_a_move_counts_its_new_replicas_capped_at_the_partitions_size() -> None:
    running = MoveFigures(100, 2, "in_flight", {4: 30, 5: 250})  # the log grew meanwhile
    assert move_bytes(running) == (130, 200)
    assert move_bytes(MoveFigures(100, 2, "completed", {4: 1})) == (200, 200)
    assert move_bytes(MoveFigures(100, 1, "pending")) == (0, 100)
    assert move_bytes(MoveFigures(100, 1, "cancelled", {4: 60})) == (0, 0)


def test_a_plan_says_what_is_copied_of_what_how_fast_and_how_long_is_left() -> None:
    plan = measure(
        [
            MoveFigures(2 * GB, 1, "completed"),
            MoveFigures(2 * GB, 1, "in_flight", {3: GB // 2}),
            MoveFigures(GB, 1, "pending"),
            MoveFigures(GB, 1, "failed", {6: 10}),
        ],
        rate_bytes_per_s=50_000_000,
    )
    assert (plan.copied_bytes, plan.total_bytes) == (2.5 * GB, 5 * GB)
    assert (plan.moves_done, plan.moves_total, plan.moves_failed) == (1, 3, 1)
    assert plan.eta_s == pytest.approx(50.0)
    assert plan.sentence() == (
        "2.5 GB of 5.0 GB copied (50%), 1 of 3 moves done, 1 failed, 50.0 MB/s, about 50 s left"
    )


def test_no_eta_without_a_rate_and_none_needed_when_all_is_copied() -> None:
    running = measure([MoveFigures(GB, 1, "in_flight", {2: 1})])
    assert running.eta_s is None and running.sentence().endswith("no ETA")
    assert measure([MoveFigures(GB, 1, "completed")]).eta_s == 0.0
    assert measure([MoveFigures(GB, 1, "in_flight", {2: 1})], 0.0).eta_s is None


@given(st.lists(moves, max_size=20), st.none() | st.floats(0, 1e10))
def test_figures_are_consistent_whatever_the_moves(
    figures: list[MoveFigures], rate: float | None
) -> None:
    plan = measure(figures, rate)
    assert 0 <= plan.copied_bytes <= plan.total_bytes
    assert 0 <= plan.moves_done <= plan.moves_total
    assert plan.moves_total + plan.moves_failed == len(figures)
    assert 0.0 <= plan.fraction <= 1.0
    if plan.eta_s is not None:
        assert plan.eta_s >= 0
        if rate:
            assert plan.eta_s == pytest.approx((plan.total_bytes - plan.copied_bytes) / rate)
    assert PlanProgress.from_field(plan.to_field()) == plan


def test_the_rate_is_the_growth_over_the_last_window() -> None:
    rate = CopyRate(window_s=30)
    assert rate.rate() is None
    rate.add(0, 0)
    assert rate.rate() is None  # one sample says nothing of a rate
    rate.add(10, 100)
    assert rate.rate() == 10
    for t in range(20, 100, 10):
        rate.add(t, 100 + (t - 10) * 50)  # 50 B/s from t=10 on
    assert rate.rate() == pytest.approx(50)
    rate.add(100, 100)  # a cancelled move's bytes left the figure: never a negative rate
    assert rate.rate() == 0


def test_the_rate_is_unknown_until_the_samples_span_two_of_the_watchdogs() -> None:
    """The bytes move only at the watchdog's samples (every 5 s): a look 2 s into a plan saw
    none move and said '0 B/s' of a copy running at 1 MB/s (found on the real cluster)."""
    rate = CopyRate(window_s=30, min_span_s=10)
    rate.add(0, 0)
    rate.add(4, 0)
    assert rate.rate() is None
    rate.add(10, 5_000_000)
    assert rate.rate() == 500_000


def test_an_ended_plan_says_what_it_copied_in_how_long() -> None:
    plan = measure([MoveFigures(GB, 1, "completed"), MoveFigures(GB, 1, "failed")])
    assert plan.done_sentence(20) == "in 20 s: 1 of 1 moves done, 1 failed, 1.0 GB"
    leaderships = measure([MoveFigures(0, 1, "completed")] * 7)
    assert leaderships.done_sentence(0.4) == "in 0 s: 7 of 7 moves done, 0 B"


@given(st.lists(st.tuples(st.floats(0, 5), st.integers(0, 10**6)), min_size=2, max_size=50))
def test_the_rate_is_never_negative_whatever_the_samples(
    steps: list[tuple[float, int]],
) -> None:
    rate, now = CopyRate(window_s=30), 0.0
    for dt, copied in steps:
        now += dt
        rate.add(now, copied)
        found = rate.rate()
        assert found is None or (found >= 0 and not math.isnan(found))


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "12",
        {"copied_bytes": 1},
        {"copied_bytes": "x", "total_bytes": 2, "moves_done": 0, "moves_total": 1},
        {"copied_bytes": 3, "total_bytes": 2, "moves_done": 0, "moves_total": 1},
        {"copied_bytes": -1, "total_bytes": 2, "moves_done": 0, "moves_total": 1},
    ],
)
def test_a_malformed_stored_figure_is_an_error_that_shows_it(raw: object) -> None:
    with pytest.raises(KmedicError, match="stored plan progress"):
        PlanProgress.from_field(raw)
