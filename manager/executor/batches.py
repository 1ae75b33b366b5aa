"""Pure parts of the executor: what to start next within the limits, and in which order (the
throttles the moves need: manager.throttling.targets). No I/O; the executor
(manager/executor/executor.py) applies the results."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kmedic.errors import KmedicError
from manager.model.moves import Move, TopicPartition
from manager.throttling.ownership import BrokerKey
from manager.throttling.targets import WriteBudget


@dataclass(frozen=True)
class IntoLimit:
    """At most ``per_broker`` copies into one broker at once (the adaptive throttle's
    ``moves_into_broker``): the headroom its link has for copies is shared by fewer senders. A
    partition in ``urgent`` (under min.insync.replicas: its writes already fail) is not held,
    but counts."""

    per_broker: int
    urgent: frozenset[TopicPartition] = frozenset()


@dataclass
class _Taken:
    """What the moves in flight and the ones chosen so far take: moves per broker, copies
    into each broker, writes copied per rate key, partitions, and how many of them change
    replicas or only reorder them."""

    load: Counter[int] = field(default_factory=Counter)
    into: Counter[int] = field(default_factory=Counter)
    written: dict[BrokerKey, float] = field(default_factory=dict)
    partitions: set[TopicPartition] = field(default_factory=set)
    replica_moves: int = 0
    reorders: int = 0

    def add(
        self,
        move: Move,
        reorder: bool,
        involved: Iterable[int],
        keys: Iterable[BrokerKey],
        rate: float,
        added: Iterable[int] = (),
    ) -> None:
        self.load.update(involved)
        self.into.update(added)
        for key in keys:
            self.written[key] = self.written.get(key, 0.0) + rate
        self.partitions.add(move.tp)
        if reorder:
            self.reorders += 1
        else:
            self.replica_moves += 1


def select_batch(
    pending: Sequence[Move],
    current: Mapping[TopicPartition, Sequence[int]],
    in_flight: Iterable[Move],
    *,
    max_per_broker: int,
    max_per_cluster: int,
    max_reorders: int = 1000,
    dead: frozenset[int] = frozenset(),
    budget: WriteBudget | None = None,
    into: IntoLimit | None = None,
) -> list[Move]:
    """The pending moves to start now, in order, so that no broker takes part in more than
    ``max_per_broker`` moves and no more than ``max_per_cluster`` run at once. A move that does
    not fit is skipped, not blocking the ones after it (a busy broker must not stall others).
    At most one move per partition runs at a time. A move that only reorders a partition's
    replicas (a leadership move: nothing copied) takes no part in those limits but in its
    own, ``max_reorders`` at once: a slow broker's demotion is done in one batch, before the
    followers of its busiest partitions fall out of its ISR and no election can take their
    leadership off it. Brokers in ``dead`` send and receive
    nothing, so they do not count: healing a dead broker is limited by its partitions' live
    replicas and destinations, not by the dead broker itself. With a ``budget``, a move also
    waits while it would take a broker already copying over its budget (``WriteBudget.holds``:
    one copy per broker and direction always fits; an urgent move is not held, but counts).
    With ``into``, a move also waits while a broker it adds a replica to already receives
    ``into.per_broker`` copies."""
    if max_per_broker < 1 or max_per_cluster < 1:
        raise KmedicError("executor limits must be at least 1 move per broker and per cluster")
    if into is not None and into.per_broker < 1:
        raise KmedicError("executor limits must be at least 1 copy into a broker")
    taken = _Taken()

    def involved(move: Move) -> tuple[bool, frozenset[int], list[BrokerKey], float, list[int]]:
        replicas = current.get(move.tp, ())
        brokers = frozenset(move.brokers_involved(replicas)) - dead
        reorder = move.reorders(replicas)
        added = move.adds(replicas)
        if budget is None:
            return reorder, brokers, [], 0.0, added
        keys = budget.uses(move, replicas, dead)
        return reorder, brokers, keys, budget.writes.get(move.tp, 0.0), added

    def held_by_into(move: Move, added: list[int]) -> bool:
        return (
            into is not None
            and move.tp not in into.urgent
            and any(taken.into[b] >= into.per_broker for b in added)
        )

    for move in in_flight:
        taken.add(move, *involved(move))
    chosen: list[Move] = []
    for move in pending:
        if move.tp in taken.partitions:
            continue
        reorder, brokers, keys, rate, added = involved(move)
        if reorder:
            if taken.reorders >= max_reorders:
                continue
        elif (
            taken.replica_moves >= max_per_cluster
            or any(taken.load[b] >= max_per_broker for b in brokers)
            or (budget is not None and budget.holds(move, keys, taken.written))
            or held_by_into(move, added)
        ):
            continue
        taken.add(move, reorder, brokers, keys, rate, added)
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
