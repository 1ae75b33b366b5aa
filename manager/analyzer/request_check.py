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
  factor of any topic, and, where the policy enforces ``min_racks``, span the racks (zones)
  that factor needs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

from manager.model.policy import Policy
from manager.model.racks import location_of, min_rack_units, rack_name_problem
from manager.model.snapshot import Snapshot
from manager.model.topics import PartitionTable, topics_table

DEFAULT_POLICY = Policy()  # enforces no rack rule


@dataclass(frozen=True)
class Asked:
    kind: str
    brokers: tuple[int, ...]
    topic: str | None = None
    replication_factor: int | None = None


@dataclass(frozen=True)
class ClusterFacts:
    """What the check reads of a snapshot: the brokers, each topic's largest replica count,
    and, for the rack rule, the brokers' racks and the policy."""

    brokers: frozenset[int]
    rf: dict[str, int]
    racks: Mapping[int, str | None] = field(default_factory=dict)
    policy: Policy = DEFAULT_POLICY

    @classmethod
    def of(cls, snap: Snapshot) -> ClusterFacts:
        return cls.of_table(
            {b.id: b.rack for b in snap.brokers}, topics_table(snap.topics), snap.policy
        )

    @classmethod
    def of_table(
        cls, racks: Mapping[int, str | None], table: PartitionTable, policy: Policy = DEFAULT_POLICY
    ) -> ClusterFacts:
        """From the partition columns and the brokers known with their racks (registered, or
        named in a replica list: a dead broker still counts as one the cluster has)."""
        counts = table.replicas.counts()
        bounds = table.topic_bounds()
        rf = {}
        for t, name in enumerate(table.names):
            part = counts[int(bounds[t]) : int(bounds[t + 1])]
            if part.size:
                rf[name] = int(np.max(part))
        named = np.unique(table.replicas.values).tolist() if len(table) else []
        brokers = frozenset(racks) | frozenset(int(b) for b in named if b >= 0)
        return cls(brokers, rf, dict(racks), policy)


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
    kept = facts.brokers - set(brokers)
    widest = max(facts.rf.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    if widest is None:
        return None
    name, rf = widest
    if len(kept) < rf:
        return (
            f"emptying brokers {sorted(brokers)} leaves {len(kept)} brokers, fewer than the "
            f"replication factor {rf} of {name}: its replicas would have nowhere to go"
        )
    return _racks_left(brokers, kept, name, rf, facts)


def _racks_left(
    brokers: Collection[int], kept: frozenset[int], name: str, rf: int, facts: ClusterFacts
) -> str | None:
    """Where the policy enforces ``min_racks``: the racks (zones) the brokers left span, against
    what the widest topic needs (the planner's rule, analyzer/placement.py:required_units)."""
    policy = facts.policy
    if not policy.enforce_min_racks:
        return None
    kind = policy.placement
    racks = [facts.racks.get(b) for b in kept]
    if any(r is not None and rack_name_problem(r, kind) for r in racks):
        return None  # a rack name the policy cannot read: the planner names it
    need = min(policy.min_racks, rf)
    have = min_rack_units((location_of(r, kind) for r in racks), kind)
    if have >= need:
        return None
    unit = "zones" if kind == "zone" else "racks"
    return (
        f"emptying brokers {sorted(brokers)} leaves brokers in {have} {unit}, fewer than the "
        f"{need} min_racks requires for {name} at RF {rf} (policy.enforce_min_racks)"
    )
