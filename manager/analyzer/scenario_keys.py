"""Which readiness scenarios could have a new verdict (pure): a key per scenario that changes
whenever something its heal depends on changes, so a sweep reuses the last verdict of every
scenario whose key is the same.

A scenario's heal depends on:

- the cluster's frame: the policy, the placement config and groups, the failure and
  maintenance domains, the requests, the moves in flight and the hourly budget, and each
  broker's state (alive, rack, capacity, grace and recovery windows, fresh stats, stalled);
- where every broker stands: its replica and leader counts exactly, and its traffic and the
  bytes of its replicas to within 10 % (what the planner's capacity checks and its choice of
  the least loaded destination read; below 1 MB/s and 100 MB, not at all);
- the partitions involved: those with a replica on the lost brokers (what the heal moves),
  every partition of a topic in an isolation or anti-affinity group (where those may go), and
  every under-replicated partition (the gates refuse a heal while any is unexplained); each by
  its replicas, ISR, leader, offline replicas and load validity - not its size, which every
  busy partition changes all the time: the bytes of the lost brokers stand for them.

Sizes and traffic that drift within 10 % keep a verdict: its bytes to copy and heal time are
then off by about as much, which a sweep every ten minutes accepts; anything else changes the
key.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable

from manager.analyzer.readiness import Scenario
from manager.model.snapshot import Partition, Snapshot

_STEP = math.log(1.1)  # buckets 10 % apart
TRAFFIC_FLOOR = 1e6  # bytes/s: less is no load a heal's placement weighs
BYTES_FLOOR = 100e6  # bytes: less is no disk a heal's placement weighs


def bucket(value: float, floor: float = 1.0) -> int:
    """The same for values within about 10 % of each other, and for every value below
    ``floor``."""
    return int(math.log(max(value, floor)) / _STEP)


def scenario_keys(
    snap: Snapshot, scenarios: Iterable[Scenario], extra: Hashable = None
) -> dict[Scenario, Hashable]:
    """Each scenario's key on ``snap``; ``extra`` (e.g. the heal-time pace) goes into all."""
    constrained = {t for g in snap.isolation_groups for t in g.topics}
    constrained |= {t for g in snap.anti_affinity_groups for t in g.topics}
    involved: Counter[int] = Counter()  # broker -> sum of its partitions' hashes
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    traffic: dict[int, float] = defaultdict(float)
    disk: Counter[int] = Counter()
    shared_parts = 0  # the partitions every scenario depends on
    for topic in snap.topics:
        for p in topic.partitions:
            h = hash(_partition(topic.name, p))
            if topic.name in constrained or len(p.isr) < len(p.replicas) or p.offline_replicas:
                shared_parts += h
            inbound = p.load.bytes_in_per_s if p.load else 0.0
            for b in p.replicas:
                involved[b] += h
                replicas[b] += 1
                traffic[b] += inbound
                disk[b] += p.size_bytes
            if p.leader is not None and p.load is not None:
                leaders[p.leader] += 1
                traffic[p.leader] += p.load.bytes_out_per_s
    standing = tuple(
        (
            b.id,
            replicas[b.id],
            leaders[b.id],
            bucket(traffic[b.id], TRAFFIC_FLOOR),
            bucket(disk[b.id], BYTES_FLOOR),
        )
        for b in snap.brokers
    )
    shared = hash((_frame(snap), standing, shared_parts, extra))
    return {s: (shared, tuple(involved[b] for b in s.brokers)) for s in scenarios}


def _partition(topic: str, p: Partition) -> tuple[object, ...]:
    valid = None if p.load is None else p.load.window_valid
    return (topic, p.partition, p.replicas, p.isr, p.leader, p.offline_replicas, valid)


def _frame(snap: Snapshot) -> str:
    now, policy = snap.taken_at, snap.policy
    brokers = [
        (
            b.id,
            b.rack,
            b.alive,
            b.capacity,
            b.in_grace(now, policy.dead_grace_ms),
            b.returned_at_ms is not None and now - b.returned_at_ms < policy.recovery_window_ms,
            b.last_stats_ms is not None and now - b.last_stats_ms <= policy.max_stats_age_ms,
            b.stalled_at_ms is not None,
            b.is_slow,
            bucket(b.disk_used_bytes or 0, BYTES_FLOOR),
        )
        for b in snap.brokers
    ]
    rest = snap.model_dump_json(
        exclude={"taken_at", "brokers", "topics", "leadership", "schema_version"}
    )
    return f"{brokers!r}{rest}"
