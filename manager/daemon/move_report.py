"""What the leader says about its moves, between and within cycles: the move gauges, the
status page's list, each move's audit record (with where the whole plan stands) and the plan's
own progress records (manager.daemon.plan_report decides when).

A move's end (``action_completed``, ``action_failed``) is audited once the stored plan no
longer lists the move, right after the fenced write that removes it (nothing else happens in
between): that write proves this instance still leads, and after it no successor adopts the
move. Until then the record is held: a write that failed is
tried again at the next sync, and one that was fenced leaves the move, and its record, to the
leader that adopts the plan. So each move's end is audited once across leaders (a crash
between that write and the audit loses the record rather than doubling it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kmedic.logging import get_logger
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.plan_keeper import PlanKeeper
from manager.daemon.plan_report import PlanReport
from manager.daemon.ports import Clock, Executor
from manager.daemon.settling import SettledMoves
from manager.executor.move_state import MoveState
from manager.model.plan_progress import PlanProgress
from manager.web.metrics import ManagerMetrics

log = get_logger(__name__)

RATE_WEIGHT = (
    0.2  # each sample's (one per progress_sample_s) weight in the smoothed per-move copy rate
)


class MoveReport:
    def __init__(
        self,
        executor: Executor,
        metrics: ManagerMetrics,
        trail: AuditTrail,
        keeper: PlanKeeper,
        settled: SettledMoves,
        clock: Clock,
    ) -> None:
        self.executor = executor
        self.metrics = metrics
        self.trail = trail
        self.keeper = keeper
        self.settled = settled
        self.clock = clock
        config = executor.config
        self.plan = PlanReport(config.progress_interval_s, config.progress_sample_s)
        self.shown: tuple[MoveState, ...] = ()  # for the status page's thread
        # The copy rate per move in flight, smoothed over the plans this leader ran: the
        # readiness sweep's heal-time estimate uses it (None: none measured yet).
        self.move_rate: float | None = None
        self._rate_at = float("-inf")
        self._last_failure: dict[str, str] = {}  # "topic:partition" -> why its move failed
        self._ended: list[tuple[str, MoveState, dict[str, Any]]] = []  # held until unlisted

    @property
    def progress(self) -> PlanProgress | None:
        return self.plan.latest

    def observe(self) -> None:
        """After every cycle and every poll: the gauges, and the plan's record when due. What
        goes wrong here is logged, never raised: telling must not stop a heal."""
        try:
            self._observe()
        except Exception as exc:
            log.exception("move_report_failed", error=str(exc) or type(exc).__name__)

    def _observe(self) -> None:
        self.audit_ends()
        active = self.executor.active()
        self.shown = tuple(active)
        now = self.clock.monotonic()
        flight = self.executor.in_flight()
        oldest = max((now - s.started_at for s in flight if s.started_at is not None), default=0.0)
        self.metrics.moves.observe_moves(len(flight), oldest, sum(1 for s in flight if s.stalled))
        self.metrics.moves.observe_throttle_rates(self.executor.throttle_rates())
        look = self.plan.look(active, now)
        self.metrics.moves.observe_plan_progress(None if look.ended else look.progress)
        rate = look.progress.rate_bytes_per_s if look.progress else None
        if rate and flight and now - self._rate_at >= self.executor.config.progress_sample_s:
            self._rate_at = now
            sample = rate / len(flight)
            last = self.move_rate
            self.move_rate = sample if last is None else last + RATE_WEIGHT * (sample - last)
        if look.progress is not None and (look.due or look.ended):
            self.trail.plan_progress(look.progress, ended=look.ended, elapsed_s=look.elapsed_s)
            if look.due:
                self.keeper.store_progress(look.progress)

    def event(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        """The executor's events: each move's record says where the whole plan stands."""
        plan = self.plan.current(self.executor.active())
        if plan is not None:
            details = {**details, "plan": plan.to_field()}
        if kind in ("action_completed", "action_failed"):
            # Held once: a move this instance already saw end, adopted again from the plan its
            # failed write left listing it (its own session lost and taken back), ends again.
            move = state.move
            if not any(
                s.move.tp == move.tp and s.move.target == move.target for _, s, _ in self._ended
            ):
                self._ended.append((kind, state, details))
        else:
            self.trail.move_event(kind, state, details)
        if kind == "action_completed":
            self.settled.completed(state.move, self.clock.monotonic())
        if kind in ("action_completed", "action_failed"):
            self._last_failure.pop(state.move.key, None)
            if kind == "action_failed" and state.error is not None:
                self._last_failure[state.move.key] = state.error

    def last_failures(self, partitions: Iterable[str]) -> dict[str, str]:
        """Why the last move of each of ``partitions`` ("topic:partition") failed, for those
        whose last move did (kept across plans: a replan replaces the executor's record)."""
        return {p: why for p in partitions if (why := self._last_failure.get(p)) is not None}

    def audit_ends(self) -> None:
        """The held ends of moves the stored plan no longer lists, in the order they ended;
        none once this instance is told to drop its moves (a fenced write: the successor
        adopts them, and reports their ends)."""
        if self.keeper.drop_moves.is_set():
            self._ended.clear()
            return
        stored = self.keeper.plan
        listed = {m.tp for m in stored.plan.moves} if stored is not None else set()
        held = []
        for kind, state, details in self._ended:
            if state.move.tp in listed:
                held.append((kind, state, details))
            else:
                self.trail.move_event(kind, state, details)
        self._ended = held

    def forget(self) -> None:
        """The moves are dropped (leadership lost: the successor reports the moves it adopts,
        and their ends) or left to Kafka (observe mode): ends already unlisted are told."""
        self.audit_ends()
        self._ended.clear()
        self.settled.forget()
        self.plan.forget()
