"""The finish step every goal shares: its proposal checked against the hard constraints and
the budgets, what cannot be done refused with its reasons, and the ``Decision`` built.

The reasons of a refusal come in one order: the failing gates that hold the goal back, the
partitions it could not place (the first ``MAX_BLOCKERS_LISTED``, then the exact search's
account and how many more), the constraint violations of the plan as a whole, the budgets,
and the goal's own reasons it cannot act. A plan with a blocked partition is refused whole -
unless the goal is partial (the heal: redundancy restored where it can be is better than
none): then the partitions it placed are judged and acted on as any plan, and the blocked
ones are refused by name in the decision's ``unhealed`` (paged, as a refusal is). Gates still
stop everything.
"""

from __future__ import annotations

from dataclasses import replace

from manager.analyzer.gates import gate_budget, gate_plan_constraints
from manager.analyzer.goal import Context, Held, Outcome, Proposal, Settled, broker_loads
from manager.analyzer.placement import Blocked
from manager.analyzer.placement_check import check_plan
from manager.analyzer.placement_state import ClusterState
from manager.model.decision import (
    Action,
    BrokerLoad,
    Decision,
    ElectPreferredLeader,
    PlanKind,
    Reason,
)
from manager.model.moves import Move
from manager.model.reasons import ReasonCode

MAX_BLOCKERS_LISTED = 20
# A blocked partition's reason code where it says more than "no eligible target".
_BLOCKED_CODES: dict[str, ReasonCode] = {
    "no_live_replica": "no_live_replica",
    "foreign_reassignment": "foreign_reassignment_in_progress",
}


def finish(ctx: Context, outcome: Outcome) -> Decision:
    """The decision for what a goal proposed (or for a cycle held back, or settled)."""
    if isinstance(outcome, Held):
        return refusal(None, list(outcome.reasons), ctx.before, ctx.before)
    if isinstance(outcome, Settled):
        return Decision(
            outcome="noop",
            kind=None,
            summary=outcome.summary,
            reasons=outcome.reasons,
            loads_before=ctx.before,
            loads_after=ctx.before,
            placement_violations=outcome.placement_violations,
            request=outcome.request,
            request_done=outcome.request_done,
            unregister=outcome.unregister,
        )
    return _finish_proposal(ctx, outcome)


def _finish_proposal(ctx: Context, plan: Proposal) -> Decision:
    state = plan.state
    gates = ctx.holding(plan.held_by)
    if gates and all(g.wait for g in gates):
        # A dead broker still in its grace period may come back, and with it what cannot be
        # placed now: a wait, never a refusal of partitions it may yet bring back.
        after = ctx.before if plan.blocked else loads_after(state, ctx.before)
        waiting = refusal(plan.kind, list(gates), ctx.before, after)
        return replace(waiting, request=plan.request)
    # A gate that fails refuses the whole goal: nothing to split.
    split = plan.partial and plan.move_count > 0 and not gates
    listed = blocked_reasons(plan.blocked, plan.exact)
    reasons = [*gates, *([] if split else listed)]
    if not plan.blocked or split:
        changes = [(m.p, m.before, m.after) for m in plan.leader_moves]
        changes += [(m.p, m.before, m.after) for m in plan.replica_moves]
        raising = _raising(ctx, plan.request)
        reasons += gate_plan_constraints(check_plan(state, ctx.totals, changes, raising))
        if plan.move_count:
            reasons += gate_budget(ctx.snap, plan.move_count)
    reasons += plan.unmet
    after = loads_after(state, ctx.before)
    if reasons:
        if plan.refusal_preface is not None:
            reasons.insert(0, plan.refusal_preface)
        if split:
            reasons += listed
        whole = plan.blocked and not split
        refused = refusal(plan.kind, reasons, ctx.before, ctx.before if whole else after)
        return replace(refused, request=plan.request)
    return Decision(
        outcome="act",
        kind=plan.kind,
        summary=plan.summary,
        reasons=plan.told,
        actions=actions_of(plan),
        bytes_to_move=plan.bytes_to_move,
        loads_before=ctx.before,
        loads_after=after,
        placement_violations=plan.placement_violations,
        request=plan.request,
        unhealed=tuple(listed) if split else (),
        demotes_slow=plan.demotes_slow,
    )


