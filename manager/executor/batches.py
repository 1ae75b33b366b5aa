"""Pure parts of the executor: what to start next within the limits, in which order, and
which throttles the moves in flight need. No I/O; the executor (manager/executor/executor.py)
applies the results."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kmedic.errors import KmedicError
from manager.model.moves import Move, TopicPartition


def select_batch(
    pending: Sequence[Move],
    current: Mapping[TopicPartition, Sequence[int]],
    in_flight: Iterable[Move],
    *,
    max_per_broker: int,
    max_per_cluster: int,
    dead: frozenset[int] = frozenset(),
) -> list[Move]:
    """The pending moves to start now, in order, so that no broker takes part in more than
    ``max_per_broker`` moves and no more than ``max_per_cluster`` run at once. A move that does
    not fit is skipped, not blocking the ones after it (a busy broker must not stall others).
    At most one move per partition runs at a time. Brokers in ``dead`` send and receive
    nothing, so they do not count: healing a dead broker is limited by its partitions' live
    replicas and destinations, not by the dead broker itself."""
    if max_per_broker < 1 or max_per_cluster < 1:
        raise KmedicError("executor limits must be at least 1 move per broker and per cluster")
    load: Counter[int] = Counter()
    running = 0
    busy: set[TopicPartition] = set()
    for move in in_flight:
        load.update(move.brokers_involved(current.get(move.tp, ())) - dead)
        running += 1
        busy.add(move.tp)
    chosen: list[Move] = []
    for move in pending:
        if running >= max_per_cluster:
            break
        if move.tp in busy:
            continue
        involved = move.brokers_involved(current.get(move.tp, ())) - dead
        if any(load[b] >= max_per_broker for b in involved):
            continue
        load.update(involved)
        running += 1
        busy.add(move.tp)
        chosen.append(move)
    return chosen


def least_written_first(
    pending: Sequence[Move],
    writes: Mapping[TopicPartition, float],
    urgent: frozenset[TopicPartition] = frozenset(),
) -> list[Move]:
    """``pending`` in the order to start them: partitions whose writes fail (``urgent``, under
    min.insync.replicas) first, then the partitions written least (bytes/s; absent: none
    known, taken as 0), each group in the plan's order. A finished move adds its partition's
    writes to its destination's link for good, unthrottled: moved last, they leave the widest
    room for the bulk of the copy (docs/executor.md, "Start order")."""
    return sorted(pending, key=lambda m: (m.tp not in urgent, writes.get(m.tp, 0.0)))


@dataclass(frozen=True)
class ThrottleTargets:
    """Replication throttles the moves in flight need (Kafka's KIP-73 configs)."""

    # topic -> sorted "partition:broker" entries, for leader.replication.throttled.replicas
    leader_replicas: dict[str, tuple[str, ...]]
    # topic -> sorted "partition:broker" entries, for follower.replication.throttled.replicas
    follower_replicas: dict[str, tuple[str, ...]]
    brokers: frozenset[int]


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
        added = [b for b in move.target if b not in replicas]
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
