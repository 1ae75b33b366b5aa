"""decide(snapshot) -> Decision: diagnose, plan heal or balance, check the gates, and say why.

Order of business: dead brokers are healed before anything is balanced (a cycle does one or the
other); with an own reassignment still running the planner waits (noop); the plan is checked
against the hard constraints; then every failing gate turns the decision into a refusal.
A heal never waits for the load pipeline: restoring redundancy needs no traffic figures, so
with stale loads it places replicas by size and replica count (every constraint still held)
and says so; balancing still needs fresh loads. With nothing dead and nobody over a limit, a
quiet cluster (nothing just back, no move running, everything in sync) may still get placement
repairs (``repair_placement``) or an even-spread balance (``even_spread``): ``goals``.
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
from manager.analyzer.goals import quiet, repair_decision, spread_decision
from manager.analyzer.heal import HealPlan, plan_heal
from manager.analyzer.placement_check import BrokerTotals, check_existing, check_plan
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.requests import request_decision
from manager.analyzer.spread import out_of_band
from manager.analyzer.verdict import MAX_EXAMPLES, broker_loads, move_budget, reassign, refuse
from manager.model.decision import (
    Action,
    BrokerLoad,
    Decision,
    ElectPreferredLeader,
    Reason,
    Reassign,
)
from manager.model.reasons import AUTHORITY_CODES, ReasonCode
from manager.model.snapshot import Snapshot

MAX_BLOCKERS_LISTED = 20


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
        blocking = heal_gates if state.dead or state.offline else gates if over else health
        if blocking:
            return refuse(None, blocking, before, before)
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
    if state.dead or state.offline:
        # Stale loads never hold up a heal: it places by size and count instead.
        sized = ClusterState(snap, use_loads=False) if stale else state
        # A dead broker that held no replica needs no healing (plan_heal finds nothing).
        heal = plan_heal(sized)
        if heal.moves or heal.blocked:
            return _finish_heal(snap, sized, heal, heal_gates, stale, totals, before)
    if snap.requests:
        # The oldest unfinished operator request; a drain or demote, like a heal, does not
        # wait for loads.
        request = snap.requests[0]
        applies = gates if request.kind == "fill" else heal_gates
        drain_sized = request.kind == "drain" and stale
        served = ClusterState(snap, use_loads=False) if drain_sized else state
        return request_decision(snap, served, request, applies, totals, before)
    if not over:
        if health:
            return refuse(None, health, before, before)
        calm = not gates and quiet(snap, state)
        repair = repair_decision(snap, state, totals, before) if calm else None
        if repair is not None:
            return repair
        even = calm and snap.policy.even_spread
        uneven = out_of_band(state, snap.policy.even_spread_threshold) if even else []
        if {o.dimension for o in uneven} == {"network"}:
            # Network alone: the evenness phase of balance moves leadership first.
            network = plan_balance(state, move_budget(snap))
            if network.move_count:
                why = [Reason("uneven_spread", o.sentence()) for o in uneven[:MAX_EXAMPLES]]
                return _finish_balance(snap, state, network, [], totals, before, {}, why)
        if uneven:
            return spread_decision(snap, state, totals, before, uneven)
        summary = "every broker is alive and within its limits"
        if state.dead:
            dead = ", ".join(str(b) for b in state.dead)
            summary = f"dead brokers {dead} hold no replicas; every live broker is within limits"
        told, left = _placement_reasons(state)
        return Decision("noop", None, summary, told, (), 0, before, before, left)
    return _finish_balance(
        snap, state, plan_balance(state, move_budget(snap)), gates, totals, before, over
    )


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
        return refuse("heal", reasons, before, after if not plan.blocked else before)
    failed = _failed_disks(state)
    what = []
    if state.dead:
        what.append(f"dead brokers {', '.join(str(b) for b in state.dead)}")
    if failed:
        what.append(f"failed log directories on brokers {', '.join(map(str, failed))}")
    summary = (
        f"heal {' and '.join(what)}: {len(plan.moves)} partitions reassigned, "
        f"{plan.bytes_to_move} bytes to copy"
    )
    info = [
        Reason("broker_dead", f"broker {b} is dead past its grace period; its replicas move")
        for b in state.dead
    ]
    info += [
        Reason(
            "log_dir_failed",
            f"broker {b} is alive but {n} of its replicas are offline (a failed log directory); "
            "they move to other brokers, since Kafka recreates an offline replica only when "
            "its broker restarts",
        )
        for b, n in failed.items()
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
    actions = tuple(reassign(state, m) for m in plan.moves)
    return Decision("act", "heal", summary, tuple(info), actions, plan.bytes_to_move, before, after)


def _failed_disks(state: ClusterState) -> dict[int, int]:
    """Live brokers with offline replicas, and how many each."""
    counts: dict[int, int] = {}
    for gone in state.offline.values():
        for b in gone:
            counts[b] = counts.get(b, 0) + 1
    return dict(sorted(counts.items()))


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
        return refuse("balance", reasons, before, after)
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
    told, left = _placement_reasons(state)
    info += told
    actions: list[Action] = []
    for lm in plan.leader_moves:
        topic, number = state.topic[lm.p], state.number[lm.p]
        if lm.before[0] != lm.leader:
            actions.append(Reassign(topic, number, lm.before, lm.after))
        actions.append(ElectPreferredLeader(topic, number, lm.leader))
    actions += [reassign(state, m) for m in plan.replica_moves]
    what = f"balance {len(over)} brokers over their limits" if over else "even out network load"
    summary = (
        f"{what}: {len(plan.leader_moves)} leadership "
        f"moves, {len(plan.replica_moves)} replica moves, {plan.bytes_to_move} bytes to copy; "
        f"busiest broker at {plan.busiest_ratio:.2f}x the average network load"
    )
    return Decision(
        "act",
        "balance",
        summary,
        tuple(info),
        tuple(actions),
        plan.bytes_to_move,
        before,
        after,
        left,
    )


def _placement_reasons(state: ClusterState) -> tuple[tuple[Reason, ...], int]:
    """Existing placement violations, reported every cycle, and how many there are."""
    problems = check_existing(state)
    if not problems:
        return (), 0
    shown = "; ".join(problems[:MAX_EXAMPLES])
    more = f"; and {len(problems) - MAX_EXAMPLES} more" if len(problems) > MAX_EXAMPLES else ""
    told = Reason(
        "placement_violation", f"{len(problems)} placement policy violations: {shown}{more}"
    )
    return (told,), len(problems)
