"""Under-replication, and the rule that explains it: the one home of the rule the gate refuses
on (``gates.gate_under_replication``) and the metric counts (``health.health_facts``).

A partition is degraded when it has no leader or fewer in-sync replicas than replicas. Its
degradation is explained when every replica outside the ISR is on a broker that is dead, whose
copy Kafka reports offline (its log directory failed: like a death), that a reassignment is
adding, that came back within the recovery window and is catching up, or that is scored slow
(kmedic knows why it lags, and demoted it); and, without a leader, when no replica is on a live
broker with its copy online. Anything else - a live broker that lags for no known reason, a
partition offline with a healthy copy - is unexplained: a slow follower, a disk or the network,
which moving data would not fix. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manager.model.snapshot import Snapshot
from manager.model.topics import topics_table


def recovering(snap: Snapshot) -> frozenset[int]:
    """Live brokers that came back within the recovery window: their replicas outside the ISR
    are catching up after a restart, which a dead broker explained until it returned. (A broker
    that hangs without leaving the metadata never returned: its lag stays unexplained.)"""
    window = snap.policy.recovery_window_ms
    return frozenset(
        b.id
        for b in snap.brokers
        if b.alive and b.returned_at_ms is not None and snap.taken_at - b.returned_at_ms <= window
    )


def lag_explained(snap: Snapshot) -> frozenset[int]:
    """Live brokers whose replicas outside the ISR are explained: recovering after a restart,
    or scored slow (manager.analyzer.slowness)."""
    return recovering(snap) | frozenset(b.id for b in snap.brokers if b.is_slow)


@dataclass(frozen=True)
class UnderReplication:
    """The snapshot's degraded partitions, and those of them the rule does not explain."""

    degraded: int
    unexplained: tuple[str, ...]  # "topic:partition", in the table's order

    @property
    def explained(self) -> int:
        return self.degraded - len(self.unexplained)


def under_replication(snap: Snapshot) -> UnderReplication:
    """Every degraded partition of ``snap``, judged by the rule above."""
    dead = {b.id for b in snap.brokers if not b.alive}
    back = lag_explained(snap)
    adding = {(r.topic, r.partition): set(r.adding_replicas) for r in snap.reassignments}
    table = topics_table(snap.topics)
    degraded = np.flatnonzero((table.leader < 0) | (table.isr.counts() < table.replicas.counts()))
    unexplained: list[str] = []
    for i in degraded.tolist():
        replicas, isr = table.replicas.row(i), table.isr.row(i)
        topic, number = table.names[int(table.topic[i])], int(table.partition[i])
        catching_up = adding.get((topic, number), set())
        gone = dead | set(table.offline.row(i))
        lagging_live = [
            b for b in replicas if b not in gone and b not in isr and b not in catching_up
            and b not in back
        ]  # fmt: skip
        offline_with_live = table.leader[i] < 0 and any(b not in gone for b in replicas)
        if lagging_live or offline_with_live:
            unexplained.append(f"{topic}:{number}")
    return UnderReplication(len(degraded), tuple(unexplained))
