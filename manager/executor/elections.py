"""A move's last step: its preferred leader leads.

Once a move's replicas are in place, the move is done when its first replica leads. When it
does not, a preferred leader election is asked for (``AdminCalls.elect_preferred``: only when
that broker is in the ISR, since Kafka would refuse it), and whether it took is read on a
later step: Kafka answering without an error is no proof, and broker metadata may lag behind
the controller for ``settle_s``. What came of it is said in words, in the move's
``preferred_leader_election`` detail. A move that only reorders the replicas is there to move
leadership (a demote): when its preferred leader does not take over, it fails with that
sentence. A move that copied data is done either way: redundancy is restored.
"""

from __future__ import annotations

from collections.abc import Callable

from manager.executor.move_state import ClusterView, Election, MoveState, Status
from manager.model.moves import Move

Ask = Callable[[Move, tuple[int, ...]], Election]


def settle_leadership(
    state: MoveState, view: ClusterView, now: float, ask: Ask | None, settle_s: float
) -> tuple[Status, str | None] | None:
    """How the move ends (its status, and why it failed), or None while its election is
    being judged (the move stays in flight). ``ask`` None: no election (the executor's
    ``elect_preferred_leaders`` is off), the move is done as its replicas are."""
    move = state.move
    preferred, leader = move.target[0], view.leaders.get(move.tp)
    if ask is None or leader == preferred:
        if state.election is not None:
            state.details["preferred_leader_election"] = f"broker {preferred} leads"
        return "completed", None
    if state.election is None:
        state.election = ask(move, view.isr.get(move.tp, ()))
        state.elected_at = now
        if state.election.asked:
            if state.status == "pending":  # in place already: its election is its move
                state.status, state.started_at = "in_flight", now
            return None
    elif state.election.asked:
        if now - state.elected_at < settle_s:
            return None
        state.election = Election(
            False, f"Kafka took the election without an error, but broker {leader} leads"
        )
    said = state.election.said
    if set(state.original or move.target) == set(move.target):
        return "failed", f"broker {preferred} did not take leadership: {said}"
    state.details["preferred_leader_election"] = said
    return "completed", None
