"""Goals beyond healing and limits, for a quiet cluster only: repair placement violations
(when ``repair_placement`` is on), then even out an uneven cluster (``even_spread``)."""

from __future__ import annotations

from manager.analyzer.gates import gate_plan_constraints
from manager.analyzer.health import recovering
from manager.analyzer.placement_check import BrokerTotals, check_plan, violations
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.repair import plan_repair
from manager.analyzer.spread import OutOfBand, plan_spread
from manager.analyzer.verdict import MAX_EXAMPLES, broker_loads, move_budget, reassign, refuse
from manager.model.decision import BrokerLoad, Decision, Reason
from manager.model.snapshot import Snapshot


def quiet(snap: Snapshot, state: ClusterState) -> bool:
    """No broker dead or just back, no reassignment running, every partition in sync: the
    only time to move data that no failure or limit asks to move."""
    if state.dead or recovering(snap) or snap.reassignments:
        return False
    return all(state.in_sync(p) for p in range(state.partition_count))


def repair_decision(
    snap: Snapshot, state: ClusterState, totals: BrokerTotals, before: dict[int, BrokerLoad]
) -> Decision | None:
    """Move replicas that break the placement policy; None when off or nothing is fixable."""
    if not snap.policy.repair_placement:
        return None
    plan = plan_repair(state, move_budget(snap))
    if not plan.moves:
        return None
    changes = [(m.p, m.before, m.after) for m in plan.moves]
    problems = gate_plan_constraints(check_plan(state, totals, changes))
    after = broker_loads(state)
    if problems:
        return refuse("balance", problems, before, after)
    told = [Reason("placement_repair", v.message) for v in plan.fixed[:MAX_EXAMPLES]]
    if len(plan.fixed) > MAX_EXAMPLES:
        more = f"and {len(plan.fixed) - MAX_EXAMPLES} more partitions repaired"
        told.append(Reason("placement_repair", more))
    # What still breaks the policy once the plan is done: partitions left alone, and those a
    # single move improves but does not fix (three replicas in one rack take two moves).
    remaining = violations(state)
    if remaining:
        shown = "; ".join(v.message for v in remaining[:MAX_EXAMPLES])
        told.append(
            Reason("placement_violation", f"{len(remaining)} left for later or unfixable: {shown}")
        )
    if plan.budget_hit:
        told.append(Reason("budget_truncated", "the plan stops at the move budget"))
    summary = (
        f"repair placement: {len(plan.moves)} replica moves, {plan.bytes_to_move} bytes to copy "
        f"({len(plan.fixed)} partitions break the placement policy)"
    )
    actions = tuple(reassign(state, m) for m in plan.moves)
    return Decision(
        "act",
        "balance",
        summary,
        tuple(told),
        actions,
        plan.bytes_to_move,
        before,
        after,
        len(remaining),
    )


def spread_decision(
    snap: Snapshot,
    state: ClusterState,
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
    uneven: list[OutOfBand],
) -> Decision:
    """Even out the disk shares and replica counts of a cluster found ``uneven``; a noop that
    says why when no move can."""
    told = [Reason("uneven_spread", o.sentence()) for o in uneven[:MAX_EXAMPLES]]
    if len(uneven) > MAX_EXAMPLES:
        told.append(Reason("uneven_spread", f"and {len(uneven) - MAX_EXAMPLES} more"))
    plan = plan_spread(state, snap.policy.even_spread_threshold, move_budget(snap))
    if not plan.moves:
        why = (
            "no move budget is left this hour"
            if plan.budget_hit
            else ("no replica move narrows it within the placement constraints and limits")
        )
        summary = f"the cluster is uneven, and stays so: {why}"
        return Decision("noop", None, summary, tuple(told), (), 0, before, before)
    changes = [(m.p, m.before, m.after) for m in plan.moves]
    problems = gate_plan_constraints(check_plan(state, totals, changes))
    after = broker_loads(state)
    if problems:
        return refuse("balance", problems, before, after)
    if plan.budget_hit:
        told.append(Reason("budget_truncated", "the plan stops at the move budget"))
    summary = (
        f"even out an uneven cluster: {len(plan.moves)} replica moves, {plan.bytes_to_move} "
        f"bytes to copy ({uneven[0].sentence()})"
    )
    actions = tuple(reassign(state, m) for m in plan.moves)
    return Decision(
        "act", "balance", summary, tuple(told), actions, plan.bytes_to_move, before, after
    )