def refusal(
    kind: PlanKind | None,
    reasons: list[Reason],
    before: dict[int, BrokerLoad],
    after: dict[int, BrokerLoad],
) -> Decision:
    """A refusal, or a wait when only waits hold it back (audited, counted, no page)."""
    waiting = bool(reasons) and all(r.wait for r in reasons)
    codes = sorted({r.code for r in reasons})
    return Decision(
        outcome="wait" if waiting else "refuse",
        kind=kind,
        summary="; ".join(r.message for r in reasons)
        if waiting
        else f"refusing to act: {', '.join(codes)}",
        reasons=tuple(reasons),
        loads_before=before,
        loads_after=after,
    )


def _raising(ctx: Context, request_id: str | None) -> tuple[str, int] | None:
    """The topic and factor a set_rf request being served may raise."""
    request = next((r for r in ctx.snap.requests if r.id == request_id), None)
    if request is None or request.kind != "set_rf" or request.topic is None:
        return None
    return request.topic, request.replication_factor or 1


def blocked_reasons(blocked: tuple[Blocked, ...], exact: str | None) -> list[Reason]:
    """The partitions a plan could not place, each with its constraint, at most
    ``MAX_BLOCKERS_LISTED`` of them; the exact search's account follows."""
    reasons = []
    for b in blocked[:MAX_BLOCKERS_LISTED]:
        code: ReasonCode = _BLOCKED_CODES.get(b.constraint, "plan_violates_constraints")
        reasons.append(Reason(code, f"{b.message} (constraint: {b.constraint})"))
    if blocked and exact is not None:
        reasons.append(Reason("plan_violates_constraints", exact))
    if len(blocked) > MAX_BLOCKERS_LISTED:
        more = f"{len(blocked) - MAX_BLOCKERS_LISTED} more partitions cannot be placed"
        reasons.append(Reason("plan_violates_constraints", more))
    return reasons


def loads_after(state: ClusterState, before: dict[int, BrokerLoad]) -> dict[int, BrokerLoad]:
    """Each broker once the plan is done. A plan made without loads knows no traffic: the
    network figures stay those of ``before`` rather than showing zero."""
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


def actions_of(plan: Proposal) -> tuple[Action, ...]:
    """Leadership first (a reordered replica list, when it changes, then the preferred
    election), then the replica moves, each in the order the goal chose them."""
    state = plan.state
    actions: list[Action] = []
    for lm in plan.leader_moves:
        topic, number = state.topic[lm.p], state.number[lm.p]
        if lm.before != lm.after:
            actions.append(Move(topic, number, lm.after, state.size[lm.p], lm.before))
        actions.append(ElectPreferredLeader(topic, number, lm.leader, lm.after))
    actions += [
        Move(state.topic[m.p], state.number[m.p], m.after, state.size[m.p], m.before)
        for m in plan.replica_moves
    ]
    return tuple(actions)


def held_back(
    decision: Decision, why: str, disabled_by: tuple[str, ...] = (), *, tidying: bool = False
) -> Decision:
    """A decision to act that something keeps from the cluster (``disabled_by``: a goal's
    switches; else observe mode): a noop that keeps its whole plan (or the brokers it would
    unregister), to be audited as ``would_act``. Any other decision stands."""
    if decision.outcome != "act" and not decision.unregister:
        return decision
    return replace(
        decision,
        outcome="noop",
        summary=f"would act ({why}): {decision.summary}",
        would_act=why,
        disabled_by=disabled_by,
        tidying=tidying,
    )
