"""Heal: give every replica on a dead broker a new home, moving nothing else.

Partitions are handled largest first (then by name, so the plan is deterministic). Each dead
replica goes to the best eligible broker (see ``manager.analyzer.placement``), and the load it
brings is reserved on that broker at once, so one plan never overloads a target. All or nothing: if
any replica finds no eligible broker the result carries every blocker and no moves are used.

The new replica takes the dead one's place in the list; the current leader (alive, or the
partition would be offline) is then put first, so the preferred leader stays where traffic
already is and no election is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from manager.analyzer.placement import Blocked, LoadOrder, choose_target, diagnose, rack_shortfall
from manager.analyzer.placement_state import ClusterState


@dataclass(frozen=True, slots=True)
class ReplicaMove:
    """One reassignment: partition index and its replica list before and after."""

    p: int
    before: tuple[int, ...]
    after: tuple[int, ...]


@dataclass
class HealPlan:
    moves: list[ReplicaMove] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    bytes_to_move: int = 0


def plan_heal(state: ClusterState) -> HealPlan:
    """Reassign every replica of the dead brokers; ``blocked`` non-empty means refuse."""
    dead = frozenset(state.dead)
    plan = HealPlan()
    if not dead:
        return plan
    affected = [p for p, reps in enumerate(state.replicas) if not dead.isdisjoint(reps)]
    affected.sort(key=lambda p: (-state.size[p], state.topic[p], state.number[p]))
    order = LoadOrder(state)
    for p in affected:
        blocker = _heal_partition(state, order, p, dead, plan)
        if blocker is not None:
            plan.blocked.append(blocker)
    if plan.blocked:
        plan.moves.clear()
        plan.bytes_to_move = 0
    return plan


def _heal_partition(
    state: ClusterState, order: LoadOrder, p: int, dead: frozenset[int], plan: HealPlan
) -> Blocked | None:
    before = state.replicas[p]
    name = state.name(p)
    leader = state.leader[p]
    if leader is None or leader in dead:
        return Blocked(
            "no_live_replica",
            f"{name} has no live leader to copy from; healing it needs an unclean election",
        )
    if leader in state.frozen:
        return Blocked("maintenance", f"{name} is led by a broker in maintenance")
    d_in = state.bin[p]
    for gone in before:
        if gone not in dead:
            continue
        others = tuple(x for x in state.replicas[p] if x != gone and x not in dead)
        target = choose_target(state, order, state.topic[p], state.size[p], others, d_in, 0.0)
        if target is None:
            return diagnose(state, p, others, d_in, 0.0)
        state.move_replica(p, gone, target)
        order.update(target)
    after = state.replicas[p]
    short = rack_shortfall(state, after)
    if short is not None:
        return Blocked("min_racks", f"{name}: the live brokers allow only a set that {short}")
    if after[0] != leader:
        after = (leader, *(x for x in after if x != leader))
        state.set_replicas(p, after)
    plan.moves.append(ReplicaMove(p, before, after))
    plan.bytes_to_move += state.size[p] * sum(1 for x in before if x in dead)
    return None
