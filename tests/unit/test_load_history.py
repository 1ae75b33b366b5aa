"""The status page's load history: one point per step per broker, the last span only, brokers
that left dropped, time order kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from manager.model.decision import BrokerLoad
from manager.web.load_history import LoadHistory

T0 = 1_700_000_000_000 - 1_700_000_000_000 % 60_000  # a step boundary


def load(util: float) -> BrokerLoad:
    return BrokerLoad(0.0, 0.0, 0.0, 0.0, 0, 0, util)


def test_a_step_keeps_the_newest_figure() -> None:
    history = LoadHistory(span_s=600, step_s=60)
    history.record(T0 + 1_000, {1: load(0.1)})
    history.record(T0 + 4_000, {1: load(0.2)})
    history.record(T0 + 61_000, {1: load(0.3)})
    assert history.series() == {1: [(T0, 0.2), (T0 + 60_000, 0.3)]}


def test_points_older_than_the_span_are_dropped() -> None:
    history = LoadHistory(span_s=180, step_s=60)
    for i in range(6):
        history.record(T0 + i * 60_000, {1: load(i / 10)})
    assert history.series() == {1: [(T0 + i * 60_000, i / 10) for i in (3, 4, 5)]}


def test_a_broker_gone_from_the_cluster_is_dropped_and_a_new_one_starts_empty() -> None:
    history = LoadHistory(span_s=600, step_s=60)
    history.record(T0, {1: load(0.1), 2: load(0.2)})
    history.record(T0 + 60_000, {1: load(0.1), 3: load(0.3)})
    assert history.series() == {1: [(T0, 0.1), (T0 + 60_000, 0.1)], 3: [(T0 + 60_000, 0.3)]}


def test_a_clock_step_backwards_adds_nothing() -> None:
    history = LoadHistory(span_s=600, step_s=60)
    history.record(T0 + 120_000, {1: load(0.5)})
    history.record(T0, {1: load(0.9)})
    assert history.series() == {1: [(T0 + 120_000, 0.5)]}


def test_a_bad_shape_is_refused_with_its_numbers() -> None:
    with pytest.raises(ValueError, match="0 < step_s <= span_s, got 60, 30"):
        LoadHistory(span_s=30, step_s=60)


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3_600_000),
            st.dictionaries(st.integers(1, 4), st.floats(0, 2), min_size=1, max_size=4),
        ),
        max_size=60,
    )
)
def test_bounded_and_in_time_order_whatever_is_recorded(
    records: list[tuple[int, dict[int, float]]],
) -> None:
    history = LoadHistory(span_s=300, step_s=60)
    for at, utils in records:
        history.record(T0 + at, {b: load(u) for b, u in utils.items()})
    series = history.series()
    if records:
        assert set(series) == set(records[-1][1])
    for points in series.values():
        times = [t for t, _ in points]
        assert times == sorted(set(times)) and len(times) <= 5
        assert all(t % 60_000 == 0 for t in times)
        assert times[-1] - times[0] < 300_000
