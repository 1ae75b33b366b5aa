"""Topics that no heal can save (pure): a broker loss turns them into an outage or loses
acknowledged writes, whatever kmedic does afterwards. Operators hear of them before that day.

- ``below_min_rf``: fewer replicas than ``policy.min_replication_factor``; at RF 1 the first
  broker lost takes the partition offline;
- ``min_isr_blocks_writes``: ``min.insync.replicas`` at or above the RF; one replica out of
  sync (a broker lost, restarted or slow) rejects every ``acks=all`` write;
- ``min_isr_loses_writes``: ``min.insync.replicas`` 1 at RF 3 or more; an ``acks=all`` write
  acknowledged by the leader alone is lost with it.

A topic's RF is its smallest partition's replica count, replicas being added by a
reassignment not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from manager.model.policy import Policy
from manager.model.snapshot import Snapshot
from manager.model.topics import topics_table

UnsafeKind = Literal["below_min_rf", "min_isr_blocks_writes", "min_isr_loses_writes"]
UNSAFE_KINDS: tuple[UnsafeKind, ...] = (
    "below_min_rf",
    "min_isr_blocks_writes",
    "min_isr_loses_writes",
)


@dataclass(frozen=True)
class UnsafeTopic:
    topic: str
    kind: UnsafeKind
    replication_factor: int
    min_insync_replicas: int | None

    def sentence(self, min_rf: int) -> str:
        rf, isr = self.replication_factor, self.min_insync_replicas
        if self.kind == "below_min_rf":
            return f"{self.topic}: RF {rf} is below the minimum {min_rf}"
        if self.kind == "min_isr_blocks_writes":
            return (
                f"{self.topic}: min.insync.replicas {isr} at RF {rf}: one replica out of sync "
                "blocks every acks=all write"
            )
        return (
            f"{self.topic}: min.insync.replicas 1 at RF {rf}: an acks=all write acknowledged "
            "by the leader alone is lost with it"
        )


@dataclass(frozen=True)
class TopicFacts:
    name: str
    replication_factor: int
    min_insync_replicas: int | None


def facts(snap: Snapshot) -> list[TopicFacts]:
    """Each topic's replication factor (its smallest partition's, replicas a reassignment
    adds not counted) and min.insync.replicas; from the columns, looking at the few
    partitions being reassigned one by one."""
    table = topics_table(snap.topics)
    counts = table.replicas.counts()
    bounds = table.topic_bounds()
    min_insync = table.min_insync
    adding = {(r.topic, r.partition): set(r.adding_replicas) for r in snap.reassignments}
    rows = {}
    if adding:
        for i in range(len(table)):
            key = (table.names[int(table.topic[i])], int(table.partition[i]))
            if key in adding:
                rows[i] = len(set(table.replicas.row(i)) - adding[key])
    out = []
    for t, name in enumerate(table.names):
        start, end = int(bounds[t]), int(bounds[t + 1])
        if start == end:
            continue
        rf = int(counts[start:end].min())
        rf = min([rf, *(v for i, v in rows.items() if start <= i < end)]) if rows else rf
        needed = (int(min_insync[t]) or None) if min_insync is not None else None
        out.append(TopicFacts(name, rf, needed))
    return out


# For a topic and its replication factor, the min.insync.replicas kmedic creates it with when
# it is one of kmedic's own topics, else None (kmedic.own_topics.OwnTopics).
OwnSetting = Callable[[str, int], int | None]


def not_own(topic: str, replication_factor: int) -> int | None:
    return None


def unsafe_topics(snap: Snapshot, policy: Policy, own: OwnSetting = not_own) -> list[UnsafeTopic]:
    """Every unsafe topic of the snapshot (a topic whose setting was not read: RF only)."""
    return find_unsafe(facts(snap), policy.min_replication_factor, own)


def find_unsafe(
    topics: list[TopicFacts], min_rf: int, own: OwnSetting = not_own
) -> list[UnsafeTopic]:
    """Every unsafe topic, once per kind it falls under, by name. One of kmedic's own topics
    at the min.insync.replicas kmedic creates it with (``own``) is judged by that choice, not
    called ``min_isr_loses_writes`` (kmedic/own_topics.py says why it is 1 for some)."""
    found = []
    for t in sorted(topics, key=lambda t: t.name):
        rf, isr = t.replication_factor, t.min_insync_replicas
        if isr is not None and isr == own(t.name, rf):
            isr_judged: int | None = None  # as kmedic creates it: its own rule
        else:
            isr_judged = isr
        if rf < min_rf:
            found.append(UnsafeTopic(t.name, "below_min_rf", rf, isr))
        if isr is not None and isr >= rf >= 2:  # at RF 1 the partition is simply offline
            found.append(UnsafeTopic(t.name, "min_isr_blocks_writes", rf, isr))
        if isr_judged == 1 and rf >= 3:
            found.append(UnsafeTopic(t.name, "min_isr_loses_writes", rf, isr))
    return found
