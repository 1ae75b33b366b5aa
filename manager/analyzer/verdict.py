"""Pieces every decision is built from: the per-broker loads, a refusal (or a wait), a
reassignment action, and the move budget left."""

from __future__ import annotations

from manager.analyzer.heal import ReplicaMove
from manager.analyzer.placement_state import ClusterState
from manager.model.decision import BrokerLoad, Decision, PlanKind, Reason, Reassign
from manager.model.snapshot import Snapshot

MAX_EXAMPLES = 5


def broker_loads(state: ClusterState) -> dict[int, BrokerLoad]:
    return {
        b: BrokerLoad(
            network_in=state.load_in[b],
            network_out=state.load_out[b],
            messages_in=state.load_msgs[b],
            disk_bytes=state.load_disk[b],
            replicas=state.count[b],
            leaders=state.leaders[b],
            network_util=state.net_util(b),
        )
        for b in state.broker_ids
    }


def refuse(
    kind: PlanKind | None,
    reasons: list[Reason],
    before: dict[int, BrokerLoad],
    after: dict[int, BrokerLoad],
) -> Decision:
    codes = sorted({r.code for r in reasons})
    if codes == ["dead_within_grace"]:
        # Only the grace period stands in the way: wait for it (audited, counted, no page).
        summary = "; ".join(r.message for r in reasons)
        return Decision("wait", kind, summary, tuple(reasons), (), 0, before, after)
    summary = f"refusing to act: {', '.join(codes)}"
    return Decision("refuse", kind, summary, tuple(reasons), (), 0, before, after)


def reassign(state: ClusterState, m: ReplicaMove) -> Reassign:
    return Reassign(state.topic[m.p], state.number[m.p], m.before, m.after)


def move_budget(snap: Snapshot) -> int:
    """Moves this cycle may still start: the per-cycle cap, or what the hour has left."""
    policy = snap.policy
    left = policy.max_moves_per_hour - snap.recent_actions.moves_last_hour
    return max(0, min(policy.max_moves_per_cycle, left))
