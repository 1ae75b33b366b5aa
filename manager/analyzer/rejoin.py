"""Rejoin: preferred leadership back to a broker that came back, once it has caught up.

While a broker is down its partitions are led elsewhere. When it comes back (within the
recovery window: ``under_replication.recovering``), its replicas first catch up from their
leaders; a leadership handed back before then lands on a replica that is in the ISR but still
busy copying, beside every client that follows it. So its preferred leaderships (the partitions
that list it first) return only once ``policy.rejoin.in_sync_share`` of all its replicas are in
their ISR, ``policy.rejoin.leaders_per_cycle`` at a time, and the internal topics (named
``__...``: consumer offsets, transactions) last, when every client topic already has its
leader back. Each goes only to the broker in the ISR, where it is the preferred replica, so no
replica list changes: a preferred election.

Its copies are throttled meanwhile (``catch_ups``): a broker that returns after a while, or
with an empty disk, fetches everything it missed as fast as its leaders answer, beside every
client those leaders serve. Each partition it is behind on is handed to the executor as a
catch-up, throttled like a move's copy until the broker is in its ISR. The throttle is armed
while the broker is still down within its grace, on the leaders' side (a broker's own rate
waits until it is back), so that its first fetch is already held: a returning broker starts
fetching before any cycle sees it back. Kafka throttles only replicas outside the ISR, so the
armed throttle holds nothing else. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from manager.analyzer.health import in_grace
from manager.analyzer.moves import LeaderMove
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.under_replication import recovering
from manager.model.moves import CatchUp
from manager.model.policy import RejoinPolicy
from manager.model.snapshot import Snapshot

INTERNAL_PREFIX = "__"


@dataclass(frozen=True)
class Rejoining:
    """One broker that came back: how far it has caught up, and what it may lead again."""

    broker: int
    in_sync: int  # its replicas in their partition's ISR
    replicas: int  # its replicas
    waiting: tuple[int, ...]  # partitions it prefers, in sync, led elsewhere: in handing order

    @property
    def share(self) -> float:
        return self.in_sync / self.replicas if self.replicas else 1.0

    def ready(self, policy: RejoinPolicy) -> bool:
        return self.share >= policy.in_sync_share

    def figures(self) -> str:
        return f"{self.in_sync} of its {self.replicas} replicas in sync ({self.share:.0%})"


def rejoining(state: ClusterState, broker: int) -> Rejoining:
    """``broker``'s catching up, from the index: its replicas in sync, and its preferred
    leaderships led elsewhere, client topics first, each in topic and partition order."""
    on = state.partitions_on(broker)
    in_sync = sum(1 for p in on if broker in state.isr[p])
    waiting = [
        p
        for p in on
        if state.replicas[p][0] == broker
        and broker in state.isr[p]
        and state.leader[p] not in (broker, None)
    ]
    waiting.sort(key=lambda p: (is_internal(state.topic[p]), state.topic[p], state.number[p]))
    return Rejoining(broker, in_sync, len(on), tuple(waiting))


def is_internal(topic: str) -> bool:
    """Kafka's own topics (``__consumer_offsets``, ``__transaction_state``) and others named
    that way: every group's and transaction's coordinator moves with their leadership."""
    return topic.startswith(INTERNAL_PREFIX)


def hand_back(state: ClusterState, rejoined: Rejoining, max_moves: int) -> list[LeaderMove]:
    """The next batch of ``rejoined``'s preferred leaderships (at most ``max_moves``), applied
    to ``state``: an election each, no replica list changed. A leadership whose traffic the
    broker has no room for stays where it is (a balance may move it later). A batch is of client
    topics or of internal ones, never both: the internal ones go in a later batch, once no client
    leadership that fits is waiting."""
    moves: list[LeaderMove] = []
    broker = rejoined.broker
    clients = False  # a client leadership is in this batch
    for p in rejoined.waiting:  # client topics first
        internal = is_internal(state.topic[p])
        if len(moves) >= max_moves or (clients and internal):
            break
        if not state.fits(broker, 0.0, state.bout[p], 0.0, adds_replica=False):
            continue
        replicas = state.replicas[p]
        state.move_leader(p, broker)
        moves.append(LeaderMove(p, replicas, replicas, broker))
        clients = clients or not internal
    return moves


@dataclass(frozen=True)
class CatchUps:
    """The copies brokers back from a restart, or down within their grace, make (or will
    make) into their replicas: each partition once, and where those brokers stand."""

    partitions: tuple[CatchUp, ...] = ()
    away: frozenset[int] = frozenset()  # down within their grace: armed for their return
    down: frozenset[int] = frozenset()  # every broker down now

    def behind(self) -> dict[int, list[str]]:
        """Each broker behind, and the partitions ("topic:partition") it is behind on."""
        found: dict[int, list[str]] = {}
        for c in self.partitions:
            for broker in c.behind:
                found.setdefault(broker, []).append(c.key)
        return found


def catch_ups(snap: Snapshot) -> CatchUps:
    """The partitions brokers back from a restart (``recovering``), or down within their grace
    (``in_grace``: they may come back), are behind on: a replica outside the ISR of a
    partition whose leader serves. In topic and partition order; none with
    ``policy.rejoin.throttle_catch_up`` off."""
    down = frozenset(b.id for b in snap.brokers if not b.alive)
    if not snap.policy.rejoin.throttle_catch_up:
        return CatchUps(down=down)
    away = frozenset(in_grace(snap))
    back = recovering(snap) | away
    table = snap.topics.table
    found: dict[tuple[str, int], CatchUp] = {}
    for broker in sorted(back):
        for part in table.hosted_by(broker):
            behind = tuple(b for b in part.replicas if b in back and b not in part.isr)
            if behind and part.leader >= 0 and part.leader in part.isr:
                tp = (part.topic, part.partition)
                found[tp] = CatchUp(part.topic, part.partition, part.replicas, behind)
    return CatchUps(tuple(found[tp] for tp in sorted(found)), away, down)
