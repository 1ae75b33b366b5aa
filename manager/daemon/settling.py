"""A monotonic view: a cycle never decides on metadata older than moves it saw complete.

The rule is the analyzer's (``manager.analyzer.stale_view``): a snapshot that contradicts a
move the executor saw complete is a *wait*. Here is the daemon's side of it: every completed
move is carried into the cycles that follow for ``SETTLE_BOUND_S``; a snapshot that
contradicts one is read again before deciding; the wait is audited once per episode (no
alert). Past the bound a contradiction is a real finding: it is reported once, the move is no
longer carried, and the planner judges the view as it is. The bound is longer than the
brokers' metadata propagation (seconds) and than the executor's own settle time
(``METADATA_SETTLE_S``), and short against the grace and alert periods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from manager.analyzer.stale_view import Completed, Contradiction, contradictions, describe
from manager.daemon.audit_trail import AuditTrail
from manager.model.decision import Decision
from manager.model.moves import Move, TopicPartition
from manager.model.snapshot import Snapshot

SETTLE_BOUND_S = 30.0


@dataclass(frozen=True)
class Expected:
    target: tuple[int, ...]
    completed_at: float  # monotonic seconds


class SettledMoves:
    """The moves seen complete, expected in every snapshot for ``bound_s``."""

    def __init__(self, bound_s: float = SETTLE_BOUND_S) -> None:
        self.bound_s = bound_s
        self._expected: dict[TopicPartition, Expected] = {}

    def completed(self, move: Move, now: float) -> None:
        self._expected[move.tp] = Expected(tuple(move.target), now)

    def forget(self) -> None:
        """Leadership lost: a successor's moves are its own to expect."""
        self._expected.clear()

    def carried(self) -> tuple[Completed, ...]:
        """The moves still expected, as ``decide`` takes them (``Situation.completed``)."""
        return tuple(Completed(tp, want.target) for tp, want in sorted(self._expected.items()))

    def past_bound(self, snap: Snapshot, now: float) -> list[Contradiction]:
        """The expectations past the bound, dropped: those ``snap`` contradicts are findings."""
        late = {
            tp: want
            for tp, want in self._expected.items()
            if now - want.completed_at > self.bound_s
        }
        for tp in late:
            del self._expected[tp]
        return contradictions(snap, (Completed(tp, want.target) for tp, want in late.items()))


class MonotonicView:
    """The leader's side: carries what the executor saw complete, reads a contradicting
    snapshot again, and audits a wait once per episode and each finding once."""

    def __init__(self, trail: AuditTrail, bound_s: float = SETTLE_BOUND_S) -> None:
        self.moves = SettledMoves(bound_s)
        self._trail = trail
        self.waiting = False  # the last cycle waited for the metadata to catch up

    def settle(self, snap: Snapshot, read_again: Callable[[], Snapshot], now: float) -> Snapshot:
        """The snapshot to decide on: read again once if it contradicts a move still carried.
        Contradictions past the bound are audited once, as findings."""
        found = self.moves.past_bound(snap, now)
        if contradictions(snap, self.moves.carried()):
            snap = read_again()
        if found:
            self._trail.record(
                "decision",
                "the cluster metadata still contradicts moves seen complete "
                f"{self.moves.bound_s:.0f} s ago; judged as it is: {describe(found)}",
                reasons=["stale_metadata_past_bound"],
                partitions=[f"{c.tp[0]}:{c.tp[1]}" for c in found],
            )
        return snap

    def decided(self, decision: Decision) -> bool:
        """Whether ``decision`` is a wait for the view to catch up (audited once per episode:
        a wait, never an alert); the cycle then keeps its alerts and history as they were."""
        if not decision.view_behind:
            self.waiting = False
            return False
        if not self.waiting:
            self._trail.record("decision", f"wait: {decision.summary}", reasons=["stale_metadata"])
        self.waiting = True
        return True
