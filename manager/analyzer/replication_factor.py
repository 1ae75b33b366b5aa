"""Raise a topic's replication factor (pure): each of its partitions with fewer replicas than
wanted gains them where a heal would place a lost one (``manager.analyzer.placement``: its
isolation group, anti-affinity, a new failure domain and rack first, then the least loaded
broker with room), moving nothing else. New replicas go last in the list, so the preferred
leader stays.

All or nothing, like a drain: a partition that cannot gain every replica it needs (no live
leader to copy from, someone else's reassignment, no broker that fits) blocks the plan, with
why. Partitions are taken largest first (then by number), up to ``budget`` of them; the rest
follow in later plans. A partition already at or above the factor is left as it is: this
never lowers one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from manager.analyzer.moves import ReplicaMove
from manager.analyzer.placement import Blocked, LoadOrder, choose_target, diagnose
from manager.analyzer.placement_state import ClusterState


@dataclass
class RaisePlan:
    short: int = 0  # partitions below the factor
    moves: list[ReplicaMove] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    bytes_to_move: int = 0


def below_factor(state: ClusterState, topic: str, factor: int) -> list[int]:
    """The partitions of ``topic`` with fewer than ``factor`` replicas."""
    return [p for p, t in enumerate(state.topic) if t == topic and len(state.replicas[p]) < factor]


def plan_raise(state: ClusterState, topic: str, factor: int, budget: int) -> RaisePlan:
    short = below_factor(state, topic, factor)
    short.sort(key=lambda p: (-state.size[p], state.number[p]))
    plan = RaisePlan(short=len(short))
    order = LoadOrder(state)
    for p in short[:budget]:
        blocker = _raise(state, order, p, factor, plan)
        if blocker is not None:
            plan.blocked.append(blocker)
    if plan.blocked:
        for move in reversed(plan.moves):
            for b in move.after[len(move.before) :]:
                state.drop_replica(move.p, b)
                order.update(b)
        plan.moves.clear()
        plan.bytes_to_move = 0
    return plan


def _raise(
    state: ClusterState, order: LoadOrder, p: int, factor: int, plan: RaisePlan
) -> Blocked | None:
    name, leader = state.name(p), state.leader[p]
    if leader is None or not state.alive[leader]:
        return Blocked("no_live_replica", f"{name} has no live leader to copy from")
    if p in state.foreign:
        return Blocked(
            "foreign_reassignment",
            f"{name} is being reassigned by someone else: its factor rises once that ends",
        )
    if leader in state.kept_out.stalled:
        return Blocked(
            "stalled_leader", f"{name} is led by broker {leader}, on which a move stalled"
        )
    before = state.replicas[p]
    added: list[int] = []
    while len(state.replicas[p]) < factor:
        others = state.replicas[p]
        size, d_in = state.size[p], state.bin[p]
        target = choose_target(state, order, state.topic[p], size, others, d_in, 0.0)
        if target is None:
            blocked = diagnose(state, p, others, d_in, 0.0)
            for b in reversed(added):
                state.drop_replica(p, b)
                order.update(b)
            return blocked
        state.add_replica(p, target)
        order.update(target)
        added.append(target)
    plan.moves.append(ReplicaMove(p, before, state.replicas[p]))
    plan.bytes_to_move += state.size[p] * len(added)
    return None
