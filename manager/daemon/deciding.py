"""The leader's decision for one cycle: the planner (pure, run with the garbage collector
paused) on the snapshot and the daemon's own situation, which it judges the decision by -
what stays unhealed while its moves run, degraded mode, one plan at a time, observe mode
(``manager.analyzer.situation``)."""

from __future__ import annotations

from collections.abc import Callable

from kmedic.gc_pause import collector_paused
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.planner import decide
from manager.analyzer.situation import Situation
from manager.analyzer.stale_view import Completed
from manager.executor.move_state import MoveState
from manager.model.decision import Decision
from manager.model.mode import Mode
from manager.model.snapshot import Snapshot


def decide_cycle(
    snap: Snapshot,
    monotonic: Callable[[], float],
    *,
    audit_on_failover: bool,
    coordination_reliable: bool,
    active: list[MoveState],
    mode: Mode,
    previous: Decision | None = None,
    memory: ListsMemory | None = None,
    completed: tuple[Completed, ...] = (),
) -> tuple[Decision, float]:
    """The decision, and the seconds the planner took (``previous``: the last cycle's;
    ``memory``: the daemon's planner lists, kept between its decisions)."""
    running = sum(1 for m in active if m.status == "in_flight")
    situation = Situation(
        mode=mode,
        audit_on_failover=audit_on_failover,
        coordination_reliable=coordination_reliable,
        running=running,
        queued=len(active) - running,
        previous=previous,
        completed=completed,
    )
    started = monotonic()
    with collector_paused():
        decision = decide(snap, situation, memory)
    return decision, monotonic() - started
