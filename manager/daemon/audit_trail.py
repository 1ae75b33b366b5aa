"""What the daemon writes to the audit log: decisions, moves, alerts — one record each.

Every record carries the cluster, the instance and its fencing epoch; where the record went
(primary, secondary, spool) is counted in the metrics. The records a step of the executor makes
are gathered and written together at its end (``gathered``), and before any change it makes to
the cluster: one wait for the audit topic's acknowledgement per step, not one per record.

Every record but an operator's is the leader's, written within its lease (``lease``: seconds
left; manager.audit.log says what is spooled and why). An operator's record (the HTTP API,
leader or standby) is bounded by the lease only where there is one.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Protocol

from manager.analyzer.health import in_grace
from manager.analyzer.slowness import Change
from manager.audit.log import AuditLog, AuditRecord
from manager.executor.move_state import MoveState
from manager.model.death import DeathClass
from manager.model.decision import Decision
from manager.model.plan_progress import PlanProgress
from manager.model.snapshot import Snapshot
from manager.throttling.adaptive import RateFigures, rate_sentence
from manager.web.metrics import ManagerMetrics

RECENT_RECORDS = 50

_MOVE_VERBS = {
    "action_started": "started",
    "action_progress": "in progress",
    "action_completed": "completed",
    "action_failed": "failed",
    "alert_raised": "is stuck",
}
_MOVE_RESULTS = {
    "action_started": "started",
    "action_completed": "completed",
    "action_failed": "failed",
}


class AuditTrail:
    def __init__(
        self,
        log_: AuditLog,
        metrics: ManagerMetrics,
        *,
        cluster: str,
        instance: str,
        epoch: Callable[[], int],
        lease: Callable[[], float] = lambda: math.inf,
    ) -> None:
        self.log = log_
        self._metrics = metrics
        self._cluster = cluster
        self._instance = instance
        self._epoch = epoch
        self._lease = lease
        self._alerts: dict[str, str] = {}
        self._waiting: frozenset[int] = frozenset()  # brokers of the wait last recorded
        self._wait_classes: dict[int, DeathClass | None] = {}  # and the class each was waited as
        # The newest records as stored, for the status page.
        self.recent: deque[AuditRecord] = deque(maxlen=RECENT_RECORDS)
        self._gathering = threading.local()  # .records: this thread's, while gathered

    def record(self, kind: str, summary: str, **fields: Any) -> None:
        """A record of the leader's (written within its lease, or spooled past it)."""
        record = self._made(kind, summary, **fields)
        gathering: list[AuditRecord] | None = getattr(self._gathering, "records", None)
        if gathering is not None:
            gathering.append(record)
            return
        self._store([record])

    def operator(self, summary: str, details: dict[str, Any]) -> None:
        """An operator's write through the API, which any instance answers: written at once,
        within the lease where this instance holds one, behind any spooled record otherwise."""
        left = self._lease()
        leading = left > 0
        stored = self.log.write_all(
            [self._made("operator", summary, details=details)],
            within_s=left if leading else None,
            replay=leading,
        )
        self._kept(stored)

    def _made(self, kind: str, summary: str, **fields: Any) -> AuditRecord:
        return AuditRecord(
            cluster=self._cluster,
            instance=self._instance,
            epoch=self._epoch(),
            kind=kind,  # type: ignore[arg-type]
            summary=summary,
            reasons=tuple(fields.pop("reasons", ())),
            partitions=tuple(fields.pop("partitions", ())),
            **fields,
        )

    @contextmanager
    def gathered(self) -> Iterator[None]:
        """The records this thread makes inside are written together when it ends (or at a
        ``flush``), in the order they were made. A step that starts fourteen moves waited
        fourteen times on the audit topic's leader, three seconds each when that leader was
        a slow broker being demoted: its elections came 28 s late, after a follower had left
        the ISR (found by CI). Records of other threads (the HTTP API's) are written at once."""
        if getattr(self._gathering, "records", None) is not None:
            yield  # the outermost writes
            return
        self._gathering.records = []
        try:
            yield
        finally:
            try:
                self.flush()
            finally:
                self._gathering.records = None

    def flush(self) -> None:
        """Write what this thread has gathered so far (before a change to the cluster: what
        happened before it is in the audit log first)."""
        records: list[AuditRecord] | None = getattr(self._gathering, "records", None)
        if records:
            self._gathering.records = []
            self._store(records)

    def _store(self, records: list[AuditRecord]) -> None:
        left = self._lease()
        self._kept(self.log.write_all(records, within_s=None if math.isinf(left) else left))

    def _kept(self, records: list[AuditRecord]) -> None:
        for stored in records:
            self.recent.append(stored)
            self._metrics.count_audit_record(stored.sink)

    def recent_records(self) -> list[AuditRecord]:
        """A copy of the newest records, safe to take from another thread."""
        for _ in range(5):
            try:
                return list(self.recent)
            except RuntimeError:  # appended to while copying: copy again
                continue
        return []

    @property
    def active_alerts(self) -> dict[str, str]:
        return dict(self._alerts)

    def decision(self, decision: Decision, snap: Snapshot | None) -> None:
        """One record per cycle; ``snap`` is None when the cycle could not observe the cluster.
        A wait is recorded once when it starts (and again if its brokers change, or the class
        of a broker's death: a restart seen starting waits longer than the timer) and once when
        it is over. (The log line is the daemon loop's: one per cycle, with the outcome.)"""
        if snap is not None:
            waiting = frozenset(in_grace(snap)) if decision.outcome == "wait" else frozenset()
            if self._waiting - waiting:
                self._wait_over(sorted(self._waiting - waiting), snap, decision)
            classes = {
                b.id: b.death.kind if b.death is not None else None
                for b in snap.brokers
                if b.id in waiting
            }
            unchanged = (
                decision.outcome == "wait"
                and waiting == self._waiting
                and classes == self._wait_classes
            )
            self._waiting, self._wait_classes = waiting, classes
            if unchanged:
                return
        # Why each dead broker counts as dead: both signals, in the record on-call reads.
        dead_brokers = [b for b in snap.brokers if not b.alive] if snap else []
        dead = [b.id for b in dead_brokers]
        taken_at = snap.taken_at if snap else 0
        why_dead = [f"dead_broker_evidence: {b.death_evidence(taken_at)}" for b in dead_brokers]
        self.record(
            "would_act" if decision.would_act else "decision",
            f"{decision.outcome}: {decision.summary}",
            reasons=[f"{r.code}: {r.message}" for r in decision.reasons]
            + [f"unhealed: {r.code}: {r.message}" for r in decision.unhealed]
            + why_dead,
            partitions=sorted({f"{a.topic}:{a.partition}" for a in decision.actions}),
            details={
                "outcome": decision.outcome,
                "kind": decision.kind,
                "actions": [a.to_dict() for a in decision.actions],
                "bytes_to_move": decision.bytes_to_move,
                "dead_brokers": dead,
                "snapshot_taken_at": snap.taken_at if snap else None,
            },
        )

    def _wait_over(self, brokers: list[int], snap: Snapshot, decision: Decision) -> None:
        alive = {b.id for b in snap.brokers if b.alive}
        still = set(in_grace(snap))

        def why(b: int) -> str:
            if b in alive:
                return f"broker {b} is back"
            if b in still:
                return f"broker {b} is in its grace period, but the decision is {decision.outcome}"
            return f"broker {b} is past its grace period"

        self.record(
            "decision",
            "wait over: " + "; ".join(why(b) for b in brokers),
            details={"outcome": "wait_over", "brokers": brokers},
        )

    def alerts(self, active: dict[str, str]) -> None:
        """Record each alert that appeared or disappeared since the last call."""
        for name in sorted(set(active) - set(self._alerts)):
            self.record("alert_raised", f"alert {name}: {active[name]}", reasons=[name])
        for name in sorted(set(self._alerts) - set(active)):
            self.record("alert_cleared", f"alert {name} cleared", reasons=[name])
        self._alerts = active

    def move_event(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        move = state.move
        reason = details.get("reason")
        verb = _MOVE_VERBS.get(kind, kind) + (
            " before it started" if details.get("not_started") else ""
        )
        summary = f"move of {move.key} {list(state.original)} -> {list(move.target)} {verb}"
        self.record(
            kind,
            summary + (f": {reason}" if reason else ""),
            partitions=[move.key],
            before={"replicas": list(state.original)},
            after={"replicas": list(move.target)},
            details={k: v for k, v in {**details, **state.details}.items() if v is not None},
            reasons=[str(reason)] if reason else [],
        )
        result = _MOVE_RESULTS.get(kind)
        if result:
            self._metrics.record_action("reassign", result)
        if kind == "action_completed":
            self._metrics.moves.add_bytes_moved(
                move.size_bytes * len(set(move.target) - set(state.original))
            )

    def slowness(self, changes: list[Change]) -> None:
        """Each broker found slow, or recovering, or getting its leadership back."""
        for c in changes:
            details = {"broker": c.broker, "state": c.state, "score": c.score}
            self.record("slowness", c.said, details=details)

    def throttle_rates(self, figures: list[RateFigures]) -> None:
        """The adaptive throttle changed rates: each with the traffic and capacity behind it."""
        said = "; ".join(rate_sentence(f) for f in figures)
        details = {"throttle_rates": [asdict(f) for f in figures]}
        self.record("action_progress", f"throttle rates set: {said}", details=details)

    def plan_progress(self, progress: PlanProgress, *, ended: bool, elapsed_s: float) -> None:
        """The running plan's figures: periodically while it runs, and once when it ends."""
        said = (
            f"plan done {progress.done_sentence(elapsed_s)}"
            if ended
            else f"plan running: {progress.sentence()}"
        )
        details = {"plan": progress.to_field(), "elapsed_s": round(elapsed_s, 1)}
        self.record("action_progress", said, details=details)


class LeaseHolder(Protocol):
    @property
    def connected(self) -> bool: ...

    @property
    def is_leader(self) -> bool: ...

    def lease_left_s(self) -> float: ...


def replay_bound(coordinator: LeaseHolder) -> float | None:
    """How long this instance may spend replaying its audit spool: within the lease while it
    leads; unbounded (the write timeout alone) as a connected standby, which knows it leads
    nothing - its spooled records are of an epoch it held before, and reach the topic tagged
    with it, outside any spell in which it could still have been taken for the leader; not at
    all (0) while it cannot tell: disconnected, or leading without a lease."""
    if not coordinator.connected:
        return 0.0
    return coordinator.lease_left_s() if coordinator.is_leader else None
