"""When a move's new replicas are about to join the ISR (manager.model.isr_join), without I/O."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from manager.model.isr_join import Behind, behind, joins_within


def test_the_distance_is_the_furthest_new_replicas_and_unknown_without_every_figure() -> None:
    assert behind(1_000, {4: 900, 5: 400}, 3.0) == Behind(600, 3.0)
    assert behind(1_000, {4: 1_200}, 3.0) == Behind(-200, 3.0)  # a leader sampled first
    assert behind(None, {4: 900}, 3.0) is None
    assert behind(1_000, {4: 900, 5: None}, 3.0) is None
    assert behind(1_000, {}, 3.0) is None


def test_a_replica_closing_in_joins_once_the_rest_takes_under_the_horizon() -> None:
    # 500 bytes closer a second, 3,000 left: 6 s to go.
    assert not joins_within(Behind(4_000, 0.0), Behind(3_000, 2.0), 5.0)
    assert joins_within(Behind(4_000, 0.0), Behind(3_000, 2.0), 6.0)
    assert not joins_within(Behind(3_000, 0.0), Behind(3_000, 2.0), 1e6)  # not closing in
    assert joins_within(Behind(3_000, 0.0), Behind(0, 2.0), 0.0)  # caught up


distances = st.integers(min_value=-(10**9), max_value=10**9)
times = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(distances, times, distances, st.floats(min_value=0.001, max_value=1e3), times)
def test_joining_is_foreseen_only_for_a_replica_that_closes_in_fast_enough(
    before: int, at: float, now: int, gap: float, horizon: float
) -> None:
    said = joins_within(Behind(before, at), Behind(now, at + gap), horizon)
    if now <= 0:
        assert said  # it lacks nothing
    elif before <= now:
        assert not said  # the leader was written faster than the copy
    else:
        assert said == (now <= (before - now) / gap * horizon)


@given(distances, times, distances, st.floats(min_value=0.001, max_value=1e3), times, times)
def test_a_longer_horizon_never_unsays_a_join(
    before: int, at: float, now: int, gap: float, horizon: float, more: float
) -> None:
    if joins_within(Behind(before, at), Behind(now, at + gap), horizon):
        assert joins_within(Behind(before, at), Behind(now, at + gap), horizon + more)


@given(distances, times)
def test_one_sample_foresees_nothing_unless_nothing_is_left(now: int, at: float) -> None:
    assert joins_within(None, Behind(now, at), 10.0) == (now <= 0)
    assert joins_within(Behind(now + 1, at), Behind(now, at), 10.0) == (now <= 0)  # no time
