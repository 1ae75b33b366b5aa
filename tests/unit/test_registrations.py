"""Brokers fenced and back between two cycles (manager.monitor.registrations): the watch's rule
for a return, and how a cycle turns one into the start of a recovery window."""

from __future__ import annotations

from kmedic.metadata import BrokerNode
from manager.monitor.registrations import Returns
from manager.monitor.sources import ClusterSources

NOW = 1_800_000_000_000


def test_a_broker_away_for_a_read_and_back_is_a_return() -> None:
    watch = Returns()
    watch.saw(frozenset({1, 2, 3}), NOW)
    watch.saw(frozenset({1, 3}), NOW + 1000)
    assert watch.take() == ({}, {2: NOW + 1000})
    watch.saw(frozenset({1, 3}), NOW + 2000)
    watch.saw(frozenset({1, 2, 3}), NOW + 3000)
    assert watch.take() == ({2: NOW + 3000}, {})
    assert watch.take() == ({}, {}), "a return is taken once"


def test_the_first_read_and_a_broker_never_away_are_no_return() -> None:
    watch = Returns()
    watch.saw(frozenset({1, 2}), NOW)  # nothing to compare with: no one was away
    watch.saw(frozenset({1, 2, 3}), NOW + 1000)  # a new broker joins: not a return
    assert watch.take() == ({}, {})


def test_each_broker_keeps_its_latest_return() -> None:
    watch = Returns()
    for at, registered in enumerate([{1, 2}, {1}, {1, 2}, {1}, {1, 2}]):
        watch.saw(frozenset(registered), NOW + at * 1000)
    assert watch.take() == ({2: NOW + 4000}, {})


def sources() -> ClusterSources:
    return ClusterSources(
        cluster="c", bootstrap="127.0.0.1:1", stats_topic="s", loads_topic="l", stats_lookback_s=60
    )


def live(*ids: int) -> dict[int, BrokerNode]:
    return {b: BrokerNode("h", 9092, "/r1", False) for b in ids}


def test_a_return_no_cycle_saw_coming_starts_the_recovery_window() -> None:
    s = sources()
    s._remember(NOW, live(1, 2, 3), {}, {1, 2, 3})
    # Broker 2 was fenced and back between this cycle and the last: no cycle saw it away.
    s._remember(NOW + 9000, live(1, 2, 3), {}, {1, 2, 3}, {2: NOW + 7000})
    assert s.returned_ms == {2: NOW + 7000} and s.first_absent_ms == {}


def test_a_return_of_a_broker_still_down_or_seen_away_changes_nothing_else() -> None:
    s = sources()
    s._remember(NOW, live(1, 3), {}, {1, 2, 3})  # the cycle saw broker 2 away
    s._remember(NOW + 5000, live(1, 2, 3), {}, {1, 2, 3}, {2: NOW + 4000})
    assert s.returned_ms == {2: NOW + 5000}, "the cycle's own return, as before"
    s._remember(NOW + 9000, live(1, 2), {}, {1, 2, 3}, {3: NOW + 8000})
    assert 3 not in s.returned_ms and s.first_absent_ms == {3: NOW + 9000}


def test_a_broker_the_watch_last_saw_away_and_this_read_sees_back_has_returned() -> None:
    s = sources()
    s._remember(NOW, live(1, 2, 3), {}, {1, 2, 3})
    s._remember(NOW + 3000, live(1, 2, 3), {}, {1, 2, 3}, {}, {2: NOW + 1000})
    assert s.returned_ms == {2: NOW + 3000}


def test_a_dead_brokers_absence_counts_from_the_watchs_first_miss() -> None:
    """The grace of a broker that died between two cycles starts when the watch first missed
    it (within a second of its fencing), not at the next cycle up to a cycle later."""
    s = sources()
    s._remember(NOW, live(1, 2, 3), {}, {1, 2, 3})
    s._remember(NOW + 3000, live(1, 3), {}, {1, 2, 3}, {}, {2: NOW + 800})
    assert s.first_absent_ms == {2: NOW + 800}
    s._remember(NOW + 6000, live(1, 3), {}, {1, 2, 3}, {}, {2: NOW + 800})
    assert s.first_absent_ms == {2: NOW + 800}, "still absent: the same start"


def test_a_watch_time_later_than_the_cycles_read_is_not_taken() -> None:
    s = sources()
    s._remember(NOW, live(1, 3), {}, {1, 2, 3}, {}, {2: NOW + 500})
    assert s.first_absent_ms == {2: NOW}


def test_a_read_says_whether_a_broker_left_or_came_back() -> None:
    watch = Returns()
    assert not watch.saw(frozenset({1, 2, 3}), NOW), "the first read compares with nothing"
    assert not watch.saw(frozenset({1, 2, 3}), NOW + 1000)
    assert watch.saw(frozenset({1, 3}), NOW + 2000)
    assert not watch.saw(frozenset({1, 3}), NOW + 3000)
    assert watch.saw(frozenset({1, 2, 3}), NOW + 4000)
