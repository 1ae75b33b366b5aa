"""Placement repair (on a calm cluster; switch ``repair_placement``, off by default):
partitions that break the placement policy get one replica moved to where it wants them
(``manager.analyzer.repair``)."""

from __future__ import annotations

from manager.analyzer.examples import first
from manager.analyzer.goal import Context, Proposal, Settled, replica_proposal
from manager.analyzer.placement_check import violations
from manager.analyzer.repair import plan_repair
from manager.model.decision import Reason


class RepairPlacement:
    name = "repair_placement"
    tidying = True
    needs_calm = True

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        return () if ctx.snap.policy.goals.repair_placement else ("repair_placement",)

    def applies(self, ctx: Context) -> bool:
        return True  # every calm cluster: the plan says whether anything breaks the policy

    def propose(self, ctx: Context) -> Proposal | None:
        state = ctx.state
        plan = plan_repair(state, ctx.move_budget())
        if not plan.moves:
            return None
        fixed, more = first(plan.fixed)
        told = [Reason("placement_repair", v.message) for v in fixed]
        if more:
            told.append(Reason("placement_repair", f"and {more} more partitions repaired"))
        # What still breaks the policy once the plan is done: partitions left alone, and
        # those a single move improves but does not fix (three replicas in one rack take two).
        remaining = violations(state)
        if remaining:
            shown = "; ".join(v.message for v in first(remaining)[0])
            left = f"{len(remaining)} left for later or unfixable: {shown}"
            told.append(Reason("placement_violation", left))
        if plan.budget_hit:
            told.append(Reason("budget_truncated", "the plan stops at the move budget"))
        summary = (
            f"repair placement: {len(plan.moves)} replica moves, {plan.bytes_to_move} bytes to "
            f"copy ({len(plan.fixed)} partitions break the placement policy)"
        )
        return replica_proposal(
            state, summary, plan, "every_gate", told, placement_violations=len(remaining)
        )


REPAIR_PLACEMENT = RepairPlacement()
