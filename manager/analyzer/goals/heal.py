"""Heal: every replica lost with a dead broker (past its grace) or a failed log directory
gets a new home (``manager.analyzer.heal``). A heal never waits for the load pipeline:
restoring redundancy needs no traffic figures, so with stale loads it places replicas by size
and replica count (every constraint still held) and says so."""

from __future__ import annotations

from manager.analyzer.goal import Context, HeldBy, Proposal, Settled, replica_proposal
from manager.analyzer.heal import HealPlan, plan_heal
from manager.analyzer.placement_state import ClusterState
from manager.model.decision import Reason


class Heal:
    name = "heal"
    tidying = False
    needs_calm = False

    def applies(self, ctx: Context) -> bool:
        return bool(ctx.state.dead or ctx.state.offline)

    def propose(self, ctx: Context) -> Proposal | None:
        state = ctx.heal_state()
        plan = plan_heal(state, partial=True)
        if not plan.moves and not plan.blocked:
            return None  # the dead brokers held no replica: nothing to heal
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
        told = [
            Reason("broker_dead", f"broker {b} is dead past its grace period; its replicas move")
            for b in state.dead
        ]
        told += [
            Reason(
                "log_dir_failed",
                f"broker {b} is alive but {n} of its replicas are offline (a failed log "
                "directory); they move to other brokers, since Kafka recreates an offline "
                "replica only when its broker restarts",
            )
            for b, n in failed.items()
        ]
        if plan.exact is not None and not plan.blocked:
            told.append(Reason("heal_exact_placement", plan.exact))
        if ctx.stale:
            told.append(
                Reason(
                    "heal_without_loads",
                    "replicas placed by partition size and replica count, because the loads "
                    "are stale: " + "; ".join(r.message for r in ctx.stale),
                )
            )
        return partial_heal(state, plan, summary, told, "heal_gates")

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        switches = ctx.snap.policy.goals
        off = []
        if ctx.state.dead and not switches.heal_dead_brokers:
            off.append("heal_dead_brokers")
        if ctx.state.offline and not switches.heal_failed_disks:
            off.append("heal_failed_disks")
        return tuple(off)


def partial_heal(
    state: ClusterState,
    plan: HealPlan,
    summary: str,
    told: list[Reason],
    held_by: HeldBy,
) -> Proposal:
    """A heal's proposal: the partitions it placed act, those it could not are refused by
    name (and the summary says how many)."""
    if plan.blocked and plan.moves:
        summary += f"; {len(plan.blocked)} partitions cannot be healed (refused, paged)"
    return replica_proposal(
        state,
        summary,
        plan,
        held_by,
        told,
        kind="heal",
        blocked=tuple(plan.blocked),
        exact=plan.exact,
        partial=True,
    )


def _failed_disks(state: ClusterState) -> dict[int, int]:
    """Live brokers with offline replicas, and how many each."""
    counts: dict[int, int] = {}
    for gone in state.offline.values():
        for b in gone:
            counts[b] = counts.get(b, 0) + 1
    return dict(sorted(counts.items()))


HEAL = Heal()
