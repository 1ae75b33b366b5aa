"""The daemon's own situation in a cycle, which ``decide`` takes beside the snapshot, and the
rules that judge a decision by it (pure).

The planner judges the cluster; these judge the daemon: whether it may rebalance at all right
now (degraded mode), whether a plan of its own is still running (one plan at a time), what
stays unhealed while its moves run, and observe mode. ``decide`` applies them last, so a
cycle's outcome is shaped in one place (docs/architecture.md, "One heal, hop by hop").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from manager.analyzer.finish import held_back
from manager.analyzer.stale_view import Completed
from manager.model.decision import Decision, Outcome, Reason
from manager.model.mode import Mode

OBSERVE_WHY = "observe mode"


@dataclass(frozen=True)
class Situation:
    """The daemon's own situation in a cycle, which the rules below judge the decision by."""

    mode: Mode = "act"
    audit_on_failover: bool = False
    coordination_reliable: bool = True
    running: int = 0  # moves of kmedic's current plan in flight
    queued: int = 0  # and waiting to start
    previous: Decision | None = None  # the last cycle's decision
    # Moves the executor saw complete, which the snapshot must show (manager.analyzer.
    # stale_view): the daemon carries each for its settle bound.
    completed: tuple[Completed, ...] = ()


def judged(decided: Decision, situation: Situation) -> Decision:
    """The planner's decision under the daemon's rules, in their order: what stays unhealed
    while its moves run, degraded mode, one plan at a time, observe mode."""
    decision = keep_unhealed(decided, situation.previous)
    decision = degrade(
        decision,
        audit_on_failover=situation.audit_on_failover,
        coordination_reliable=situation.coordination_reliable,
    )
    decision = wait_for_plan(decision, running=situation.running, queued=situation.queued)
    if situation.mode == "observe":
        decision = observe_only(decision, OBSERVE_WHY)
    return decision


def _replace(
    decision: Decision, outcome: Outcome, summary: str, reasons: tuple[Reason, ...]
) -> Decision:
    """The same decision, nothing to do: no action, the loads left as they are."""
    return replace(
        decision,
        outcome=outcome,
        summary=summary,
        reasons=reasons,
        actions=(),
        bytes_to_move=0,
        loads_after=decision.loads_before,
        request_done=False,
    )


def degrade(
    decision: Decision, *, audit_on_failover: bool, coordination_reliable: bool
) -> Decision:
    """Degraded mode: while the audit log is on failover, or ZooKeeper is unreliable, heal
    but do not rebalance (healing restores redundancy; balancing can wait). A slow broker's
    demotion is not balancing: it moves leadership only, off a broker that slows every client
    it leads - the audit topic's too, which is often why the audit log is on failover."""
    if decision.outcome != "act" or decision.kind != "balance" or decision.demotes_slow:
        return decision
    why = []
    if audit_on_failover:
        why.append("the audit log is on its failover sink")
    if not coordination_reliable:
        why.append("coordination through ZooKeeper is unreliable")
    if not why:
        return decision
    reason = Reason("degraded_mode", "degraded mode, heal only: " + " and ".join(why))
    return _replace(decision, "refuse", "balancing is paused in degraded mode", (reason,))


def wait_for_plan(decision: Decision, *, running: int, queued: int) -> Decision:
    """One plan at a time: while moves of the current plan are pending or running, a new plan
    waits (the next cycle replans from what the cluster then looks like)."""
    if decision.outcome != "act" or running + queued == 0:
        return decision
    summary = f"waiting for the current plan: {running} moves running, {queued} queued"
    return _replace(decision, "noop", summary, ())


def keep_unhealed(decision: Decision, previous: Decision | None) -> Decision:
    """While kmedic's own moves run the planner plans nothing (it waits for them), so it cannot
    say what it could not heal: what the plan before left unhealed stays refused, and paged,
    until a plan is made again (the partial-heal alert went off while the healed part moved,
    and came back after)."""
    if previous is None or not previous.unhealed or decision.unhealed:
        return decision
    if not any(r.code == "own_reassignment_in_progress" for r in decision.reasons):
        return decision
    return replace(decision, unhealed=previous.unhealed)


def observe_only(decision: Decision, why: str) -> Decision:
    """Observe mode: a decision to act becomes a noop that keeps its whole plan - audited as
    ``would_act`` - and nothing is written to the cluster. Every other decision stands."""
    return held_back(decision, why)
