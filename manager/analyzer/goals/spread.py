"""Even spread (on a calm cluster; switch ``even_spread``; ``manager.analyzer.spread``):
a cluster uneven in network load alone is evened by the balance's evenness phase, which moves
leadership first; one uneven in disk share or replica count by replica moves."""

from __future__ import annotations

from manager.analyzer.balance import plan_balance
from manager.analyzer.examples import first
from manager.analyzer.goal import Context, Proposal, Settled, leadership_switch, replica_proposal
from manager.analyzer.goals.balance import balance_proposal
from manager.analyzer.spread import plan_spread
from manager.model.decision import Reason


def _even_spread_switch(ctx: Context) -> tuple[str, ...]:
    return () if ctx.snap.policy.goals.even_spread else ("even_spread",)


class EvenNetwork:
    name = "even_network"
    tidying = True
    needs_calm = True

    def applies(self, ctx: Context) -> bool:
        return {o.dimension for o in ctx.uneven} == {"network"}

    def propose(self, ctx: Context) -> Proposal | None:
        plan = plan_balance(ctx.state, ctx.move_budget())
        if not plan.move_count:
            return None
        why = tuple(Reason("uneven_spread", o.sentence()) for o in first(ctx.uneven)[0])
        return balance_proposal(ctx, plan, {}, why)

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        return _even_spread_switch(ctx) + leadership_switch(ctx, proposed)


class EvenSpread:
    name = "even_spread"
    tidying = True
    needs_calm = True

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        return _even_spread_switch(ctx)

    def applies(self, ctx: Context) -> bool:
        return bool(ctx.uneven)

    def propose(self, ctx: Context) -> Proposal | Settled:
        uneven = ctx.uneven
        shown, more = first(uneven)
        told = [Reason("uneven_spread", o.sentence()) for o in shown]
        if more:
            told.append(Reason("uneven_spread", f"and {more} more"))
        state, policy = ctx.state, ctx.snap.policy
        plan = plan_spread(state, policy.even_spread_threshold, ctx.move_budget())
        if not plan.moves:
            why = (
                "no move budget is left this hour"
                if plan.budget_hit
                else "no replica move narrows it within the placement constraints and limits"
            )
            return Settled(f"the cluster is uneven, and stays so: {why}", tuple(told))
        if plan.budget_hit:
            told.append(Reason("budget_truncated", "the plan stops at the move budget"))
        summary = (
            f"even out an uneven cluster: {len(plan.moves)} replica moves, "
            f"{plan.bytes_to_move} bytes to copy ({uneven[0].sentence()})"
        )
        return replica_proposal(state, summary, plan, "every_gate", told)


EVEN_NETWORK = EvenNetwork()
EVEN_SPREAD = EvenSpread()
