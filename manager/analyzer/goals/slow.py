"""Slow brokers (``manager.analyzer.slowness`` keeps the score): leadership off a slow broker,
no data moved, and its share back once it has recovered for a while.

A slow broker keeps its replicas: leading nothing, it no longer holds up any produce or fetch,
and what it still slows (its followers' replication) is what a drain would cost far more to
remove. Only with ``policy.slow_brokers.drain`` is a broker slow for ``drain_after_ms`` also
drained, placed as a heal would place a dead broker's replicas. More slow brokers than the
policy allows is the cluster, not a broker: the goal does nothing (``KmedicClusterSlow``).
Like a demote request it does not wait for loads.
"""

from __future__ import annotations

from dataclasses import replace

from manager.analyzer.demote import DemotePlan, plan_demote, plan_return
from manager.analyzer.examples import first
from manager.analyzer.goal import Context, Proposal, Settled, drain_proposal, leadership_switch
from manager.analyzer.heal import plan_heal
from manager.analyzer.slowness import fair_share, too_many_slow
from manager.model.decision import Reason
from manager.model.snapshot import Broker


def _in(ctx: Context, state: str) -> list[Broker]:
    return [b for b in ctx.snap.brokers if b.alive and b.slowness and b.slowness.state == state]


class SlowBrokers:
    name = "slow_brokers"
    tidying = False
    needs_calm = False

    def applies(self, ctx: Context) -> bool:
        return bool(_in(ctx, "slow") or _in(ctx, "returning"))

    def propose(self, ctx: Context) -> Proposal | None:
        slow = _in(ctx, "slow")
        policy = ctx.snap.policy.slow_brokers
        if too_many_slow(len(slow), len(ctx.state.broker_ids) - len(ctx.state.dead), policy):
            return None  # the cluster is slow: nothing a move can fix (the gauge tells)
        now = ctx.snap.taken_at
        draining = [
            b
            for b in slow
            if policy.drain
            and b.slowness is not None
            and now - b.slowness.since_ms >= policy.drain_after_ms
            and ctx.state.partitions_on(b.id)
        ]
        if draining:
            return _drain(ctx, draining)
        # A broker demoted max_demotions times in this spell is left as it is (the bound).
        leading = [
            b
            for b in slow
            if ctx.state.leaders[b.id] > 0
            and b.slowness is not None
            and b.slowness.demotions < policy.max_demotions
        ]
        if leading:
            return _demote(ctx, leading)
        for b in _in(ctx, "returning"):
            plan = plan_return(ctx.state, b.id, fair_share(ctx.snap), ctx.move_budget())
            if plan.moves:
                said = f"broker {b.id} has recovered: {len(plan.moves)} leaderships return"
                return _leader_proposal(ctx, plan, said)
        return None

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        off = () if ctx.snap.policy.goals.slow_brokers else ("slow_brokers",)
        return off + leadership_switch(ctx, proposed)


def _why(b: Broker) -> str:
    evidence = b.slowness.evidence if b.slowness else ""
    return f"broker {b.id} is slow: {evidence}"


def _demote(ctx: Context, brokers: list[Broker]) -> Proposal | None:
    ids = frozenset(b.id for b in brokers)
    leading = sum(ctx.state.leaders[b] for b in ids)
    plan = plan_demote(ctx.state, ids, ctx.move_budget())
    if not plan.moves:
        return None  # nothing can lead elsewhere; the slowness gauge still tells
    said = f"demote slow brokers {sorted(ids)}: {len(plan.moves)} of {leading} leaderships move"
    why = tuple(Reason("slow_broker", _why(b)) for b in brokers)
    return replace(_leader_proposal(ctx, plan, said, why), demotes_slow=tuple(sorted(ids)))


def _leader_proposal(
    ctx: Context, plan: DemotePlan, said: str, why: tuple[Reason, ...] = ()
) -> Proposal:
    told = [*why, Reason("slow_broker", f"{said}, no data")]
    if plan.left:
        shown = "; ".join(first(plan.left)[0])
        told.append(Reason("limits_unresolved", f"{len(plan.left)} stay for now: {shown}"))
    if plan.kept:
        shown = ", ".join(first(plan.kept)[0])
        told.append(
            Reason("slow_broker", f"{len(plan.kept)} have no replica elsewhere and stay: {shown}")
        )
    return Proposal(
        kind="balance",
        state=ctx.state,
        summary=f"{said}, no data",
        leader_moves=tuple(plan.moves),
        told=tuple(told),
        held_by="heal_gates",
    )


def _drain(ctx: Context, brokers: list[Broker]) -> Proposal:
    ids = frozenset(b.id for b in brokers)
    state = ctx.heal_state()
    plan = plan_heal(state, leaving=ids)
    said = f"drain slow brokers {sorted(ids)} (policy.slow_brokers.drain)"
    told = [*(Reason("slow_broker", _why(b)) for b in brokers), Reason("slow_broker", said)]
    summary = f"{said}: {len(plan.moves)} partitions reassigned, {plan.bytes_to_move} bytes"
    return drain_proposal(ctx, state, plan, summary, told)


SLOW_BROKERS = SlowBrokers()
