"""What the moves in flight need throttled (pure): the replicas Kafka's KIP-73 configs name,
the brokers that take part, the moves still copying, and the adaptive throttle's budget of
written data each broker may copy at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from manager.model.moves import Move, TopicPartition
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE, BrokerKey


@dataclass(frozen=True)
class WriteBudget:
    """How much written data each broker may copy at once: the write rate (bytes/s) of each
    partition (``writes``; absent: 0), each broker's budget by rate key (``limits``, from
    ``adaptive.write_budgets``; absent: unbounded), and the partitions exempt from it
    (``urgent``: under min.insync.replicas, availability first)."""

    writes: Mapping[TopicPartition, float]
    limits: Mapping[BrokerKey, float]
    urgent: frozenset[TopicPartition] = frozenset()

    def uses(self, move: Move, replicas: Sequence[int], dead: frozenset[int]) -> list[BrokerKey]:
        """The rate keys a copy takes part in: every live replica may lead (sends), every
        replica it adds receives. A reorder copies nothing: none."""
        if move.reorders(replicas):
            return []
        senders = [(b, LEADER_RATE) for b in replicas if b not in dead]
        return senders + [(b, FOLLOWER_RATE) for b in move.adds(replicas)]

    def holds(
        self, move: Move, keys: Iterable[BrokerKey], written: Mapping[BrokerKey, float]
    ) -> bool:
        """Whether ``move`` waits: not urgent, and a broker it copies through already copies
        (``written``: the writes of its copies, by rate key) and would go over its budget."""
        adds = self.writes.get(move.tp, 0.0)
        return move.tp not in self.urgent and any(
            key in written and key in self.limits and written[key] + adds > self.limits[key]
            for key in keys
        )


@dataclass(frozen=True)
class ThrottleTargets:
    """Replication throttles the moves in flight need (Kafka's KIP-73 configs)."""

    # topic -> sorted "partition:broker" entries, for leader.replication.throttled.replicas
    leader_replicas: dict[str, tuple[str, ...]]
    # topic -> sorted "partition:broker" entries, for follower.replication.throttled.replicas
    follower_replicas: dict[str, tuple[str, ...]]
    brokers: frozenset[int]


def still_copying(
    moves: Iterable[Move],
    current: Mapping[TopicPartition, Sequence[int]],
    isr: Mapping[TopicPartition, Sequence[int]],
) -> list[Move]:
    """The moves with a new replica (in the target, not in ``current``) outside the partition's
    ISR: the ones with data left to copy. A new replica in the ISR holds the leader's log, and
    throttled it would hold the partition's acks=all writes: Kafka's follower leaves a
    throttled replica out of its fetch whenever its broker's quota is spent and the replica
    lags the leader by a record, in the ISR or not, so the writes waited for the quota's window
    (up to a second) while a move's election settled. A partition whose ISR was not read
    counts as copying."""
    found = []
    for move in moves:
        replicas, in_sync = current.get(move.tp, ()), isr.get(move.tp, ())
        if any(b not in replicas and b not in in_sync for b in move.target):
            found.append(move)
    return found


def throttle_targets(
    in_flight: Iterable[Move], current: Mapping[TopicPartition, Sequence[int]]
) -> ThrottleTargets:
    """Leaders throttled on the replicas data is copied from, followers on the new replicas,
    and a rate on every broker taking part (as kafka-reassign-partitions does)."""
    leaders: dict[str, set[str]] = {}
    followers: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for move in in_flight:
        replicas = list(current.get(move.tp, ()))
        added = move.adds(replicas)
        if not added:
            continue
        leaders.setdefault(move.topic, set()).update(f"{move.partition}:{b}" for b in replicas)
        followers.setdefault(move.topic, set()).update(f"{move.partition}:{b}" for b in added)
        brokers.update(replicas)
        brokers.update(added)
    return ThrottleTargets(
        {t: tuple(sorted(v)) for t, v in leaders.items()},
        {t: tuple(sorted(v)) for t, v in followers.items()},
        frozenset(brokers),
    )
