"""Balance: brokers over their network or disk limits shed load, leadership first, replicas
second (``manager.analyzer.balance``). Needs fresh loads: every failing gate holds it back."""

from __future__ import annotations

from manager.analyzer.balance import BalancePlan, plan_balance
from manager.analyzer.goal import Context, Proposal, Settled, leadership_switch
from manager.analyzer.goals.placement_told import placement_reasons
from manager.model.decision import Reason


class BalanceLimits:
    name = "balance"
    tidying = False
    needs_calm = False

    def applies(self, ctx: Context) -> bool:
        return bool(ctx.over)

    def propose(self, ctx: Context) -> Proposal:
        plan = plan_balance(ctx.state, ctx.move_budget())
        return balance_proposal(ctx, plan, ctx.over, ())

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        off = () if ctx.snap.policy.goals.balance else ("balance",)
        return off + leadership_switch(ctx, proposed)


def balance_proposal(
    ctx: Context,
    plan: BalancePlan,
    over: dict[int, list[str]],
    why: tuple[Reason, ...],
) -> Proposal:
    """A balance plan as a proposal: brokers ``over`` their limits, or ``why`` the network
    load is evened out."""
    state = ctx.state
    unmet: tuple[Reason, ...] = ()
    if plan.move_count == 0:
        unmet = (
            Reason(
                "hourly_budget_exceeded" if plan.budget_hit else "balance_infeasible",
                "no move budget is left this hour"
                if plan.budget_hit
                else "no leadership or replica move sheds load within the constraints from "
                "brokers " + ", ".join(f"{b} ({'/'.join(o)})" for b, o in sorted(over.items())),
            ),
        )
    told = [
        Reason("over_limit", f"broker {b} is over its {' and '.join(o)} limit")
        for b, o in sorted(over.items())
    ]
    told += why
    for b, o in sorted(plan.still_over.items()):
        told.append(
            Reason("limits_unresolved", f"broker {b} stays over its {' and '.join(o)} limit")
        )
    if plan.budget_hit:
        told.append(Reason("budget_truncated", "the plan stops at the move budget"))
    placement, left = placement_reasons(state)
    told += placement
    what = f"balance {len(over)} brokers over their limits" if over else "even out network load"
    summary = (
        f"{what}: {len(plan.leader_moves)} leadership "
        f"moves, {len(plan.replica_moves)} replica moves, {plan.bytes_to_move} bytes to copy; "
        f"busiest broker at {plan.busiest_ratio:.2f}x the average network load"
    )
    return Proposal(
        kind="balance",
        state=state,
        summary=summary,
        replica_moves=tuple(plan.replica_moves),
        leader_moves=tuple(plan.leader_moves),
        bytes_to_move=plan.bytes_to_move,
        held_by="every_gate",
        told=tuple(told),
        unmet=unmet,
        placement_violations=left,
    )


BALANCE = BalanceLimits()
