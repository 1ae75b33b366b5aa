"""The heal-time estimate (pure): the grace period, then the longest of the copy's bounds
(the cluster's and each broker's concurrency, a fixed throttle, the largest move) and a fixed
cost per round of moves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from planner_fixtures import MB, broker, make, part

from manager.analyzer.heal_time import Pace, copy_seconds, heal_seconds
from manager.model.decision import ElectPreferredLeader
from manager.model.moves import Move
from manager.model.snapshot import Snapshot

RATE = 10 * MB  # per move


def pace(**kw: object) -> Pace:
    args: dict[str, object] = {"move_overhead_s": 0.0, **kw}
    return Pace(RATE, rate_measured=True, **args)  # type: ignore[arg-type]


def cluster(sizes: list[int], brokers: int = 40) -> Snapshot:
    """Broker 1 dead; partition n on [1, 2n+2, 2n+3] (disjoint survivors), ``sizes[n]`` bytes."""
    bs = [broker(b, alive=b != 1) for b in range(1, brokers + 1)]
    parts = [
        part(n, [1, 2 * n + 2, 2 * n + 3], size=size, alive=set(range(2, brokers + 1)))
        for n, size in enumerate(sizes)
    ]
    return make(bs, {"t": parts}, policy={"dead_grace_ms": 60_000})


def heal(n: int, to: int) -> Move:
    """Partition n's replica on the dead broker 1 replaced by ``to``."""
    return Move("t", n, (to, 2 * n + 2, 2 * n + 3), before=(1, 2 * n + 2, 2 * n + 3))


def test_nothing_to_copy_takes_the_grace_period() -> None:
    snap = cluster([100 * MB])
    assert copy_seconds(snap, [], pace()) == 0.0
    assert heal_seconds(snap, [], pace()) == 60.0
    # A leader election or a reorder copies nothing.
    actions = [ElectPreferredLeader("t", 0, 2), Move("t", 0, (2, 3, 1), before=(1, 2, 3))]
    assert copy_seconds(snap, actions, pace()) == 0.0


def test_the_cluster_limit_bounds_many_disjoint_moves() -> None:
    # 16 moves of 100 MB, each to a broker of its own: 1600 MB over 8 at once at 10 MB/s.
    snap = cluster([100 * MB] * 16, brokers=60)
    actions = [heal(n, 40 + n) for n in range(16)]
    assert copy_seconds(snap, actions, pace(max_moves_in_flight=8)) == pytest.approx(20.0)
    # The overhead is per round: two rounds of eight.
    with_cost = pace(max_moves_in_flight=8, move_overhead_s=3.0)
    assert copy_seconds(snap, actions, with_cost) == pytest.approx(26.0)


def test_one_destination_is_bounded_by_its_own_limit() -> None:
    # Four 100 MB moves all to broker 39, two at once: 400 MB / (2 x 10 MB/s).
    snap = cluster([100 * MB] * 4)
    actions = [heal(n, 39) for n in range(4)]
    assert copy_seconds(snap, actions, pace(max_moves_per_broker=2)) == pytest.approx(20.0)
    assert copy_seconds(snap, actions, pace(max_moves_per_broker=4)) == pytest.approx(10.0)


def test_the_adaptive_throttles_copies_into_one_broker_bound_it_too() -> None:
    # Four 100 MB moves all to broker 39: at most five moves per broker, but two copies into
    # one broker at once (the adaptive throttle's moves_into_broker): 400 MB / (2 x 10 MB/s),
    # in two rounds.
    snap = cluster([100 * MB] * 4)
    actions = [heal(n, 39) for n in range(4)]
    assert copy_seconds(snap, actions, pace(max_moves_per_broker=5)) == pytest.approx(10.0)
    into = pace(max_moves_per_broker=5, max_moves_into_broker=2, move_overhead_s=1.0)
    assert copy_seconds(snap, actions, into) == pytest.approx(20.0 + 2 * 1.0)
    # Spread over four destinations, the limit takes nothing.
    spread = [heal(n, 36 + n) for n in range(4)]
    assert copy_seconds(snap, spread, pace(max_moves_into_broker=1)) == pytest.approx(10.0)


def test_a_fixed_throttle_bounds_what_one_broker_receives() -> None:
    # 1 GB into broker 39 at 5 MB/s takes 200 s, whatever the moves' own rate.
    snap = cluster([250 * MB] * 4)
    actions = [heal(n, 39) for n in range(4)]
    throttled = pace(max_moves_per_broker=4, throttle_bytes_per_s=5 * MB)
    assert copy_seconds(snap, actions, throttled) == pytest.approx(200.0)


def test_the_largest_move_alone() -> None:
    snap = cluster([1000 * MB, 1 * MB])
    actions = [heal(0, 38), heal(1, 39)]
    assert copy_seconds(snap, actions, pace()) == pytest.approx(100.0)


def test_the_pace_says_where_its_rate_came_from() -> None:
    assert Pace(20 * MB, rate_measured=False).sentence() == "20.0 MB/s per move (assumed)"
    assert Pace(7.5 * MB, rate_measured=True).sentence() == "7.5 MB/s per move (measured)"


sizes = st.lists(st.integers(0, 10_000 * MB), min_size=1, max_size=12)


@given(sizes, st.integers(1, 5), st.integers(1, 12), st.data())
def test_more_bytes_or_a_slower_rate_never_make_it_sooner(
    sizes: list[int], per_broker: int, in_flight: int, data: st.DataObject
) -> None:
    dests = data.draw(st.lists(st.integers(30, 33), min_size=len(sizes), max_size=len(sizes)))
    actions = [heal(n, d) for n, d in enumerate(dests)]
    p = pace(max_moves_per_broker=per_broker, max_moves_in_flight=in_flight, move_overhead_s=2.0)
    base = copy_seconds(cluster(sizes), actions, p)
    assert base >= max(sizes) / RATE
    assert base >= sum(sizes) / (min(in_flight, len(sizes)) * RATE)
    bigger = copy_seconds(cluster([s + MB for s in sizes]), actions, p)
    halved = Pace(RATE / 2, True, per_broker, in_flight, move_overhead_s=2.0)
    slower = copy_seconds(cluster(sizes), actions, halved)
    assert bigger >= base and slower >= base
