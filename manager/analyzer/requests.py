"""Operator requests, planned: the oldest unfinished one is served after any heal and before
any balance, through the same gates, budgets and checks as everything else.

- ``drain``: every replica off the brokers (decommission), placed as a heal would place a dead
  broker's - all constraints held, exactly their bytes moved, all or nothing; the brokers take
  no replica from any plan meanwhile. Done when they hold none.
- ``fill``: moves onto the brokers only, fewest bytes first, until each is within the
  even-spread band (docs/planner.md, "Even spread"); needs fresh loads. Done when none is below.
- ``demote``: leadership off the brokers, no data moved: each partition they lead gets an
  in-sync follower elsewhere as its preferred leader (the demoted broker last in the list, so
  Kafka's own preferred-leader rebalancing does not bring it back). Done when they lead none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from manager.analyzer.balance import LeaderMove
from manager.analyzer.gates import gate_budget, gate_plan_constraints
from manager.analyzer.heal import plan_heal
from manager.analyzer.placement_check import BrokerTotals, check_plan
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.spread import below_band, plan_fill
from manager.analyzer.verdict import MAX_EXAMPLES, broker_loads, move_budget, reassign, refuse
from manager.model.decision import (
    Action,
    BrokerLoad,
    Decision,
    ElectPreferredLeader,
    Reason,
    Reassign,
)
from manager.model.snapshot import OperatorRequest, Snapshot


@dataclass
class DemotePlan:
    moves: list[LeaderMove] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def plan_demote(state: ClusterState, brokers: frozenset[int], max_moves: int) -> DemotePlan:
    """Leadership off ``brokers``: per partition they lead, the least loaded usable in-sync
    follower outside them that has room for the traffic a leader serves."""
    plan = DemotePlan()
    led = [p for b in sorted(brokers) for p in state.partitions_on(b) if state.leader[p] == b]
    led.sort(key=lambda p: (state.topic[p], state.number[p]))
    for p in led:
        if len(plan.moves) >= max_moves:
            plan.left.append(f"{state.name(p)}: the move budget is spent")
            continue
        out = state.bout[p]
        followers = [
            f
            for f in state.isr[p]
            if f not in brokers
            and state.usable(f)
            and state.fits(f, 0.0, out, 0.0, adds_replica=False)
        ]
        if not followers:
            plan.left.append(
                f"{state.name(p)}: no in-sync follower outside {sorted(brokers)} can lead it"
            )
            continue
        new = min(followers, key=lambda f: (state.net_util(f), f))
        before = state.replicas[p]
        state.move_leader(p, new)
        after = (
            *(b for b in state.replicas[p] if b not in brokers),
            *(b for b in before if b in brokers),
        )
        state.set_replicas(p, after)
        plan.moves.append(LeaderMove(p, before, after, new))
    return plan


def request_decision(
    snap: Snapshot,
    state: ClusterState,
    request: OperatorRequest,
    gates: list[Reason],
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
) -> Decision:
    """The decision that serves ``request`` this cycle (``gates``: the gates that apply to
    it - a drain or demote, like a heal, does not wait for loads)."""
    brokers = frozenset(request.brokers)
    what = f"request {request.id} ({request.kind} brokers {', '.join(map(str, sorted(brokers)))})"
    if request.kind == "drain":
        return _drain(snap, state, request, what, brokers, gates, totals, before)
    if request.kind == "demote":
        return _demote(snap, state, request, what, brokers, gates, totals, before)
    return _fill(snap, state, request, what, brokers, gates, totals, before)


def _done(request: OperatorRequest, what: str, why: str, before: dict[int, BrokerLoad]) -> Decision:
    reason = Reason("operator_request", f"{what} is done: {why}")
    summary = f"{what} is done: {why}"
    return Decision(
        "noop",
        None,
        summary,
        (reason,),
        (),
        0,
        before,
        before,
        request=request.id,
        request_done=True,
    )


def _refused(
    request: OperatorRequest,
    what: str,
    reasons: list[Reason],
    before: dict[int, BrokerLoad],
    after: dict[int, BrokerLoad],
) -> Decision:
    told = [Reason("operator_request", f"{what} cannot go on"), *reasons]
    decision = refuse("balance", told, before, after)
    return Decision(
        decision.outcome,
        decision.kind,
        decision.summary,
        decision.reasons,
        (),
        0,
        before,
        after,
        request=request.id,
    )


def _acting(
    request: OperatorRequest,
    summary: str,
    told: list[Reason],
    actions: tuple[Action, ...],
    bytes_to_move: int,
    before: dict[int, BrokerLoad],
    after: dict[int, BrokerLoad],
) -> Decision:
    return Decision(
        "act",
        "balance",
        summary,
        tuple(told),
        actions,
        bytes_to_move,
        before,
        after,
        request=request.id,
    )


def _drain(
    snap: Snapshot,
    state: ClusterState,
    request: OperatorRequest,
    what: str,
    brokers: frozenset[int],
    gates: list[Reason],
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
) -> Decision:
    held = sum(len(state.partitions_on(b)) for b in brokers)
    if held == 0:
        return _done(request, what, "the brokers hold no replica", before)
    plan = plan_heal(state, leaving=brokers)
    reasons = list(gates)
    for blocked in plan.blocked[:MAX_EXAMPLES]:
        reasons.append(
            Reason(
                "plan_violates_constraints", f"{blocked.message} (constraint: {blocked.constraint})"
            )
        )
    if len(plan.blocked) > MAX_EXAMPLES:
        more = f"{len(plan.blocked) - MAX_EXAMPLES} more partitions cannot be placed"
        reasons.append(Reason("plan_violates_constraints", more))
    if plan.exact is not None and plan.blocked:
        reasons.append(Reason("plan_violates_constraints", plan.exact))
    after = broker_loads(state)
    if not plan.blocked:
        changes = [(m.p, m.before, m.after) for m in plan.moves]
        reasons += gate_plan_constraints(check_plan(state, totals, changes))
        reasons += gate_budget(snap, len(plan.moves))
    if reasons:
        return _refused(request, what, reasons, before, after if not plan.blocked else before)
    told = [
        Reason("operator_request", f"{what}: {held} replicas move off, {plan.bytes_to_move} bytes")
    ]
    if plan.exact is not None:
        told.append(Reason("heal_exact_placement", plan.exact))
    summary = f"{what}: {len(plan.moves)} partitions reassigned, {plan.bytes_to_move} bytes to copy"
    actions = tuple(reassign(state, m) for m in plan.moves)
    return _acting(request, summary, told, actions, plan.bytes_to_move, before, after)


def _demote(
    snap: Snapshot,
    state: ClusterState,
    request: OperatorRequest,
    what: str,
    brokers: frozenset[int],
    gates: list[Reason],
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
) -> Decision:
    leading = sum(state.leaders[b] for b in brokers)
    if leading == 0:
        return _done(request, what, "the brokers lead no partition", before)
    plan = plan_demote(state, brokers, move_budget(snap))
    after = broker_loads(state)
    reasons = list(gates)
    changes = [(m.p, m.before, m.after) for m in plan.moves]
    reasons += gate_plan_constraints(check_plan(state, totals, changes))
    if not plan.moves:
        reasons.append(Reason("balance_infeasible", "; ".join(plan.left[:MAX_EXAMPLES])))
    if reasons:
        return _refused(request, what, reasons, before, after)
    told = [
        Reason(
            "operator_request", f"{what}: {len(plan.moves)} of {leading} leaderships move, no data"
        )
    ]
    if plan.left:
        shown = "; ".join(plan.left[:MAX_EXAMPLES])
        told.append(Reason("limits_unresolved", f"{len(plan.left)} stay for now: {shown}"))
    actions: list[Action] = []
    for m in plan.moves:
        topic, number = state.topic[m.p], state.number[m.p]
        actions.append(Reassign(topic, number, m.before, m.after))
        actions.append(ElectPreferredLeader(topic, number, m.leader))
    summary = f"{what}: {len(plan.moves)} leaderships move, no data"
    return _acting(request, summary, told, tuple(actions), 0, before, after)


def _fill(
    snap: Snapshot,
    state: ClusterState,
    request: OperatorRequest,
    what: str,
    brokers: frozenset[int],
    gates: list[Reason],
    totals: BrokerTotals,
    before: dict[int, BrokerLoad],
) -> Decision:
    threshold = snap.policy.even_spread_threshold
    low = below_band(state, brokers, threshold)
    if not low:
        return _done(
            request, what, f"every broker is within {threshold:.2f}x of the average", before
        )
    plan = plan_fill(state, brokers, threshold, move_budget(snap))
    after = broker_loads(state)
    reasons = list(gates)
    changes = [(m.p, m.before, m.after) for m in plan.moves]
    reasons += gate_plan_constraints(check_plan(state, totals, changes))
    if not plan.moves:
        why = (
            "the move budget is spent"
            if plan.budget_hit
            else "no replica move within the constraints and limits fills them"
        )
        reasons.append(Reason("balance_infeasible", why))
    if reasons:
        return _refused(request, what, reasons, before, after)
    told = [Reason("operator_request", o.sentence()) for o in low[:MAX_EXAMPLES]]
    if plan.budget_hit:
        told.append(Reason("budget_truncated", "the plan stops at the move budget"))
    summary = f"{what}: {len(plan.moves)} replica moves, {plan.bytes_to_move} bytes to copy"
    actions = tuple(reassign(state, m) for m in plan.moves)
    return _acting(request, summary, told, actions, plan.bytes_to_move, before, after)
