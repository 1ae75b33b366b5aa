"""Placement repair: partitions that break the placement policy as they are - two replicas in
one rack although enough racks are live, fewer racks than an enforced ``min_racks``, a replica
outside the topic's isolation group - get one replica moved to where the policy wants it.

Per partition, the replica to move is one outside the isolation group if any, else one of
those sharing a rack (a follower before the leader, the later in the list first); its new
broker is the one a heal would choose (``choose_target``: inside the group, a new rack first,
then the least loaded, every limit held). A move is kept only if it fixes what was wrong
without breaking anything else; partitions that no move fixes are left alone and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from manager.analyzer.moves import ReplicaMove
from manager.analyzer.placement import LoadOrder, choose_target
from manager.analyzer.placement_check import Violation, violations
from manager.analyzer.placement_state import ClusterState
from manager.model.racks import min_rack_units, spread


@dataclass
class RepairPlan:
    moves: list[ReplicaMove] = field(default_factory=list)
    bytes_to_move: int = 0
    fixed: list[Violation] = field(default_factory=list)
    left: list[Violation] = field(default_factory=list)
    budget_hit: bool = False


def plan_repair(state: ClusterState, max_moves: int) -> RepairPlan:
    plan = RepairPlan()
    order = LoadOrder(state)
    seen: set[int] = set()
    for v in violations(state):
        if v.p in seen:
            plan.left.append(v)  # one move per partition per plan; the next cycle goes on
            continue
        seen.add(v.p)
        if len(plan.moves) >= max_moves:
            plan.budget_hit = True
            plan.left.append(v)
            continue
        move = _repair(state, order, v)
        if move is None:
            plan.left.append(v)
            continue
        plan.moves.append(move)
        plan.bytes_to_move += state.size[v.p]
        plan.fixed.append(v)
    return plan


def _repair(state: ClusterState, order: LoadOrder, v: Violation) -> ReplicaMove | None:
    p = v.p
    before = state.replicas[p]
    if p in state.reassigning or not state.in_sync(p) or state.leader[p] is None:
        return None
    gone = _misplaced(state, p, v.rule)
    if gone is None or not state.usable(gone):
        return None
    others = tuple(b for b in before if b != gone)
    lead = state.leader[p] == gone
    d_out = state.bout[p] if lead else 0.0
    target = choose_target(state, order, state.topic[p], state.size[p], others, state.bin[p], d_out)
    if target is None:
        return None
    after = tuple(target if b == gone else b for b in before)
    if not _better(state, p, before, after):
        return None
    state.move_replica(p, gone, target)
    order.update(gone)
    order.update(target)
    return ReplicaMove(p, before, state.replicas[p])


def _misplaced(state: ClusterState, p: int, rule: str) -> int | None:
    """The replica to move: outside the group first; else a follower sharing a rack."""
    reps = state.replicas[p]
    sets = state.allowed_sets(p)
    if rule == "isolation" and sets is not None:
        allowed = frozenset().union(*sets)
        outside = [b for b in reps if b not in allowed]
        return outside[-1] if outside else None
    unit = {b: state.loc[b].top if state.kind == "zone" else state.loc[b].rack for b in reps}
    shared = [b for b in reps if sum(1 for x in reps if unit[x] == unit[b]) > 1]
    followers = [b for b in shared if b != state.leader[p]]
    return (followers or shared)[-1] if shared else None


def _better(state: ClusterState, p: int, before: tuple[int, ...], after: tuple[int, ...]) -> bool:
    """Rack spread no worse, and more of the units the policy counts (zones under ``zone``,
    racks otherwise) unless the move brings a replica home into its isolation group: a move
    that only adds a rack inside the same zone fixes nothing a zone policy asks for."""
    locs = state.loc
    if spread(locs[b] for b in after) < spread(locs[b] for b in before):
        return False
    sets = state.allowed_sets(p)
    if sets is not None:
        allowed = frozenset().union(*sets)
        inside_before = sum(1 for b in before if b in allowed)
        inside_after = sum(1 for b in after if b in allowed)
        if inside_after < inside_before:
            return False
        if inside_after > inside_before:
            return True
    units_before = min_rack_units((locs[b] for b in before), state.kind)
    return min_rack_units((locs[b] for b in after), state.kind) > units_before
