"""Offline replicas on a live broker count as a failed log directory only when two reads in a
row say so (manager.monitor.offline). cc25 found why: broker 4, SIGKILLed, was still unfenced
in DescribeCluster while the next Metadata answer already listed its replicas offline, and the
manager healed "failed log directories on broker 4" at once, without the grace period."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmedic.metadata import PartitionInfo
from manager.monitor.offline import confirm_offline


def part(p: int, replicas: tuple[int, ...], offline: tuple[int, ...] = ()) -> PartitionInfo:
    isr = tuple(r for r in replicas if r not in offline)
    return PartitionInfo("t", p, isr[0] if isr else -1, replicas, isr, offline)


def offline_of(partitions: list[PartitionInfo]) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.offline for p in partitions if p.offline}


def test_a_broker_fenced_between_the_two_requests_is_never_a_failed_directory() -> None:
    # Read 1: DescribeCluster still lists broker 4; Metadata already has its replicas offline.
    first, seen = confirm_offline(
        [part(0, (4, 1), offline=(4,)), part(1, (1, 4), offline=(4,)), part(2, (1, 2))],
        {1, 2, 3, 4},
        {},
    )
    assert offline_of(first) == {}
    # Read 2: broker 4 is gone from the cluster; its offline replicas are a dead broker's.
    second, seen = confirm_offline(
        [part(0, (4, 1), offline=(4,)), part(1, (1, 4), offline=(4,)), part(2, (1, 2))],
        {1, 2, 3},
        seen,
    )
    assert offline_of(second) == {0: (4,), 1: (4,)}
    assert seen == {}


def test_a_failed_directory_counts_from_the_second_read_on() -> None:
    partitions = [part(0, (2, 1), offline=(2,)), part(1, (1, 3))]
    first, seen = confirm_offline(partitions, {1, 2, 3}, {})
    assert offline_of(first) == {}
    assert seen == {("t", 0): frozenset({2})}
    second, seen = confirm_offline(partitions, {1, 2, 3}, seen)
    assert offline_of(second) == {0: (2,)}
    third, _ = confirm_offline(partitions, {1, 2, 3}, seen)
    assert offline_of(third) == {0: (2,)}


def test_only_the_replicas_offline_in_both_reads_are_confirmed() -> None:
    _, seen = confirm_offline([part(0, (1, 2, 3), offline=(2,))], {1, 2, 3}, {})
    confirmed, _ = confirm_offline([part(0, (1, 2, 3), offline=(2, 3))], {1, 2, 3}, seen)
    assert offline_of(confirmed) == {0: (2,)}


def test_a_directory_back_online_is_forgotten() -> None:
    _, seen = confirm_offline([part(0, (2, 1), offline=(2,))], {1, 2}, {})
    _, seen = confirm_offline([part(0, (2, 1))], {1, 2}, seen)
    again, _ = confirm_offline([part(0, (2, 1), offline=(2,))], {1, 2}, seen)
    assert offline_of(again) == {}


brokers = st.integers(min_value=1, max_value=5)
reads = st.lists(
    st.tuples(
        st.frozensets(brokers),  # live
        st.lists(st.tuples(st.frozensets(brokers, min_size=1), st.frozensets(brokers))),
    ),
    min_size=1,
    max_size=4,
)


@given(reads)
def test_nothing_is_invented_and_a_live_brokers_offline_replica_was_seen_before(
    history: list[tuple[frozenset[int], list[tuple[frozenset[int], frozenset[int]]]]],
) -> None:
    previous: dict[tuple[str, int], frozenset[int]] = {}
    for live, specs in history:
        partitions = [
            part(i, tuple(sorted(replicas)), tuple(sorted(offline & replicas)))
            for i, (replicas, offline) in enumerate(specs)
        ]
        out, seen = confirm_offline(partitions, set(live), previous)
        assert [(p.topic, p.partition, p.replicas, p.isr) for p in out] == [
            (p.topic, p.partition, p.replicas, p.isr) for p in partitions
        ]
        for before, after in zip(partitions, out, strict=True):
            assert set(after.offline) <= set(before.offline)
            assert {b for b in before.offline if b not in live} <= set(after.offline)
            on_live = {b for b in after.offline if b in live}
            assert on_live <= previous.get((after.topic, after.partition), frozenset())
        previous = seen
