"""How long a heal would take, from the loss to fully replicated (pure).

The grace period, then the copy. The copy cannot be shorter than any of these, and the
estimate is the longest (each is a bound of the executor's own schedule, so the longest is
close to it when one resource dominates, as in a heal it does):

- the cluster: every byte, copied by at most ``max_moves_in_flight`` moves at once;
- each broker: the bytes of the moves it takes part in (sends, receives, or is a replica of),
  at most ``max_moves_per_broker`` at once;
- under the adaptive throttle, each broker: the bytes it receives, at most
  ``max_moves_into_broker`` copies at once;
- each broker's fixed throttle: the bytes it receives, and those its leaders send, at that rate;
- the largest move alone.

A move copies at ``move_bytes_per_s``: the rate measured on this cluster's last plans (per
move in flight) when there is one, else an assumed rate (``readiness.assumed_move_bytes_per_s``).
Each round of moves also costs ``move_overhead_s`` whatever its size: the reassignment, the
new replica joining the ISR, the executor seeing it done and starting the next.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from manager.model.decision import Action
from manager.model.moves import Move
from manager.model.snapshot import Snapshot
from manager.model.topics import topics_table

# A round of tiny moves on the local cluster took 0.7 s (13 moves in 7 rounds, 4.9 s past the
# grace: tests/integration/test_readiness_cluster.py); 1 s, with some margin.
MOVE_OVERHEAD_S = 1.0


@dataclass(frozen=True)
class Pace:
    """What a heal's copy runs at: the executor's limits and the per-move rate."""

    move_bytes_per_s: float
    rate_measured: bool  # False: the assumed rate (no plan measured since this manager started)
    max_moves_per_broker: int = 5
    max_moves_in_flight: int = 10
    throttle_bytes_per_s: int | None = None  # a fixed throttle; adaptive or none: None
    max_moves_into_broker: int | None = None  # the adaptive throttle's; else None: no limit
    move_overhead_s: float = MOVE_OVERHEAD_S

    def sentence(self) -> str:
        source = "measured" if self.rate_measured else "assumed"
        return f"{self.move_bytes_per_s / 1e6:.1f} MB/s per move ({source})"


def heal_seconds(snap: Snapshot, actions: Iterable[Action], pace: Pace) -> float:
    """Seconds from the loss to fully replicated for a heal of ``actions`` planned on ``snap``
    (the snapshot with the loss in it): the grace period and the copy."""
    return snap.policy.dead_grace_ms / 1000 + copy_seconds(snap, actions, pace)


def host_lost_heal_seconds(snap: Snapshot, actions: Iterable[Action], pace: Pace) -> float:
    """The same when the broker's host is lost with it, counted from the moment its agent's
    next record was due (up to the agents' ``interval_s`` after the loss): healed once the
    confirmation has passed too (manager.model.death), not after the grace."""
    confirm = snap.policy.wait_or_heal.host_lost_confirm_ms / 1000
    return confirm + copy_seconds(snap, actions, pace)


def copy_seconds(snap: Snapshot, actions: Iterable[Action], pace: Pace) -> float:
    table = topics_table(snap.topics)  # not every partition: a heal moves few of them
    dead = {b.id for b in snap.brokers if not b.alive}
    total, largest, moves = 0, 0, 0
    involved_bytes: Counter[int] = Counter()
    involved_moves: Counter[int] = Counter()
    received: Counter[int] = Counter()
    received_moves: Counter[int] = Counter()
    sent: Counter[int] = Counter()
    for action in actions:
        if not isinstance(action, Move):
            continue
        row = table.row_of(action.topic, action.partition)
        added = set(action.target) - set(action.before)
        if row is None or not added or table.size is None:
            continue
        size = int(table.size[row])
        moves += 1
        total += size * len(added)
        largest = max(largest, size)
        for broker in (added | set(action.before)) - dead:
            involved_bytes[broker] += size * len(added)
            involved_moves[broker] += 1
        for broker in added:
            received[broker] += size
            received_moves[broker] += 1
        leader = int(table.leader[row])
        if leader >= 0:
            sent[leader] += size * len(added)
    if not moves:
        return 0.0
    rate = pace.move_bytes_per_s
    bounds = [
        total / (min(pace.max_moves_in_flight, moves) * rate),
        max(involved_bytes.values(), default=0) / (pace.max_moves_per_broker * rate),
        largest / rate,
    ]
    if pace.throttle_bytes_per_s is not None:
        busiest = max([*received.values(), *sent.values()])
        bounds.append(busiest / pace.throttle_bytes_per_s)
    per_broker = [math.ceil(n / pace.max_moves_per_broker) for n in involved_moves.values()]
    into = pace.max_moves_into_broker
    if into is not None:
        bounds.append(max(received.values(), default=0) / (into * rate))
        per_broker += [math.ceil(n / into) for n in received_moves.values()]
    rounds = max(math.ceil(moves / pace.max_moves_in_flight), max(per_broker, default=1))
    return max(bounds) + rounds * pace.move_overhead_s
