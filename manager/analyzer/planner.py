"""decide(snapshot) -> Decision: the gates, then the goals in order, then the finish step.

Every capability is a goal of one shape (``manager.analyzer.goal``): whether it applies to
this snapshot, and what it proposes. ``GOALS`` is their order, and the first goal with
something to propose decides the cycle: partitions that reject writes are healed without
waiting a broker's grace, dead brokers before an operator request is served, both before
anything is balanced, and only a calm cluster is repaired or evened out.
Each proposal goes through one finish step (``manager.analyzer.finish``): the hard
constraints, the budgets, refuse or act. While a reassignment kmedic started is still running
the planner holds (noop, or a refusal when a gate fails): it plans from what has settled.
With no goal to act, the cluster is at rest: a noop, or a refusal naming the failing gates.
Pure: the same snapshot always gives the same decision.
"""

from __future__ import annotations

from typing import TypeGuard

from manager.analyzer.finish import finish, held_back
from manager.analyzer.gates import Gates
from manager.analyzer.goal import Context, Goal, Held, Outcome, Proposal, Settled
from manager.analyzer.goals.balance import BALANCE
from manager.analyzer.goals.heal import HEAL
from manager.analyzer.goals.placement_told import placement_reasons
from manager.analyzer.goals.rejoin import REJOIN_LEADERSHIP, catching_up
from manager.analyzer.goals.repair import REPAIR_PLACEMENT
from manager.analyzer.goals.requests import OPERATOR_REQUESTS
from manager.analyzer.goals.slow import SLOW_BROKERS
from manager.analyzer.goals.spread import EVEN_NETWORK, EVEN_SPREAD
from manager.analyzer.goals.writes import RESTORE_WRITES
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.situation import Situation, judged
from manager.analyzer.stale_view import behind, contradictions
from manager.model.decision import Decision, Reason
from manager.model.snapshot import Snapshot

# The order is the policy: redundancy first, then what an operator asked, then limits, then
# the niceties of a calm cluster. Adding a goal is one module and one line here.
GOALS: tuple[Goal, ...] = (
    RESTORE_WRITES,  # partitions whose acks=all writes fail: before their broker's grace ends
    HEAL,  # replicas lost with dead brokers or failed log directories
    OPERATOR_REQUESTS,  # drain, demote, fill
    SLOW_BROKERS,  # leadership off slow brokers, and back once they recover
    REJOIN_LEADERSHIP,  # leadership back to a broker that came back, once it caught up
    BALANCE,  # brokers over their network or disk limits
    REPAIR_PLACEMENT,  # partitions breaking the placement policy
    EVEN_NETWORK,  # network load uneven, leadership first
    EVEN_SPREAD,  # disk shares and replica counts uneven
)


def decide(
    snap: Snapshot, situation: Situation | None = None, memory: ListsMemory | None = None
) -> Decision:
    """The cycle's decision: what the cluster needs (the goals, in order), judged by the
    daemon's own situation (``manager.analyzer.situation``; None: a daemon at rest in act
    mode, as ``kmedic plan`` and the readiness sweep decide). ``memory``: the daemon's
    planner lists, kept between its decisions (``manager.analyzer.partition_lists``); it
    saves work and changes no decision. A snapshot older than moves the daemon saw complete
    is decided on no further: a wait (``manager.analyzer.stale_view``)."""
    if situation is not None and (found := contradictions(snap, situation.completed)):
        return behind(found)
    planned = _planned(snap, memory)
    return planned if situation is None else judged(planned, situation)


def _planned(snap: Snapshot, memory: ListsMemory | None) -> Decision:
    state = ClusterState(snap, memory=memory)
    ctx = Context(snap, state, Gates.of(snap, state))
    if any(r.started_by_kmedic for r in snap.reassignments):
        return finish(ctx, _hold_for_own_moves(ctx))
    tidy: Decision | None = None  # the first tidying plan its switch held back
    for goal in GOALS:
        if goal.needs_calm and not ctx.calm:
            continue
        if goal.applies(ctx) and (proposed := goal.propose(ctx)) is not None:
            decision = finish(ctx, proposed)
            off = goal.disabled_by(ctx, proposed) if _acting(proposed) else ()
            if off and goal.tidying:
                # Nothing needs it: a goal after it may still act; else this is what it
                # would have done (a plan it could not carry out either is not told). The
                # goals after it plan on the cluster as it is, not with its moves reserved.
                if tidy is None and decision.outcome == "act":
                    tidy = held_back(decision, disabled_why(off), off, tidying=True)
                if isinstance(proposed, Proposal) and proposed.move_count:
                    ctx = Context(snap, ClusterState(snap, memory=state.memory), ctx.failing)
                continue
            if off:  # decided and audited, never carried out; nothing after it runs
                return held_back(decision, disabled_why(off), off)
            return decision if tidy is None or decision.outcome == "act" else tidy
    return tidy or finish(ctx, _at_rest(ctx))


def _acting(proposed: Outcome) -> TypeGuard[Proposal | Settled]:
    """A plan, or a noop that still asks the daemon to act (a decommission's unregister)."""
    return isinstance(proposed, Proposal) or (
        isinstance(proposed, Settled) and bool(proposed.unregister)
    )


def disabled_why(switches: tuple[str, ...]) -> str:
    return "disabled by " + ", ".join(f"policy.goals.{s}" for s in switches)


def _hold_for_own_moves(ctx: Context) -> Outcome:
    """Our own moves are still running: plan nothing until they finish, and refuse only on a
    gate that would hold back what the cluster needs (a heal, or a balance of a broker over
    its limits)."""
    state = ctx.state
    if state.dead or state.offline:
        blocking = ctx.heal_gates
    else:
        blocking = ctx.gates if ctx.over else _beyond_stale_loads(ctx)
    if blocking:
        return Held(blocking)
    return Settled(
        "waiting for kmedic's own reassignments to finish before planning again",
        (Reason("own_reassignment_in_progress", "a reassignment kmedic started is running"),),
    )


def _at_rest(ctx: Context) -> Outcome:
    """No goal acts: refused while a gate about the cluster fails, else a noop. Stale loads
    refuse nothing here, alone or beside another gate: they hold back only a balance, and
    none is asked for (the load-age metric and its warning say the pipeline is down; a
    refusal would page)."""
    if holding := _beyond_stale_loads(ctx):
        return Held(holding)
    state = ctx.state
    if ctx.stale:
        told, left = placement_reasons(state)
        summary = "nothing to heal; balancing waits for fresh loads"
        return Settled(summary, (*ctx.stale, *told, *catching_up(ctx)), placement_violations=left)
    summary = "every broker is alive and within its limits"
    if state.dead:
        dead = ", ".join(str(b) for b in state.dead)
        summary = f"dead brokers {dead} hold no replicas; every live broker is within limits"
    told, left = placement_reasons(state)
    return Settled(summary, (*told, *catching_up(ctx)), placement_violations=left)


def _beyond_stale_loads(ctx: Context) -> tuple[Reason, ...]:
    """The gates about the cluster but stale loads: where nothing asks for a balance, stale
    loads hold nothing back, so they are no reason to refuse (nor to page, beside a gate that
    does hold)."""
    return tuple(r for r in ctx.health if r not in ctx.stale)
