"""Rejoin: a broker that came back leads its preferred partitions again once it has caught up
(``manager.analyzer.rejoin``). Leadership only, no data: like a demote it does not wait for
loads, and like a heal's it is held back by every gate about the cluster's health. It acts only
where Kafka's own ``auto.leader.rebalance.enable`` is known to be off (``Snapshot.
kafka_auto_leader_rebalance``): with it on, Kafka hands leadership back itself."""

from __future__ import annotations

from manager.analyzer.goal import Context, Proposal, Settled, leadership_switch
from manager.analyzer.moves import LeaderMove
from manager.analyzer.rejoin import Rejoining, hand_back, rejoining
from manager.analyzer.under_replication import recovering
from manager.model.decision import Reason


class RejoinLeadership:
    name = "rejoin_leadership"
    tidying = False
    needs_calm = False

    def applies(self, ctx: Context) -> bool:
        """Only where Kafka is known to leave preferred leadership alone: with its own
        ``auto.leader.rebalance.enable`` on, it hands leadership back itself."""
        return ctx.snap.kafka_auto_leader_rebalance is False and bool(recovering(ctx.snap))

    def propose(self, ctx: Context) -> Proposal | None:
        policy = ctx.snap.policy.rejoin
        for broker in sorted(recovering(ctx.snap)):
            if not ctx.state.usable(broker):
                continue
            rejoined = rejoining(ctx.state, broker)
            if not rejoined.waiting or not rejoined.ready(policy):
                continue
            budget = min(policy.leaders_per_cycle, ctx.move_budget())
            moves = hand_back(ctx.state, rejoined, budget)
            if moves:
                return _proposal(ctx, rejoined, moves)
        return None

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        off = () if ctx.snap.policy.goals.rejoin_leadership else ("rejoin_leadership",)
        return off + leadership_switch(ctx, proposed)


def catching_up(ctx: Context) -> tuple[Reason, ...]:
    """What a cycle that hands nothing back says of each broker still catching up (for the
    noop at rest): how far it is, and the share its leadership waits for."""
    if not REJOIN_LEADERSHIP.applies(ctx):
        return ()
    policy = ctx.snap.policy.rejoin
    told = []
    for broker in sorted(recovering(ctx.snap)):
        rejoined = rejoining(ctx.state, broker)
        if rejoined.waiting and not rejoined.ready(policy):
            told.append(
                Reason(
                    "broker_rejoined",
                    f"broker {broker} is catching up: {rejoined.figures()}; its "
                    f"{len(rejoined.waiting)} preferred leaderships return at "
                    f"{policy.in_sync_share:.0%}",
                )
            )
    return tuple(told)


def _proposal(ctx: Context, rejoined: Rejoining, moves: list[LeaderMove]) -> Proposal:
    broker, count = rejoined.broker, len(moves)
    left = len(rejoined.waiting) - count
    said = (
        f"broker {broker} has caught up: {count} of its {len(rejoined.waiting)} preferred "
        "leaderships return, no data"
    )
    why = (
        f"broker {broker} came back and has {rejoined.figures()}, at least "
        f"{ctx.snap.policy.rejoin.in_sync_share:.0%}"
    )
    if left:
        why += f"; {left} more in later cycles, internal topics last"
    return Proposal(
        kind="balance",
        state=ctx.state,
        summary=said,
        leader_moves=tuple(moves),
        told=(Reason("broker_rejoined", why),),
        held_by="heal_gates",
    )


REJOIN_LEADERSHIP = RejoinLeadership()
