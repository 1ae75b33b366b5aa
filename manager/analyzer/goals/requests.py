"""Operator requests: the oldest unfinished one is served after any heal and before any
balance, through the same gates, budgets and checks as everything else
(docs/operations-requests.md).

- ``drain``: every replica off the brokers (decommission), placed as a heal would place a dead
  broker's - all constraints held, exactly their bytes moved, all or nothing; the brokers take
  no replica from any plan meanwhile. Like a heal it does not wait for loads. Done when they
  hold none.
- ``fill``: moves onto the brokers only, fewest bytes first, until each is within the
  even-spread band (docs/planner.md, "Even spread"); needs fresh loads. Done when none is below.
- ``demote``: leadership off the brokers, no data moved (``manager.analyzer.demote``); does not
  wait for loads. Done when they lead none.
- ``decommission``: a drain first; then, once the brokers hold nothing (no replica, so no
  leadership) and no reassignment names them, a noop that waits for the operator to stop
  them; once they are stopped, one that tells the daemon to unregister them (Kafka's
  UnregisterBroker), after which the request is done.
- ``set_rf``: a topic's partitions gain replicas up to the factor, placed as a heal places
  (``manager.analyzer.replication_factor``), all or nothing, within the move budget; like a
  drain it does not wait for loads (the sizes come from the log directories). Done when every
  partition has at least that many replicas.
"""

from __future__ import annotations

from manager.analyzer.demote import plan_demote
from manager.analyzer.examples import examples, first
from manager.analyzer.goal import (
    Context,
    Proposal,
    Settled,
    drain_proposal,
    leadership_switch,
    replica_proposal,
)
from manager.analyzer.heal import plan_heal
from manager.analyzer.replication_factor import below_factor, plan_raise
from manager.analyzer.spread import below_band, plan_fill
from manager.model.decision import Reason
from manager.model.snapshot import OperatorRequest


class OperatorRequests:
    name = "operator_requests"
    tidying = False
    needs_calm = False

    def applies(self, ctx: Context) -> bool:
        return bool(ctx.snap.requests)

    def propose(self, ctx: Context) -> Proposal | Settled:
        request = ctx.snap.requests[0]
        if request.kind == "drain":
            return _drain(ctx, request)
        if request.kind == "demote":
            return _demote(ctx, request)
        if request.kind == "set_rf":
            return _set_rf(ctx, request)
        if request.kind == "decommission":
            return _decommission(ctx, request)
        return _fill(ctx, request)

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        off = () if ctx.snap.policy.goals.operator_requests else ("operator_requests",)
        return off + leadership_switch(ctx, proposed)


def _what(request: OperatorRequest) -> str:
    again = ", done, upheld: its brokers hold replicas again" if request.upheld else ""
    return f"request {request.id} ({request.subject}{again})"


def _done(request: OperatorRequest, why: str) -> Settled:
    said = f"{_what(request)} is done: {why}"
    reason = Reason("operator_request", said)
    return Settled(said, (reason,), request=request.id, request_done=True)


def _said(request: OperatorRequest, said: str, unregister: tuple[int, ...] = ()) -> Settled:
    """A noop that serves ``request`` and says ``said`` (the request stays open)."""
    reasons = (Reason("operator_request", said),)
    return Settled(said, reasons, request=request.id, unregister=unregister)


def _preface(request: OperatorRequest) -> Reason:
    """How the refusal of a request starts."""
    return Reason("operator_request", f"{_what(request)} cannot go on")


def _drain(ctx: Context, request: OperatorRequest) -> Proposal | Settled:
    brokers = frozenset(request.brokers)
    state = ctx.heal_state()
    held = sum(len(state.partitions_on(b)) for b in brokers)
    if held == 0:
        return _done(request, "the brokers hold no replica")
    plan = plan_heal(state, leaving=brokers)
    what = _what(request)
    told = [
        Reason("operator_request", f"{what}: {held} replicas move off, {plan.bytes_to_move} bytes")
    ]
    summary = f"{what}: {len(plan.moves)} partitions reassigned, {plan.bytes_to_move} bytes to copy"
    return drain_proposal(
        ctx, state, plan, summary, told, request=request.id, refusal_preface=_preface(request)
    )


