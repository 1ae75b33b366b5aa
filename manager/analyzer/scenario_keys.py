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
from collections.abc import Hashable, Iterable

import numpy as np
import numpy.typing as npt

from manager.analyzer.readiness import Scenario
from manager.model.snapshot import Snapshot
from manager.model.topics import PartitionTable, Ragged, topics_table

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
    """Each scenario's key on ``snap``; ``extra`` (e.g. the heal-time pace) goes into all.
    Read from the snapshot's columns: a fleet's partitions are never made models here."""
    table = topics_table(snap.topics)
    n = len(table)
    brokers = max((b.id for b in snap.brokers), default=0) + 1
    held = table.replicas
    holder = held.values.astype(np.intp)
    holder_row = held.value_rows()
    if len(holder) and holder.max() >= brokers:
        brokers = int(holder.max()) + 1  # a replica on an unknown broker still counts
    h = _partition_hashes(table)
    constrained = {t for g in snap.isolation_groups for t in g.topics}
    constrained |= {t for g in snap.anti_affinity_groups for t in g.topics}
    in_group = np.array([name in constrained for name in table.names], dtype=np.bool_)
    shared_rows = (
        in_group[table.topic] | (table.isr.counts() < held.counts()) | (table.offline.counts() > 0)
    )
    shared_parts = int(h[shared_rows].sum(dtype=np.uint64))  # the partitions every scenario reads
    involved = np.zeros(brokers, dtype=np.uint64)  # broker -> sum of its partitions' hashes
    np.add.at(involved, holder, h[holder_row])
    replicas = np.bincount(holder, minlength=brokers)
    loads = table.loads
    known = loads.known if loads is not None else np.zeros(n, dtype=np.bool_)
    inbound = np.where(known, loads.bytes_in, 0.0) if loads is not None else np.zeros(n)
    outbound = np.where(known, loads.bytes_out, 0.0) if loads is not None else np.zeros(n)
    size = table.size if table.size is not None else np.zeros(n, dtype=np.int64)
    led = known & (table.leader >= 0)
    leader = table.leader[led].astype(np.intp)
    traffic = np.bincount(holder, weights=inbound[holder_row], minlength=brokers)
    traffic += np.bincount(leader, weights=outbound[led], minlength=brokers)
    disk = np.bincount(holder, weights=size[holder_row], minlength=brokers)
    leaders = np.bincount(leader, minlength=brokers)
    standing = tuple(
        (
            b.id,
            int(replicas[b.id]),
            int(leaders[b.id]),
            bucket(float(traffic[b.id]), TRAFFIC_FLOOR),
            bucket(float(disk[b.id]), BYTES_FLOOR),
        )
        for b in snap.brokers
    )
    shared = hash((_frame(snap), standing, shared_parts, extra))
    return {
        s: (shared, tuple(int(involved[b]) if b < brokers else 0 for b in s.brokers))
        for s in scenarios
    }


def _partition_hashes(table: PartitionTable) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each partition's topic, number, replicas, ISR, leader, offline
    replicas and load validity (None, True or False): what a heal of it depends on."""
    with np.errstate(over="ignore"):
        names = np.array([hash(name) for name in table.names], dtype=np.int64).view(np.uint64)
        loads = table.loads
        if loads is None:
            valid = np.zeros(len(table), dtype=np.uint64)
        else:
            valid = np.where(loads.known, np.where(loads.valid, 2, 1), 0).astype(np.uint64)
        h = _mixed(names[table.topic])
        for column in (
            table.partition.astype(np.uint64),
            table.leader.astype(np.int64).view(np.uint64),
            valid,
            _row_hashes(table.replicas),
            _row_hashes(table.isr),
            _row_hashes(table.offline),
        ):
            h = _mixed(h * np.uint64(_PRIME) + column)
    return h


def _row_hashes(rows: Ragged) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each row's ids in order (and its length)."""
    counts = rows.counts()
    position = np.arange(len(rows.values)) - np.repeat(rows.start[:-1], counts)
    with np.errstate(over="ignore"):
        terms = _mixed((rows.values.astype(np.uint64) + np.uint64(1)) * np.uint64(_PRIME))
        terms = _mixed(terms + position.astype(np.uint64))
        sums = np.zeros(len(rows.values) + 1, dtype=np.uint64)
        np.cumsum(terms, out=sums[1:])
        return _mixed(sums[rows.start[1:]] - sums[rows.start[:-1]] + counts.astype(np.uint64))


_PRIME = 0x100000001B3  # FNV's 64-bit prime


def _mixed(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser: every bit of ``x`` moves about half of the result's."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


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
            b.shutting_down(now),
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
