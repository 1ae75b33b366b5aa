"""The adaptive throttle's rate (pure): never below the floor, never above capacity, no change
below the threshold, and less room for kmedic the more the broker carries for others."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from manager.model.adaptive_throttle import Headroom, headroom_rate, worth_changing

MB = 1_000_000
RULE = Headroom()
rates = st.floats(0, 2_000 * MB, allow_nan=False)
capacities = st.floats(1 * MB, 2_000 * MB, allow_nan=False)


def test_kafka_kits_rule_on_a_busy_broker() -> None:
    # 125 MB/s link, 80 MB/s measured of which 30 MB/s are kmedic's copies: 50 MB/s are the
    # clients', so kmedic may use 90 % of the other 75 MB/s.
    assert headroom_rate(125 * MB, 80 * MB, 30 * MB, RULE, urgent=False) == 67_500_000
    # Over capacity by 10 MB/s (clients alone): what is left is under the floor, so the floor.
    assert headroom_rate(125 * MB, 135 * MB, 0, RULE, urgent=False) == 10 * MB
    # Writes already failing: no less than the higher floor.
    assert headroom_rate(125 * MB, 135 * MB, 0, RULE, urgent=True) == 50 * MB
    # No figure for the broker: the floor, until it is measured again.
    assert headroom_rate(125 * MB, None, 30 * MB, RULE, urgent=False) == 10 * MB
    # A link slower than the floor: the floor yields to it.
    assert headroom_rate(5 * MB, 0, None, RULE, urgent=True) == 5 * MB


@given(capacities, st.none() | rates, st.none() | rates, st.booleans())
def test_the_rate_stays_between_the_floor_and_the_capacity(
    capacity: float, used: float | None, previous: float | None, urgent: bool
) -> None:
    rate = headroom_rate(capacity, used, previous, RULE, urgent=urgent)
    floor = RULE.urgent_floor_bytes_per_s if urgent else RULE.floor_bytes_per_s
    assert min(floor, int(capacity)) <= rate <= capacity


@given(capacities, rates, rates, rates)
def test_more_traffic_for_others_never_leaves_kmedic_more_room(
    capacity: float, used: float, more: float, previous: float
) -> None:
    less = headroom_rate(capacity, used, previous, RULE, urgent=False)
    busier = headroom_rate(capacity, used + more, previous, RULE, urgent=False)
    assert busier <= less


@given(st.integers(1, 10**10), st.floats(0, 1, allow_nan=False))
def test_no_change_below_the_threshold(current: int, threshold: float) -> None:
    within = current + int(threshold * current * 0.99)
    assert not worth_changing(current, within, threshold)
    assert worth_changing(current, int(current * (1 + threshold)) + 2, threshold)
    assert worth_changing(None, current, threshold)


@pytest.mark.parametrize(
    ("current", "proposed", "changes"),
    [(100, 110, False), (100, 111, True), (100, 89, True), (100, 90, False)],
)
def test_the_threshold_is_a_fraction_of_the_rate_set(
    current: int, proposed: int, changes: bool
) -> None:
    assert worth_changing(current, proposed, 0.1) is changes
