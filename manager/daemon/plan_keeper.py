"""The leader's side of acting: the in-flight plan in ZooKeeper and the executor carrying it out.

The stored plan is the truth a successor adopts, so every change to the cluster is preceded by
a fenced write of it (compare-and-set on its version, refused under a newer epoch):

- a decision to act is stored, with its moves and the move history of the hourly budget,
  before any of its moves is submitted;
- before every batch of moves and every throttle kmedic adds, the plan is written again with
  the throttles it will own (``before_change``), so a deposed leader starts nothing;
- as moves end, the plan is kept equal to the moves still active and the throttles owned;
  once all are done it is emptied, not deleted, so the history it carries outlives it.

Brokers back from a restart catching up (``manager.analyzer.rejoin.catch_ups``) have their
copies throttled as moves' copies: the executor steps while there are any, moves or not, and
the throttles it adds for them are stored first like any other (into an empty plan if none
is stored). Each broker's catch-up is audited when it starts and when it ends.

A fenced write sets ``drop_moves``: a newer leader exists and its plan, not ours, is the
truth; the manager forgets its moves at the start of its next cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.analyzer.rejoin import CatchUps
from manager.coordination.fenced import FencedError
from manager.coordination.move_budget import with_started
from manager.coordination.plan_document import (
    PlanDocument,
    moves_for,
    moves_to_adopt,
    plan_document,
    stored_progress,
    stored_throttles,
    synced,
    with_progress,
    with_throttles,
)
from manager.coordination.plan_store import StoredPlan
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.catch_up_report import CatchUpReport, rate_words
from manager.daemon.held_throttles import HeldThrottles
from manager.daemon.outcome import CycleOutcome
from manager.daemon.ports import Clock, Coordinator, Executor
from manager.model.decision import Decision
from manager.model.moves import Move
from manager.model.plan_progress import PlanProgress
from manager.throttling.ownership import ThrottleRecord
from manager.web.metrics import ManagerMetrics

log = get_logger(__name__)

NO_CATCH_UPS = CatchUps()


class PlanKeeper:
    """The stored plan as this instance last read or wrote it, and the executor it drives."""

    def __init__(
        self,
        coordinator: Coordinator,
        executor: Executor,
        trail: AuditTrail,
        clock: Clock,
        metrics: ManagerMetrics,
    ) -> None:
        self.coordinator = coordinator
        self.held = HeldThrottles(trail, metrics)  # what observe mode keeps set, said
        self.executor = executor
        self.trail = trail
        self.clock = clock
        self.plan: StoredPlan | None = None
        # When moves started (wall clock), as stored with the plan: the hourly budget.
        self.moves_started: list[tuple[float, int]] = []
        self.adopt = threading.Event()  # set when leadership is (re)acquired
        self.drop_moves = threading.Event()  # set when leadership is lost or a write is fenced
        self.catch_up_report = CatchUpReport(trail)
        # Told after every plan write that succeeded, before anything else happens: the ends
        # of the moves it no longer lists are audited then (move_report), not at a later
        # observe - a crash in between (the next batch's throttles and starts took 0.4 s in
        # the soak, and a SIGKILL landed there) would lose them.
        self.after_write: list[Callable[[], None]] = []

    def lead(self, stored: StoredPlan | None, catch_ups: CatchUps = NO_CATCH_UPS) -> None:
        """A leader's cycle: take the plan as ZooKeeper holds it now, adopt it after a
        failover, carry on with the moves and throttle the ``catch_ups``, or remove throttles
        nothing needs any more."""
        self.plan = stored
        self.held.acting()
        if self.adopt.is_set():
            self._adopt_plan()
        setting = self.executor.config.throttle_bytes_per_s
        if setting is None:  # no throttle to copy under: nothing to do for them
            catch_ups = CatchUps(down=catch_ups.down)
        self.executor.catch_up(catch_ups.partitions)
        if self.executor.active() or catch_ups.partitions:
            self.step()
        elif self.executor.owned_throttles():
            self._release_throttles()
        else:
            self.sync()  # after a write that failed: the plan lists only what is active
        self.catch_up_report.tell(catch_ups, rate_words(setting))

    def stand_down(self, writing: bool) -> None:
        """A clean stop of a leader that is ``writing`` (act mode): with no move active, the
        throttles kmedic owns (a catch-up's) are removed, for nothing lifts them until another
        manager leads; with moves active they stay, recorded in the plan, for the successor
        that adopts the moves."""
        if not writing or self.executor.active() or not self.executor.owned_throttles():
            return
        self.executor.catch_up(())
        self._release_throttles()
        self.catch_up_report.stopping()

    def execute(self, decision: Decision) -> CycleOutcome:
        """Store the plan (fenced), then start its moves; the outcome says which happened."""
        coord = self.coordinator
        if self.adopt.is_set():
            # Not yet seen: the predecessor's plan and its move history (the hourly budget).
            why = "the stored plan has not been adopted yet"
            return CycleOutcome.not_started("noop", decision, why)
        if not coord.verify_leadership():
            why = "leadership could not be verified just before acting"
            return CycleOutcome.not_started("standby", decision, why)
        moves = moves_for(decision)
        stored = self.plan
        history = list(stored.plan.moves_started) if stored else self.moves_started
        started = with_started(history, self.clock.time(), len(moves))
        owned = self.executor.owned_throttles()
        plan = plan_document(decision, moves, coord.epoch, started, owned)
        try:
            self._stored(coord.plans.write(plan, stored.version if stored else None))
        except FencedError as exc:
            self.drop_moves.set()
            return CycleOutcome.not_started("standby", decision, f"fenced: {exc}")
        except KmedicError as exc:
            why = f"the in-flight plan could not be stored: {exc}"
            return CycleOutcome.not_started("noop", decision, why)
        self.moves_started = started
        self.executor.submit(moves)
        self.step()
        return CycleOutcome.of(decision)

    def observing(self, stored: StoredPlan | None) -> bool:
        """An observing leader's cycle: the moves still active are left to Kafka (True: some
        were), and the throttles kmedic keeps set are said (manager.daemon.held_throttles)."""
        left = bool(self.executor.active())
        if left:
            self.leave_to_kafka()
        self.held.observing(stored if not left else self.plan)
        return left

    def leave_to_kafka(self) -> None:
        """Observe mode entered while moves of a plan are active: nothing steps the executor
        now, so its view of them would only go stale (and hold every later cycle on "kmedic's
        own reassignments"). The moves Kafka runs are left to it: the stored plan keeps them,
        and the throttles kmedic owns, so that acting again adopts them (completes what
        finished, removes what no move needs); the moves not yet started are dropped, not
        started later from an old view. Nothing is written to the cluster."""
        active = self.executor.active()
        if not active:
            return
        running = [s for s in active if s.status == "in_flight"]
        owned = self.executor.owned_throttles()
        stored = self.plan
        if stored is not None:
            kept = synced(stored.plan, {s.move.tp for s in running}, owned)
            if kept is not None:
                self._rewrite(kept, stored.version, "plan_sync_failed")
        self.executor.forget_moves()
        self.adopt.set()  # acting again starts from the stored plan, as after a failover
        dropped = len(active) - len(running)
        self.trail.record(
            "decision",
            f"observe mode: {len(running)} moves left to Kafka to finish, {dropped} not yet "
            "started dropped; kmedic starts no move and removes no throttle until it acts again",
            reasons=["mode: observe"],
            partitions=[s.move.key for s in running],
            details={"left_to_kafka": len(running), "dropped": dropped},
        )

    def step(self) -> None:
        with self.trail.gathered():
            try:
                self.executor.step()
            except KmedicError as exc:
                log.warning("executor_step_failed", error=str(exc))
                return
            self.sync()

    def before_change(self, batch: list[Move], throttles: ThrottleRecord) -> bool:
        """Before every batch of moves and every throttle kmedic adds: a fenced write of the
        plan with the throttles it will own. It fails unless this instance still leads with the
        current epoch, so a deposed leader starts nothing, and a successor removes exactly
        these throttles if this one crashes next."""
        self.trail.flush()  # what happened before the change is told first
        stored = self.plan
        if stored is None and batch:
            log.warning("batch_refused", moves=len(batch), why="no stored plan to record it in")
            return False
        try:
            self._stored(
                self.coordinator.plans.write(with_throttles(stored.plan, throttles), stored.version)
                if stored is not None
                else self.coordinator.plans.write(  # a catch-up's, before any plan
                    PlanDocument(epoch=self.coordinator.epoch, throttles=throttles), None
                )
            )
        except FencedError as exc:
            self.drop_moves.set()
            log.warning("batch_refused", moves=len(batch), why=f"fenced: {exc}")
            return False
        except KmedicError as exc:
            log.warning("batch_refused", moves=len(batch), why=str(exc))
            return False
        return True

    def sync(self) -> None:
        """Keep the stored plan equal to the moves still active and the throttles kmedic owns;
        when all are done it is emptied, not deleted, so that the move history it carries
        outlives it."""
        stored = self.plan
        if stored is None:
            return
        states = self.executor.active()
        changed = synced(
            stored.plan,
            {s.move.tp for s in states},
            self.executor.owned_throttles(),
            {s.move.tp: s.progress for s in states if s.progress is not None},
            [s.move.tp for s in states if s.stalled],
        )
        if changed is None:
            return
        self._rewrite(changed, stored.version, "plan_sync_failed")  # fenced: drop the moves

    def store_progress(self, progress: PlanProgress) -> None:
        """Where the whole plan stands, for `kmedic status` and `requests list` (read from
        ZooKeeper): one write per report, never one per sample."""
        stored = self.plan
        if stored is None or not stored.plan.moves:
            return
        changed = with_progress(stored.plan, progress, self.clock.time())
        self._rewrite(changed, stored.version, "plan_progress_unstored")

    def _rewrite(self, plan: PlanDocument, version: int, failed_event: str) -> None:
        """A fenced write of the stored plan: fenced sets ``drop_moves``, another failure is
        logged as ``failed_event`` (the next write tries again)."""
        try:
            self._stored(self.coordinator.plans.write(plan, version))
        except FencedError:
            self.drop_moves.set()
        except KmedicError as exc:
            log.warning(failed_event, error=str(exc))

    def _stored(self, written: StoredPlan) -> None:
        self.plan = written
        for told in self.after_write:
            try:
                told()
            except Exception as exc:  # telling must not undo a write that succeeded
                log.exception("after_plan_write_failed", error=str(exc) or type(exc).__name__)

    def _release_throttles(self) -> None:
        """No move runs: remove the throttles kmedic owns (left by a predecessor, or on a
        broker that was down when the last move ended)."""
        before = self.executor.owned_throttles()
        if not self.coordinator.verify_leadership():
            return  # a deposed leader's successor may need them for the moves it adopted
        try:
            left = self.executor.release_throttles()
        except KmedicError as exc:
            log.warning("throttle_release_failed", error=str(exc))
            return
        log.info(
            "throttles_released",
            topics=len({t for t, _ in before.replicas}),
            brokers=len({b for b, _ in before.rates}),
            waiting_brokers=sorted({b for b, _ in left.rates}),
        )
        self.sync()

    def _adopt_plan(self) -> None:
        """After a restart or failover: take over the throttles the stored plan records as
        kmedic's and continue the moves it still lists; with none left, the throttles are
        removed at once (a throttle without a move only slows recovery). Throttles kmedic
        did not record are never touched: they are an operator's."""
        self.adopt.clear()
        stored = self.plan
        if stored is None:
            return
        self.moves_started = list(stored.plan.moves_started)
        self.executor.adopt_throttles(stored_throttles(stored.plan))
        if not stored.plan.moves:
            return  # released by this cycle's step, once adoption is over
        moves = moves_to_adopt(stored.plan, {s.move.tp for s in self.executor.active()})
        self.executor.submit(moves, adopted=True)
        self.executor.resume_progress(stored_progress(stored.plan))  # the watchdog's clocks
        self.trail.record(
            "decision",
            f"adopted the in-flight plan of epoch {stored.epoch} by {stored.instance}: "
            f"{len(moves)} moves to continue",
            partitions=[m.key for m in moves],
            details={"adopted_from": stored.instance, "adopted_epoch": stored.epoch},
        )
