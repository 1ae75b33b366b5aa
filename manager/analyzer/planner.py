"""decide(snapshot) -> Decision: diagnose, plan heal or balance, check the gates, and say why.

Order of business: dead brokers are healed before anything is balanced (a cycle does one or the
other); with an own reassignment still running the planner waits (noop); the plan is checked
against the hard constraints; then every failing gate turns the decision into a refusal.
A heal never waits for the load pipeline: restoring redundancy needs no traffic figures, so
with stale loads it places replicas by size and replica count (every constraint still held)
and says so; balancing still needs fresh loads.
Pure: the same snapshot always gives the same decision.
"""

from __future__ import annotations

from dataclasses import replace

from manager.analyzer.balance import BalancePlan, plan_balance
from manager.analyzer.gates import (
    failing_gates,
    gate_budget,
    gate_plan_constraints,
)
from manager.analyzer.heal import HealPlan, ReplicaMove, plan_heal
from manager.analyzer.health import recovering
from manager.analyzer.placement_check import BrokerTotals, check_existing, check_plan
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.spread import out_of_band, plan_spread
from manager.model.decision import (
    Action,
    BrokerLoad,
    Decision,
    ElectPreferredLeader,
    PlanKind,
    Reason,
    Reassign,
)
from manager.model.reasons import AUTHORITY_CODES, ReasonCode
from manager.model.snapshot import Snapshot

MAX_BLOCKERS_LISTED = 20
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


def decide(snap: Snapshot) -> Decision:
    state = ClusterState(snap)
    before = broker_loads(state)
    gates = failing_gates(snap, state)
    health = [r for r in gates if r.code not in AUTHORITY_CODES]
    stale = [r for r in gates if r.code == "stale_load_data"]
    heal_gates = [r for r in gates if r.code != "stale_load_data"]
    over = {b: o for b in state.broker_ids if state.usable(b) and (o := state.over_limits(b))}
    if any(r.started_by_kmedic for r in snap.reassignments):
        # Our own moves are still running: plan nothing until they finish.
        blocking = heal_gates if state.dead else gates if over else health
        if blocking:
            return _refuse(None, blocking, before, before)
        return Decision(
            "noop",
            None,
            "waiting for kmedic's own reassignments to finish before planning again",
            (Reason("own_reassignment_in_progress", "a reassignment kmedic started is running"),),
            (),
            0,
            before,
            before,
        )
    totals = BrokerTotals.of(state)
    if state.dead:
        # Stale loads never hold up a heal: it places by size and count instead.
        sized = ClusterState(snap, use_loads=False) if stale else state
        # A dead broker that held no replica needs no healing (plan_heal finds nothing).
        heal = plan_heal(sized)
        if heal.moves or heal.blocked:
            return _finish_heal(snap, sized, heal, heal_gates, stale, totals, before)
    if not over:
        if health:
            return _refuse(None, health, before, before)
        spread = None if gates else _even_spread(snap, state, totals, before)
        if spread is not None:
            return spread
        summary = "every broker is alive and within its limits"
        if state.dead:
            dead = ", ".join(str(b) for b in state.dead)
            summary = f"dead brokers {dead} hold no replicas; every live broker is within limits"
        return Decision("noop", None, summary, _placement_reasons(state), (), 0, before, before)
    budget = min(
        snap.policy.max_moves_per_cycle,
        snap.policy.max_moves_per_hour - snap.recent_actions.moves_last_hour,
    )
    return _finish_balance(
        snap, state, plan_balance(state, max(budget, 0)), gates, totals, before, over
    )


