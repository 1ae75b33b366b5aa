"""Each local partition's role - leader or follower, of which leader, in the ISR or not - as the
agent reports it, read from the broker itself.

The broker's own gauges (agent.exporter.PartitionGauges) say every sample which local partitions
it leads, how many replicas and in-sync replicas each has, and which leader each follower copies
from. They cannot say whether a follower is in its partition's ISR: only the leader knows. The
whole cluster's Metadata is therefore read only every ``metadata_check_s`` (docs/agent.md), as a
cross-check of the gauges and as the source of a follower's ISR membership; and every sample
while the exporter lacks the partition gauges, as the roles themselves. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from agent.exporter import PartitionGauges, TopicPartition
from kmedic.metadata import PartitionInfo


class LocalPartition(NamedTuple):
    """One partition this broker holds a replica of (a tuple: a broker holds thousands)."""

    topic: str
    partition: int
    leader: int  # the broker itself, a follower's leader (agent.roles._leader), or -1: none known
    under_replicated: bool  # led here, with fewer in-sync replicas than replicas
    in_isr: bool  # a follower: in the ISR at the last Metadata read (False: not in it then)


_BY_PARTITION = itemgetter(0, 1)


def from_gauges(
    gauges: PartitionGauges, broker_id: int, metadata: Mapping[TopicPartition, PartitionInfo]
) -> list[LocalPartition]:
    """The roles the broker's gauges give, in (topic, partition) order; a follower's ISR
    membership from ``metadata``, the last Metadata read's partitions of this broker."""
    led = [
        LocalPartition(topic, partition, broker_id, isr < replicas, True)
        for (topic, partition), (replicas, isr) in gauges.leading.items()
    ]
    followed = []
    for (topic, partition), copying_from in gauges.following.items():
        known = metadata.get((topic, partition))
        leader = _leader(copying_from, known, broker_id)
        followed.append(LocalPartition(topic, partition, leader, False, _in_isr(known, broker_id)))
    return sorted(led + followed, key=_BY_PARTITION)


def _leader(copying_from: int, known: PartitionInfo | None, broker_id: int) -> int:
    """The leader a follower copies from, by its fetch-lag gauge; without one, the last
    Metadata read's leader. A follower in sync can lack the gauge for good (seen on Kafka
    4.1.1 after its partition's leadership moved between two brokers with a fetch session open),
    and for a moment after any leader change. Never this broker itself: a follower's leader is
    another one (the read may predate its losing the leadership), else none (-1)."""
    if copying_from >= 0:
        return copying_from
    if known is not None and known.leader >= 0 and known.leader != broker_id:
        return known.leader
    return -1


def _in_isr(known: PartitionInfo | None, broker_id: int) -> bool:
    return known is not None and broker_id in known.isr


def from_metadata(partitions: Iterable[PartitionInfo], broker_id: int) -> list[LocalPartition]:
    """The roles a Metadata read gives, in (topic, partition) order."""
    found = [
        LocalPartition(
            p.topic,
            p.partition,
            p.leader,
            p.leader == broker_id and len(p.isr) < len(p.replicas),
            broker_id in p.isr,
        )
        for p in partitions
        if broker_id in p.replicas or p.leader == broker_id
    ]
    return sorted(found, key=_BY_PARTITION)


@dataclass(frozen=True)
class CrossCheck:
    """How the gauges' roles compare with a Metadata read of the same moment."""

    checked: int  # partitions either source holds
    differ: tuple[TopicPartition, ...]  # held by one source only, or led by another broker

    @property
    def agrees(self) -> bool:
        return not self.differ


def cross_check(gauged: list[LocalPartition], read: list[LocalPartition]) -> CrossCheck:
    """Partitions whose holding or leader differ between the gauges and the Metadata read.
    A leader change between the scrape and the read makes a few differ for one check; a
    difference every check is a broker (or exporter configuration) to look at."""
    by_gauge = {(p.topic, p.partition): p.leader for p in gauged}
    by_read = {(p.topic, p.partition): p.leader for p in read}
    keys = by_gauge.keys() | by_read.keys()
    differ = tuple(sorted(tp for tp in keys if by_gauge.get(tp) != by_read.get(tp)))
    return CrossCheck(len(keys), differ)
