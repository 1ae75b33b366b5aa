"""Offline replicas on a live broker count as a failed log directory only when two reads in a
row say so (manager.monitor.offline). cc25 found why: broker 4, SIGKILLed, was still unfenced
in DescribeCluster while the next Metadata answer already listed its replicas offline, and the
manager healed "failed log directories on broker 4" at once, without the grace period."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kmedic.metadata import BrokerNode, PartitionInfo
from kmedic.partition_table import PartitionTable
from manager.model.placement_config import PlacementConfig
from manager.model.snapshot import Leadership, Quorum
from manager.monitor import sources as sources_module
from manager.monitor.offline import OfflineOnLive, confirm_offline, unconfirmed
from manager.monitor.sources import ClusterSources


def part(p: int, replicas: tuple[int, ...], offline: tuple[int, ...] = ()) -> PartitionInfo:
    isr = tuple(r for r in replicas if r not in offline)
    return PartitionInfo("t", p, isr[0] if isr else -1, replicas, isr, offline)


def offline_of(partitions: PartitionTable) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.offline for p in partitions.infos() if p.offline}


def confirm(
    partitions: list[PartitionInfo], live: set[int], previous: OfflineOnLive
) -> tuple[PartitionTable, OfflineOnLive]:
    return confirm_offline(PartitionTable.of(partitions), live, previous)


def test_a_broker_fenced_between_the_two_requests_is_never_a_failed_directory() -> None:
    # Read 1: DescribeCluster still lists broker 4; Metadata already has its replicas offline.
    first, seen = confirm(
        [part(0, (4, 1), offline=(4,)), part(1, (1, 4), offline=(4,)), part(2, (1, 2))],
        {1, 2, 3, 4},
        {},
    )
    assert offline_of(first) == {}
    # Read 2: broker 4 is gone from the cluster; its offline replicas are a dead broker's.
    second, seen = confirm(
        [part(0, (4, 1), offline=(4,)), part(1, (1, 4), offline=(4,)), part(2, (1, 2))],
        {1, 2, 3},
        seen,
    )
    assert offline_of(second) == {0: (4,), 1: (4,)}
    assert seen == {}


def test_a_failed_directory_counts_from_the_second_read_on() -> None:
    partitions = [part(0, (2, 1), offline=(2,)), part(1, (1, 3))]
    first, seen = confirm(partitions, {1, 2, 3}, {})
    assert offline_of(first) == {}
    assert seen == {("t", 0): frozenset({2})}
    second, seen = confirm(partitions, {1, 2, 3}, seen)
    assert offline_of(second) == {0: (2,)}
    third, _ = confirm(partitions, {1, 2, 3}, seen)
    assert offline_of(third) == {0: (2,)}


def test_only_the_replicas_offline_in_both_reads_are_confirmed() -> None:
    _, seen = confirm([part(0, (1, 2, 3), offline=(2,))], {1, 2, 3}, {})
    confirmed, _ = confirm([part(0, (1, 2, 3), offline=(2, 3))], {1, 2, 3}, seen)
    assert offline_of(confirmed) == {0: (2,)}


def test_a_directory_back_online_is_forgotten() -> None:
    _, seen = confirm([part(0, (2, 1), offline=(2,))], {1, 2}, {})
    _, seen = confirm([part(0, (2, 1))], {1, 2}, seen)
    again, _ = confirm([part(0, (2, 1), offline=(2,))], {1, 2}, seen)
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
        table, seen = confirm(partitions, set(live), previous)
        out = table.infos()
        assert [(p.topic, p.partition, p.replicas, p.isr) for p in out] == [
            (p.topic, p.partition, p.replicas, p.isr) for p in partitions
        ]
        for before, after in zip(partitions, out, strict=True):
            assert set(after.offline) <= set(before.offline)
            assert {b for b in before.offline if b not in live} <= set(after.offline)
            on_live = {b for b in after.offline if b in live}
            assert on_live <= previous.get((after.topic, after.partition), frozenset())
        previous = seen


def test_a_read_with_offline_replicas_seen_for_the_first_time_is_unconfirmed() -> None:
    _, first = confirm([part(0, (2, 1), offline=(2,))], {1, 2}, {})
    assert unconfirmed(first, {})
    assert not unconfirmed(first, first)
    assert not unconfirmed({}, first)  # a directory back online needs no second read
    _, more = confirm([part(0, (2, 1, 3), offline=(2, 3))], {1, 2, 3}, first)
    assert unconfirmed(more, first)


class Unread:
    """No controller quorum to read here."""

    def read(self, now_ms: int) -> Quorum:
        return Quorum(state="unknown", error="not read in this test")

    def close(self) -> None:
        pass


class ScriptedSources(ClusterSources):
    """ClusterSources whose Admin API reads are a script: what one read after another says."""

    def __init__(self, reads: list[tuple[set[int], list[PartitionInfo]]]) -> None:
        super().__init__(
            cluster="c", bootstrap="127.0.0.1:1", stats_topic="s", loads_topic="l",
            stats_lookback_s=60,
        )  # fmt: skip
        self.script = list(reads)
        self.reads = 0
        self.quorum = Unread()  # type: ignore[assignment]

    def _read_admin(self, *, list_reassignments: bool = True) -> Any:
        live, partitions = self.script[min(self.reads, len(self.script) - 1)]
        self.reads += 1
        nodes = {b: BrokerNode("h", 9092, "/r1", False) for b in live}
        return nodes, PartitionTable.of(partitions), {}


def observe(sources: ClusterSources) -> dict[int, tuple[int, ...]]:
    obs = sources.observe(
        1_800_000_000_000,
        placement=PlacementConfig(),
        leadership=Leadership(holder="m", epoch=1, current_epoch=1, is_leader=True),
        own_moves=frozenset(),
        moves_last_hour=0,
    )
    return offline_of(obs.partitions)


def test_a_failed_directory_is_confirmed_within_the_cycle_that_first_sees_it(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(sources_module, "OFFLINE_CONFIRM_S", 0.0)
    failed = [part(0, (2, 1), offline=(2,)), part(1, (1, 3))]
    sources = ScriptedSources([({1, 2, 3}, failed)])
    assert observe(sources) == {0: (2,)}, "one cycle, two reads: the directory is failed"
    assert sources.reads == 2
    assert observe(sources) == {0: (2,)} and sources.reads == 3, "known since: one read"


def test_a_broker_fenced_meanwhile_is_a_dead_broker_after_the_second_read(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(sources_module, "OFFLINE_CONFIRM_S", 0.0)
    offline = [part(0, (4, 1), offline=(4,)), part(1, (1, 2))]
    sources = ScriptedSources([({1, 2, 3, 4}, offline), ({1, 2, 3}, offline)])
    assert observe(sources) == {0: (4,)}  # broker 4's: dead, not a failed directory
    assert sources.reads == 2 and sources.offline_on_live == {}