def _refuse(
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


def _finish_heal(
    snap: Snapshot,
    state: ClusterState,
    plan: HealPlan,
    gates: list[Reason],
    stale: list[Reason],
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
) -> Decision:
    reasons = list(gates)
    for blocked in plan.blocked[:MAX_BLOCKERS_LISTED]:
        code: ReasonCode = (
            "no_live_replica"
            if blocked.constraint == "no_live_replica"
            else "plan_violates_constraints"
        )
        reasons.append(Reason(code, f"{blocked.message} (constraint: {blocked.constraint})"))
    if plan.blocked and plan.exact is not None:
        reasons.append(Reason("plan_violates_constraints", plan.exact))
    if len(plan.blocked) > MAX_BLOCKERS_LISTED:
        reasons.append(
            Reason(
                "plan_violates_constraints",
                f"{len(plan.blocked) - MAX_BLOCKERS_LISTED} more partitions cannot be placed",
            )
        )
    if not plan.blocked:
        changes = [(m.p, m.before, m.after) for m in plan.moves]
        reasons += gate_plan_constraints(check_plan(state, totals, changes))
        reasons += gate_budget(snap, len(plan.moves))
    after = _after_heal(state, before)
    if reasons:
        return _refuse("heal", reasons, before, after if not plan.blocked else before)
    dead = ", ".join(str(b) for b in state.dead)
    summary = (
        f"heal dead brokers {dead}: {len(plan.moves)} partitions reassigned, "
        f"{plan.bytes_to_move} bytes to copy"
    )
    info = [
        Reason("broker_dead", f"broker {b} is dead past its grace period; its replicas move")
        for b in state.dead
    ]
    if plan.exact is not None:
        info.append(Reason("heal_exact_placement", plan.exact))
    if stale:
        info.append(
            Reason(
                "heal_without_loads",
                "replicas placed by partition size and replica count, because the loads are "
                "stale: " + "; ".join(r.message for r in stale),
            )
        )
    actions = tuple(_reassign(state, m) for m in plan.moves)
    return Decision("act", "heal", summary, tuple(info), actions, plan.bytes_to_move, before, after)


def _after_heal(state: ClusterState, before: dict[int, BrokerLoad]) -> dict[int, BrokerLoad]:
    """Each broker after the heal. A heal planned without loads knows no traffic: the network
    figures stay those of ``before`` rather than showing zero."""
    after = broker_loads(state)
    if state.use_loads:
        return after
    return {
        b: replace(
            load,
            network_in=before[b].network_in,
            network_out=before[b].network_out,
            messages_in=before[b].messages_in,
            network_util=before[b].network_util,
        )
        for b, load in after.items()
    }


def _finish_balance(
    snap: Snapshot,
    state: ClusterState,
    plan: BalancePlan,
    gates: list[Reason],
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
    over: dict[int, list[str]],
    why: list[Reason] | None = None,
) -> Decision:
    after = broker_loads(state)
    reasons = list(gates)
    changes = [(m.p, m.before, m.after) for m in plan.leader_moves]
    changes += [(m.p, m.before, m.after) for m in plan.replica_moves]
    reasons += gate_plan_constraints(check_plan(state, totals, changes))
    if plan.move_count == 0:
        reasons.append(
            Reason(
                "hourly_budget_exceeded" if plan.budget_hit else "balance_infeasible",
                "no move budget is left this hour"
                if plan.budget_hit
                else "no leadership or replica move sheds load within the constraints from brokers "
                + ", ".join(f"{b} ({'/'.join(o)})" for b, o in sorted(over.items())),
            )
        )
    if reasons:
        return _refuse("balance", reasons, before, after)
    info = [
        Reason("over_limit", f"broker {b} is over its {' and '.join(o)} limit")
        for b, o in sorted(over.items())
    ]
    info += why or []
    for b, o in sorted(plan.still_over.items()):
        info.append(
            Reason("limits_unresolved", f"broker {b} stays over its {' and '.join(o)} limit")
        )
    if plan.budget_hit:
        info.append(Reason("budget_truncated", "the plan stops at the move budget"))
    info += _placement_reasons(state)
    actions: list[Action] = []
    for lm in plan.leader_moves:
        topic, number = state.topic[lm.p], state.number[lm.p]
        if lm.before[0] != lm.leader:
            actions.append(Reassign(topic, number, lm.before, lm.after))
        actions.append(ElectPreferredLeader(topic, number, lm.leader))
    actions += [_reassign(state, m) for m in plan.replica_moves]
    what = f"balance {len(over)} brokers over their limits" if over else "even out network load"
    summary = (
        f"{what}: {len(plan.leader_moves)} leadership "
        f"moves, {len(plan.replica_moves)} replica moves, {plan.bytes_to_move} bytes to copy; "
        f"busiest broker at {plan.busiest_ratio:.2f}x the average network load"
    )
    return Decision(
        "act", "balance", summary, tuple(info), tuple(actions), plan.bytes_to_move, before, after
    )


def _even_spread(
    snap: Snapshot, state: ClusterState, totals: BrokerTotals, before: dict[int, BrokerLoad]
) -> Decision | None:
    """Even out a cluster with no broker over a limit; None when it is even, or it is no time
    to (a broker dead or just back, moves running, partitions catching up)."""
    policy = snap.policy
    if not policy.even_spread or state.dead or recovering(snap) or snap.reassignments:
        return None
    if not all(state.in_sync(p) for p in range(state.partition_count)):
        return None
    uneven = out_of_band(state, policy.even_spread_threshold)
    if not uneven:
        return None
    told = [Reason("uneven_spread", o.sentence()) for o in uneven[:MAX_EXAMPLES]]
    if len(uneven) > MAX_EXAMPLES:
        told.append(Reason("uneven_spread", f"and {len(uneven) - MAX_EXAMPLES} more"))
    budget = max(
        0,
        min(
            policy.max_moves_per_cycle,
            policy.max_moves_per_hour - snap.recent_actions.moves_last_hour,
        ),
    )
    plan = plan_spread(state, policy.even_spread_threshold, budget)
    if not plan.moves and {o.dimension for o in uneven} == {"network"}:
        # Network alone: the evenness phase of balance moves leadership first.
        network = plan_balance(state, budget)
        if network.move_count:
            return _finish_balance(snap, state, network, [], totals, before, {}, told)
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
        return _refuse("balance", problems, before, after)
    if plan.budget_hit:
        told.append(Reason("budget_truncated", "the plan stops at the move budget"))
    summary = (
        f"even out an uneven cluster: {len(plan.moves)} replica moves, {plan.bytes_to_move} "
        f"bytes to copy ({uneven[0].sentence()})"
    )
    actions = tuple(_reassign(state, m) for m in plan.moves)
    return Decision(
        "act", "balance", summary, tuple(told), actions, plan.bytes_to_move, before, after
    )


def _reassign(state: ClusterState, m: ReplicaMove) -> Reassign:
    return Reassign(state.topic[m.p], state.number[m.p], m.before, m.after)


def _placement_reasons(state: ClusterState) -> tuple[Reason, ...]:
    """Existing placement violations, reported every cycle (not repaired)."""
    problems = check_existing(state)
    if not problems:
        return ()
    shown = "; ".join(problems[:MAX_EXAMPLES])
    more = f"; and {len(problems) - MAX_EXAMPLES} more" if len(problems) > MAX_EXAMPLES else ""
    return (
        Reason(
            "placement_violation",
            f"{len(problems)} placement policy violations: {shown}{more}",
        ),
    )
