"""A broker in a controlled shutdown, read from the metadata's shape (manager.monitor.shutdowns).

Found in a rolling restart under the shipped defaults: the cycle that ran while broker 3 was
stopping cleanly saw it registered, leading nothing and out of all 20 ISRs it belonged to
("broker 3 behind leader 2 on 12, broker 3 behind leader 4 on 8"). It refused with
unexplained_under_replication, and KmedicUnexplainedUnderReplication went pending, for a
routine restart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmedic.metadata import PartitionInfo
from kmedic.partition_table import PartitionTable
from manager.monitor.shutdowns import Shutdowns, shutting_down


def part(p: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...]) -> PartitionInfo:
    return PartitionInfo("t", p, leader, replicas, isr)


def table(*parts: PartitionInfo) -> PartitionTable:
    return PartitionTable.of(list(parts))


LIVE = {1, 2, 3, 4}


def test_the_rolling_restart_s_stopping_broker_has_the_shape() -> None:
    """Broker 3 stopping: its leaderships moved to 2 and 4, itself out of every ISR; broker 2,
    just back and in sync, leads again."""
    stopping = table(
        part(0, 2, (3, 2), (2,)),
        part(1, 4, (4, 3), (4,)),
        part(2, 2, (2, 1), (2, 1)),
        part(3, 1, (1, 4), (1, 4)),
    )
    assert shutting_down(stopping, LIVE) == {3}


def test_a_broker_that_still_leads_lags_for_another_reason() -> None:
    """A slow follower keeps the partitions it leads: out of the other ISRs, not stopping."""
    lagging = table(part(0, 2, (2, 3), (2,)), part(1, 3, (3, 1), (3, 1)))
    assert shutting_down(lagging, LIVE) == frozenset()


def test_a_follower_only_broker_lagging_everywhere_has_the_shape_too() -> None:
    """Why the rule that reads the shape bounds it in time (Broker.shutting_down)."""
    lagging = table(part(0, 2, (2, 1), (2,)), part(1, 3, (3, 1), (3,)))
    assert shutting_down(lagging, LIVE) == {1}


def test_the_last_in_sync_replica_of_a_leaderless_partition_is_still_stopping() -> None:
    """Where it was the only in-sync replica, the controller leaves the partition without a
    leader and the broker in its ISR: that ISR holds no leader, so the shape stands."""
    last = table(part(0, -1, (3, 2), (3,)), part(1, 2, (2, 3), (2,)))
    assert shutting_down(last, LIVE) == {3}


def test_a_broker_in_sync_with_a_leader_is_not_stopping() -> None:
    in_sync = table(part(0, 2, (2, 3), (2, 3)))
    assert shutting_down(in_sync, LIVE) == frozenset()


def test_only_a_live_broker_holding_a_replica_has_the_shape() -> None:
    stopping = table(part(0, 2, (3, 2), (2,)))
    assert shutting_down(stopping, {1, 2}) == frozenset()  # 3 already fenced: dead, not this
    assert shutting_down(stopping, {1, 2, 3, 5}) == {3}  # 5 holds nothing: no shape to read


@given(
    st.lists(
        st.tuples(
            st.integers(-1, 5),
            st.lists(st.integers(1, 5), min_size=1, max_size=3, unique=True),
            st.lists(st.integers(1, 5), max_size=3, unique=True),
        ),
        max_size=12,
    )
)
def test_no_leader_and_no_member_of_a_led_isr_is_ever_shutting_down(
    rows: list[tuple[int, list[int], list[int]]],
) -> None:
    parts = [part(p, leader, tuple(r), tuple(i)) for p, (leader, r, i) in enumerate(rows)]
    found = shutting_down(table(*parts), set(range(1, 6)))
    for p in parts:
        assert p.leader not in found
        if p.leader >= 0:
            assert not found & set(p.isr)
    assert found <= {b for p in parts for b in p.replicas}


def test_a_spell_counts_from_its_first_sight_and_starts_again_after_it() -> None:
    seen = Shutdowns()
    assert seen.saw(frozenset({3}), 1_000) == {3: 1_000}
    assert seen.saw(frozenset({3, 4}), 2_000) == {3: 1_000, 4: 2_000}
    assert seen.saw(frozenset({4}), 3_000) == {4: 2_000}  # 3 fenced (or back in sync)
    assert seen.saw(frozenset({3}), 9_000) == {3: 9_000}  # its next restart: a new spell