def _demote(ctx: Context, request: OperatorRequest) -> Proposal | Settled:
    brokers = frozenset(request.brokers)
    state = ctx.state
    leading = sum(state.leaders[b] for b in brokers)
    if leading == 0:
        return _done(request, "the brokers lead no partition")
    plan = plan_demote(state, brokers, ctx.move_budget())
    kept = _kept(plan.kept, brokers)
    if not plan.moves and not plan.left:
        return _done(request, f"the brokers lead no partition another broker holds; {kept}")
    unmet: tuple[Reason, ...] = ()
    if not plan.moves:
        unmet = (Reason("balance_infeasible", "; ".join(first(plan.left)[0])),)
    what = _what(request)
    said = f"{what}: {len(plan.moves)} of {leading} leaderships move, no data"
    told = [Reason("operator_request", said)]
    if plan.left:
        shown = "; ".join(first(plan.left)[0])
        told.append(Reason("limits_unresolved", f"{len(plan.left)} stay for now: {shown}"))
    if plan.kept:
        told.append(Reason("operator_request", kept))
    return Proposal(
        kind="balance",
        state=state,
        summary=f"{what}: {len(plan.moves)} leaderships move, no data",
        leader_moves=tuple(plan.moves),
        told=tuple(told),
        held_by="heal_gates",
        unmet=unmet,
        request=request.id,
        refusal_preface=_preface(request),
    )


def _kept(kept: list[str], brokers: frozenset[int]) -> str:
    """What a demote leaves led by ``brokers`` for good: partitions with no replica elsewhere."""
    shown = examples(kept)
    return (
        f"{len(kept)} have no replica outside {sorted(brokers)} and stay led there: {shown} "
        "(a demote moves no data: drain the brokers, or raise those topics' replication "
        "factor)"
    )


def _fill(ctx: Context, request: OperatorRequest) -> Proposal | Settled:
    brokers = frozenset(request.brokers)
    state = ctx.state
    threshold = ctx.snap.policy.even_spread_threshold
    low = below_band(state, brokers, threshold)
    if not low:
        return _done(request, f"every broker is within {threshold:.2f}x of the average")
    plan = plan_fill(state, brokers, threshold, ctx.move_budget())
    unmet: tuple[Reason, ...] = ()
    if not plan.moves:
        why = (
            "the move budget is spent"
            if plan.budget_hit
            else "no replica move within the constraints and limits fills them"
        )
        unmet = (Reason("balance_infeasible", why),)
    told = [Reason("operator_request", o.sentence()) for o in first(low)[0]]
    if plan.budget_hit:
        told.append(Reason("budget_truncated", "the plan stops at the move budget"))
    summary = (
        f"{_what(request)}: {len(plan.moves)} replica moves, {plan.bytes_to_move} bytes to copy"
    )
    return replica_proposal(
        state,
        summary,
        plan,
        "every_gate",
        told,
        unmet=unmet,
        request=request.id,
        refusal_preface=_preface(request),
    )


def _set_rf(ctx: Context, request: OperatorRequest) -> Proposal | Settled:
    topic, factor = request.topic or "", request.replication_factor or 1
    state = ctx.heal_state()
    if not below_factor(state, topic, factor):
        return _done(request, f"every partition of {topic} has {factor} or more replicas")
    plan = plan_raise(state, topic, factor, ctx.move_budget())
    what = _what(request)
    unmet: tuple[Reason, ...] = ()
    if not plan.moves and not plan.blocked:
        unmet = (Reason("balance_infeasible", "the move budget is spent"),)
    told = [
        Reason(
            "operator_request",
            f"{what}: {len(plan.moves)} of {plan.short} partitions below {factor} replicas gain "
            f"them, {plan.bytes_to_move} bytes",
        )
    ]
    summary = f"{what}: {len(plan.moves)} partitions reassigned, {plan.bytes_to_move} bytes to copy"
    return replica_proposal(
        state,
        summary,
        plan,
        "heal_gates",
        told,
        blocked=tuple(plan.blocked),
        unmet=unmet,
        request=request.id,
        refusal_preface=_preface(request),
    )


def _decommission(ctx: Context, request: OperatorRequest) -> Proposal | Settled:
    brokers = frozenset(request.brokers)
    state = ctx.heal_state()
    if any(state.partitions_on(b) for b in brokers):
        return _drain(ctx, request)
    what = _what(request)
    named = [
        f"{r.topic}:{r.partition}"
        for r in ctx.snap.reassignments
        if brokers & {*r.adding_replicas, *r.removing_replicas}
    ]
    if named:
        shown = ", ".join(first(named)[0])
        why = f"{what}: reassignments in progress name its brokers: {shown}"
        return Proposal(
            kind="balance",
            state=state,
            summary=f"{what}: waiting for reassignments that name its brokers",
            held_by="heal_gates",
            unmet=(Reason("foreign_reassignment_in_progress", why),),
            request=request.id,
            refusal_preface=_preface(request),
        )
    running = sorted(b.id for b in ctx.snap.brokers if b.alive and b.id in brokers)
    if running:
        return _said(
            request, f"{what}: the brokers hold nothing; stop {running} to have them unregistered"
        )
    said = f"{what}: the brokers hold nothing and are stopped: unregistering them"
    return _said(request, said, unregister=tuple(sorted(brokers)))


OPERATOR_REQUESTS = OperatorRequests()
