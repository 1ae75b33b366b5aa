"""Under-replication, and the rule that explains it: the one home of the rule the gate refuses
on (``gates.gate_under_replication``) and the metric counts (``health.health_facts``).

A partition is degraded when it has no leader or fewer in-sync replicas than replicas. Its
degradation is explained when every replica outside the ISR is on a broker that is dead, whose
copy Kafka reports offline (its log directory failed: like a death), that a reassignment is
adding, that came back within the recovery window and is catching up, that is in a controlled
shutdown (out of every ISR on its way to being fenced), or that is scored slow (kmedic knows
why it lags, and demoted it), or that follows a leader scored slow (a broker whose link fails
holds its followers back until it is demoted); and, without a leader, when no replica is on a
live broker, not shutting down, with its copy online. Anything else - a live broker that lags
for no known reason, a partition offline with a healthy copy - is unexplained: a slow
follower, a disk or the network, which moving data would not fix. Pure: no I/O.
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
    shutting down (``Broker.shutting_down``: the controller took them out of every ISR), or
    scored slow (manager.analyzer.slowness)."""
    return recovering(snap) | frozenset(
        b.id for b in snap.brokers if b.is_slow or b.shutting_down(snap.taken_at)
    )


@dataclass(frozen=True)
class UnderReplication:
    """The snapshot's degraded partitions, and those of them the rule does not explain."""

    degraded: int
    unexplained: tuple[str, ...]  # "topic:partition", in the table's order
    # The unexplained lag by link: (follower, leader, partitions) for every live follower out
    # of the ISR of partitions its leader leads, most partitions first. A follower behind one
    # leader only, on every partition that leader leads, is a link between the two, not a
    # slow broker.
    behind: tuple[tuple[int, int, int], ...] = ()

    @property
    def explained(self) -> int:
        return self.degraded - len(self.unexplained)


def under_replication(snap: Snapshot) -> UnderReplication:
    """Every degraded partition of ``snap``, judged by the rule above, column by column (a
    rack's loss degrades a third of a fleet's 433,000 partitions): each replica of a degraded
    partition is a key, its row << 32 | its broker, looked up among the offline copies', the
    in-sync replicas' and the replicas being added."""
    table = topics_table(snap.topics)
    degraded = np.flatnonzero((table.leader < 0) | (table.isr.counts() < table.replicas.counts()))
    replicas, offline, isr = (
        column.take(degraded) for column in (table.replicas, table.offline, table.isr)
    )
    replica = replicas.keys()
    row, broker = replica >> 32, replica & 0xFFFFFFFF
    catching: list[int] = []  # the keys of the replicas reassignments are adding
    for r in snap.reassignments:
        at = table.row_of(r.topic, r.partition)
        pos = int(np.searchsorted(degraded, at)) if at is not None else len(degraded)
        if pos < len(degraded) and degraded[pos] == at:
            catching += [(pos << 32) | b for b in r.adding_replicas]
    # A broker shutting down serves no copy any more, like a dead one.
    dead = [b.id for b in snap.brokers if not b.alive or b.shutting_down(snap.taken_at)]
    gone = np.isin(broker, dead) | np.isin(replica, offline.keys())
    slow = [b.id for b in snap.brokers if b.is_slow]
    lagging = ~(
        gone
        | np.isin(replica, isr.keys())
        | np.isin(replica, np.array(catching, dtype=np.int64))
        | np.isin(broker, list(lag_explained(snap)))
        # Behind a slow leader (a broker whose link is failing holds back its followers):
        # kmedic knows why, and demoting that leader is the cure.
        | np.isin(table.leader[degraded][row], slow)
    )
    n = len(degraded)
    live_copy = np.bincount(row[~gone], minlength=n) > 0
    unexplained = (np.bincount(row[lagging], minlength=n) > 0) | (
        (table.leader[degraded] < 0) & live_copy
    )
    names = [
        f"{table.names[int(table.topic[i])]}:{int(table.partition[i])}"
        for i in degraded[unexplained].tolist()
    ]
    leaders = table.leader[degraded][row[lagging]]
    pairs: dict[tuple[int, int], int] = {}
    for follower, leader in zip(broker[lagging].tolist(), leaders.tolist(), strict=True):
        if leader >= 0 and leader != follower:  # a leader outside its own ISR: no link
            pairs[(follower, leader)] = pairs.get((follower, leader), 0) + 1
    behind = sorted(((f, lead, c) for (f, lead), c in pairs.items()), key=lambda t: (-t[2], t))
    return UnderReplication(n, tuple(names), tuple(behind))
