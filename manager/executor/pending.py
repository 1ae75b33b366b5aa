"""What becomes of a move not yet running, decided from one step's read alone (pure).

A pending move is one submitted and not started, or one whose reassignment request went
unanswered (``MoveState.unanswered``: Kafka may have taken it or not). At each step, in this
order:

- its partition is gone, or a destination is not alive, or the move adds a replica to or
  copies from a broker the watchdog excluded: it **fails** (the planner replans it); when
  Kafka runs the very reassignment its unanswered request asked for, that is cancelled too;
- Kafka runs a reassignment of the partition: **adopted** if it heads where this move goes
  (a plan adopted after a failover, or the unanswered request taken), else it **fails**
  rather than interfere;
- its replicas are already the target, in order: **in place** (it still gets the preferred
  leader election a completed move gets);
- its replicas are the target's and more, with no reassignment listed: **settling** - the
  read shows a reassignment that just ended, by a broker whose metadata still lists the
  replicas it removed (kmedic never plans a move that drops a replica without one), so it is
  not asked again while that lasts (found by the soak: a leader adopting the plan at a broker
  restart asked again for a reassignment Kafka had just finished, and audited a second start);
- else it **waits** for a batch (``executor.batches`` decides when it starts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from manager.executor.move_state import ClusterView, MoveState
from manager.model.moves import Move

Fate = Literal["fail", "adopt", "in_place", "settling", "wait"]


@dataclass(frozen=True)
class Verdict:
    fate: Fate
    reason: str = ""  # why it fails
    cancel: bool = False  # Kafka runs this move's own (unanswered) request: cancel it


def heading_to(ongoing: Mapping[str, list[int]]) -> set[int]:
    """The replicas a running reassignment ends with."""
    removing = ongoing.get("removing_replicas", [])
    return {b for b in ongoing.get("replicas", []) if b not in removing}


def judge(move: Move, unanswered: bool, view: ClusterView, excluded: Collection[int]) -> Verdict:
    current = view.replicas.get(move.tp)
    if current is None:
        return Verdict("fail", f"partition {move.key} does not exist")
    ongoing = view.ongoing.get(move.tp)
    ours = unanswered and ongoing is not None and heading_to(ongoing) == set(move.target)
    dead = [b for b in move.target if b not in view.live_brokers]
    if dead:
        return Verdict("fail", f"destination broker {dead[0]} is not alive", cancel=ours)
    # A new replica copies from the leader: a move to or from a hung broker stalls.
    adds = set(move.target) - set(current)
    hung = [b for b in (*adds, view.leaders.get(move.tp)) if adds and b in excluded]
    if hung:  # planned before a move to it stalled: the replan goes elsewhere
        return Verdict("fail", f"broker {hung[0]} stalled a move", cancel=ours)
    if ongoing is not None:
        if heading_to(ongoing) != set(move.target):
            elsewhere = sorted(heading_to(ongoing))
            return Verdict("fail", f"{move.key} is already being reassigned to {elsewhere}")
        return Verdict("adopt")
    if current == move.target:
        return Verdict("in_place")
    if set(move.target) < set(current):
        return Verdict("settling")
    return Verdict("wait")


def note_settling(state: MoveState, said: Verdict, now: float) -> None:
    """Since when ``state`` has read as settling; forgotten once it does not."""
    if said.fate != "settling":
        state.settling_since = None
    elif state.settling_since is None:
        state.settling_since = now


def may_start(state: MoveState, now: float, bound_s: float) -> bool:
    """A pending move may be asked for: not while its reads show a reassignment ending, for up
    to ``bound_s`` (asked after that, should the read never settle)."""
    since = state.settling_since
    return state.status == "pending" and (since is None or now - since > bound_s)
