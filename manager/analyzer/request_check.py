"""Whether an operator request could ever be met (pure), by the rules the planner serves it by:
a request that cannot is refused when it is made (the API, on the manager's last snapshot) or
failed by the leader at its next cycle (the CLI's, stored without a look at the cluster), with
the reason - never left pending at the head of the queue, which is served oldest first, so a
hopeless request blocked every one behind it.

- every request: the brokers it names exist (a decommission's may be gone already: done);
- ``set_rf``: the topic exists; kmedic never lowers a replication factor (a topic with a
  partition above the factor asked is refused, not "done" with nothing changed), and no factor
  above the brokers the cluster has can be placed;
- ``drain`` and ``decommission``: the brokers left can still hold the largest replication
  factor of any topic.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from manager.model.snapshot import Snapshot
from manager.model.topics import PartitionTable, topics_table


@dataclass(frozen=True)
class Asked:
    kind: str
    brokers: tuple[int, ...]
    topic: str | None = None
    replication_factor: int | None = None


@dataclass(frozen=True)
class ClusterFacts:
    """What the check reads of a snapshot: the brokers, and each topic's largest replica
    count."""

    brokers: frozenset[int]
    rf: dict[str, int]

    @classmethod
    def of(cls, snap: Snapshot) -> ClusterFacts:
        return cls.of_table(frozenset(b.id for b in snap.brokers), topics_table(snap.topics))

    @classmethod
    def of_table(cls, brokers: Collection[int], table: PartitionTable) -> ClusterFacts:
        """From the partition columns and the brokers known (registered, or named in a
        replica list: a dead broker still counts as one the cluster has)."""
        counts = table.replicas.counts()
        bounds = table.topic_bounds()
        rf = {}
        for t, name in enumerate(table.names):
            part = counts[int(bounds[t]) : int(bounds[t + 1])]
            if part.size:
                rf[name] = int(np.max(part))
        named = np.unique(table.replicas.values).tolist() if len(table) else []
        return cls(frozenset(brokers) | frozenset(int(b) for b in named if b >= 0), rf)


def never_met(asked: Asked, facts: ClusterFacts) -> str | None:
    """Why ``asked`` can never be met on this cluster, or None."""
    if asked.kind != "decommission":
        unknown = unknown_brokers(asked.brokers, facts)
        if unknown is not None:
            return unknown
    if asked.kind == "set_rf":
        return _set_rf(asked, facts)
    if asked.kind in ("drain", "decommission"):
        return _emptied(asked.brokers, facts)
    return None


def unknown_brokers(named: Collection[int], facts: ClusterFacts) -> str | None:
    """Which of ``named`` the cluster does not have (neither registered nor holding a
    replica), or None: the rule for a request's brokers and a placement record's."""
    unknown = sorted(set(named) - facts.brokers)
    if unknown:
        return f"the cluster has no broker {unknown} (it has {sorted(facts.brokers)})"
    return None


def _set_rf(asked: Asked, facts: ClusterFacts) -> str | None:
    topic, factor = asked.topic, asked.replication_factor
    if topic is None or factor is None:
        return "a set_rf request names a topic and a replication factor"
    if topic not in facts.rf:
        return f"the cluster has no topic {topic}"
    highest = facts.rf[topic]
    if highest > factor:
        return (
            f"kmedic never lowers a replication factor: {topic} has partitions at RF "
            f"{highest}, above the {factor} asked (lower it with kafka-reassign-partitions)"
        )
    if factor > len(facts.brokers):
        return (
            f"RF {factor} for {topic} cannot be placed: the cluster has {len(facts.brokers)} "
            "brokers, and a partition's replicas are on different brokers"
        )
    return None


def _emptied(brokers: Collection[int], facts: ClusterFacts) -> str | None:
    left = len(facts.brokers - set(brokers))
    widest = max(facts.rf.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    if widest is not None and left < widest[1]:
        name, rf = widest
        return (
            f"emptying brokers {sorted(brokers)} leaves {left} brokers, fewer than the "
            f"replication factor {rf} of {name}: its replicas would have nowhere to go"
        )
    return None
