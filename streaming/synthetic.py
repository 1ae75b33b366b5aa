"""Synthetic, valid BrokerStats records for tests and the benchmark.

Built through the pydantic model (kmedic.brokerstats), so they are exactly what an agent writes.
Replicas are laid out like a real cluster: partition p of a topic is led by one broker and
followed by the next ``replication_factor - 1`` brokers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kmedic.brokerstats import (
    SCHEMA_VERSION,
    BrokerStats,
    FollowerReplica,
    LeaderReplica,
    LogDir,
    Totals,
    to_json,
)


@dataclass(frozen=True)
class Layout:
    brokers: int = 4
    topics: int = 2
    partitions: int = 4
    replication_factor: int = 2

    def replicas(self, topic: int, partition: int) -> list[int]:
        """Broker ids (1-based) holding the partition; the first one leads."""
        first = (topic * self.partitions + partition) % self.brokers
        return [
            (first + i) % self.brokers + 1
            for i in range(min(self.replication_factor, self.brokers))
        ]


def topic_name(topic: int) -> str:
    return f"t{topic}"


def partition_rate(topic: int, partition: int, tick: int) -> float:
    """A known, varying bytes-in rate for a partition at a tick (bytes/s)."""
    return float(1000 * (topic + 1) + 100 * partition + 10 * (tick % 7))


def broker_stats(
    layout: Layout, broker_id: int, timestamp_ms: int, tick: int = 0, interval_s: float = 10.0
) -> BrokerStats:
    leaders: list[LeaderReplica] = []
    followers: list[FollowerReplica] = []
    total = layout.topics * layout.partitions
    # Partition g (over all topics) is led by broker g % brokers + 1 and followed by the next
    # ones, so this broker holds g when g % brokers is its index minus the replica's position.
    held: list[tuple[int, int]] = []  # (g, position in the replica list)
    for position in range(min(layout.replication_factor, layout.brokers)):
        first = (broker_id - 1 - position) % layout.brokers
        held.extend((g, position) for g in range(first, total, layout.brokers))
    for g, position in sorted(held):
        t, p = divmod(g, layout.partitions)
        if position == 0:
            rate = partition_rate(t, p, tick)
            leaders.append(
                LeaderReplica(
                    topic=topic_name(t),
                    partition=p,
                    bytes_in_per_s=rate,
                    bytes_out_per_s=2 * rate,
                    messages_in_per_s=rate / 100,
                    log_size_bytes=int(rate * 100 * (tick + 1)),
                    log_start_offset=0,
                    log_end_offset=tick * 10,
                    estimate="size_delta",
                )
            )
        else:
            followers.append(
                FollowerReplica(
                    topic=topic_name(t),
                    partition=p,
                    leader_id=g % layout.brokers + 1,
                    log_size_bytes=1000,
                    log_end_offset=tick * 10,
                    in_isr=True,
                )
            )
    return BrokerStats(
        schema_version=SCHEMA_VERSION,
        sample_id=f"{broker_id}-{timestamp_ms}",
        chunk_index=0,
        chunk_count=1,
        cluster="synthetic",
        broker_id=broker_id,
        host=f"broker-{broker_id}",
        rack=f"/r{broker_id % 2 + 1}",
        timestamp_ms=timestamp_ms,
        interval_s=interval_s,
        rate_window_s=interval_s,
        agent_version="0.1.0",
        kafka_version="4.1.1",
        failure=None,
        leaders=leaders,
        followers=followers,
        reassigning=[],
        log_dirs=[
            LogDir(
                path="/var/kafka",
                total_bytes=10**12,
                free_bytes=5 * 10**11,
                replica_bytes=sum(r.log_size_bytes for r in leaders),
                error=None,
            )
        ],
        totals=Totals(
            bytes_in_per_s=sum(r.bytes_in_per_s for r in leaders),
            bytes_out_per_s=sum(r.bytes_out_per_s for r in leaders),
            messages_in_per_s=sum(r.messages_in_per_s for r in leaders),
            leader_count=len(leaders),
            follower_count=len(followers),
            reassigning_count=0,
            under_replicated_count=0,
            log_size_bytes=sum(r.log_size_bytes for r in leaders) + 1000 * len(followers),
        ),
    )


def records(
    layout: Layout, start_ms: int, ticks: int, interval_s: float = 10.0
) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) pairs: every broker once per tick, in time order, as published."""
    for tick in range(ticks):
        ts = start_ms + int(tick * interval_s * 1000)
        for broker in range(1, layout.brokers + 1):
            stats = broker_stats(layout, broker, ts, tick, interval_s)
            yield str(broker).encode(), to_json(stats)
