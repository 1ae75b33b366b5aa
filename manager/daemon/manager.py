"""The manager daemon: observe, decide, act or refuse — one cycle at a time, audited.

Each cycle reads ZooKeeper once (placement config, in-flight plan, epoch), builds one
immutable snapshot, runs the pure planner over it, and acts only when this instance leads
with a current fencing epoch; one outcome, one sentence (manager.daemon.outcome), logged once.
Standbys observe and export metrics but neither decide nor write the audit log. The in-flight
plan lives in ZooKeeper (compare-and-set on its version), so a new leader adopts it instead of
starting over or leaving moves orphaned (storing plans, driving the executor: plan_keeper).
Collaborators are passed in: manager.daemon.wiring builds the real ones, unit tests pass fakes.
"""

from __future__ import annotations

import threading
from typing import Any

from kmedic.logging import get_logger
from manager.analyzer.health import alerts_for, heal_needed
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.rejoin import catch_ups
from manager.api.server import ApiServer
from manager.audit.log import AuditLog
from manager.config import ManagerConfig
from manager.coordination.state import CoordinationState
from manager.daemon.alert_timing import AlertTiming
from manager.daemon.api_view import serve_api
from manager.daemon.audit_trail import AuditTrail, replay_bound
from manager.daemon.blind import blind
from manager.daemon.deciding import decide_cycle
from manager.daemon.foreign_watch import ForeignWatch
from manager.daemon.mode import ModeTracker
from manager.daemon.move_report import MoveReport
from manager.daemon.observation import (
    ClusterUnobservable,
    observe_cluster,
    read_state,
    save_snapshot,
    standby_sentence,
)
from manager.daemon.outcome import CycleOutcome
from manager.daemon.pacing import next_cycle_at
from manager.daemon.plan_keeper import PlanKeeper
from manager.daemon.ports import Clock, Coordinator, Executor, Sources, SystemClock
from manager.daemon.readiness_sweep import ReadinessSweep, pace_of
from manager.daemon.requests import RequestFollower
from manager.daemon.settling import MonotonicView
from manager.daemon.slow_tracker import SlowTracker
from manager.daemon.startup import start_coordination
from manager.daemon.stepping import Stepper
from manager.daemon.switches import SwitchTracker
from manager.daemon.warm_up import WarmUp, rehearsal
from manager.daemon.zk_outage import ZkOutage
from manager.model.decision import Decision
from manager.model.mode import Mode
from manager.model.reasons import ReasonCode
from manager.model.snapshot import Leadership, Snapshot
from manager.monitor.carried import Carried
from manager.web.load_history import LoadHistory
from manager.web.metrics import ManagerMetrics, observe_snapshot
from manager.web.status_page import status_document

log = get_logger(__name__)

# A decision made on these loads does not go into the status page's load history.
_STALE_LOADS: frozenset[ReasonCode] = frozenset({"stale_load_data", "heal_without_loads"})


class Manager:
    """One manager instance. ``start`` connects everything; ``cycle`` runs one cycle and
    returns its outcome; ``run`` loops (logging each outcome) until ``stop``."""

    def __init__(
        self,
        cfg: ManagerConfig,
        *,
        instance: str,
        sources: Sources,
        coordinator: Coordinator,
        executor: Executor,
        audit: AuditLog,
        clock: Clock | None = None,
        mode_flag: Mode | None = None,
    ) -> None:
        self.cfg = cfg
        self.instance = instance
        self.sources = sources
        self.coordinator = coordinator
        self.executor = executor
        self.audit = audit
        self.clock: Clock = clock or SystemClock()
        self.metrics = ManagerMetrics(cfg.cluster, own_topics=cfg.topics.own())
        # Leading means may act: an instance cut off from ZooKeeper cannot prove it leads.
        self.metrics.follow_leadership(coordinator)
        self.server: ApiServer | None = None
        self._stop = threading.Event()
        self.lists = ListsMemory()  # the planner's, kept between decisions (cycle and sweep)
        rehearse = rehearsal(cfg, sources, coordinator, instance, self.clock.time, self.lists)
        self._warm_up = WarmUp(self.clock.monotonic, rehearse)
        self._last_cycle_ok = self.clock.monotonic()
        self.last_decision: Decision | None = None
        self.last_snapshot: Snapshot | None = None
        self.load_history = LoadHistory()  # for the status page's chart
        self._zk_outage = ZkOutage()
        self.slow = SlowTracker()
        self.mode = ModeTracker(cfg.mode, mode_flag)
        self.switches = SwitchTracker()
        self.trail = AuditTrail(
            audit,
            self.metrics,
            cluster=cfg.cluster,
            instance=instance,
            epoch=lambda: coordinator.epoch,
            lease=coordinator.lease_left_s,
        )
        self.timing = AlertTiming(
            self.metrics,
            epoch=lambda: coordinator.epoch,
            failover_spell=lambda: audit.failover_spell,
            failover_alert_after_s=cfg.audit.failover_alert_after_s,
            blind_alert_after_s=cfg.blind_alert_after_s,
            lag_alert_after_s=cfg.lag_alert_after_s,
            refusal_alert_after_s=cfg.refusal_alert_after_s,
        )
        self.keeper = PlanKeeper(coordinator, executor, self.trail, self.clock, self.metrics)
        self.view = MonotonicView(self.trail)
        self.moves = MoveReport(
            executor, self.metrics, self.trail, self.keeper, self.view.moves, self.clock
        )
        self.requests = RequestFollower(
            coordinator, self.trail, self.metrics, self.clock.monotonic, executor, self.moves
        )
        # Every callback between the daemon's parts, here and nowhere else: the executor tells
        # its moves' events and its rate changes, and asks before each change that makes
        # kmedic own more (the keeper's fenced plan write); the write that unlists moves tells
        # their ends (the move report). The executor and the keeper each need the other, so
        # these are handed over once both exist.
        executor.on_event = self.moves.event
        executor.on_rates = self.trail.throttle_rates
        executor.before_change = self.keeper.before_change
        self.keeper.after_write.append(self.moves.audit_ends)
        self.stepper = Stepper(
            executor=executor,
            coordinator=coordinator,
            keeper=self.keeper,
            moves=self.moves,
            acting=self._writing,
            clock=self.clock,
        )
        self.foreign = ForeignWatch(executor.sizes, executor.config.stall_s)
        self.readiness = ReadinessSweep(
            cfg.readiness,
            coordinator,
            self.trail,
            self.metrics,
            pace=lambda: pace_of(executor.config, cfg.readiness, self.moves.move_rate),
            memory=self.lists,
        )
        coordinator.watch(
            on_leadership_acquired=self._on_leadership_acquired,
            on_leadership_lost=self._on_leadership_lost,
            on_shutdown=lambda reason: self.request_stop(),
        )

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> Manager:
        self.server = serve_api(self)
        self.metrics.observe_observable(False)  # until a cycle has read the cluster
        self.sources.start(on_registrations=self.wake)  # a broker fenced or back: a cycle now
        if not start_coordination(self.coordinator, self._stop):
            return self  # stopped while waiting for ZooKeeper
        self._warm_up.rehearse_once()  # before the first cycle, whatever the feeds have read
        self.readiness.start()
        log.info(
            "manager_started",
            instance=self.instance,
            cluster=self.cfg.cluster,
            metrics_port=self.server.port,
        )
        return self

    def stop(self) -> None:
        self.request_stop()
        closers = [self.readiness.stop, self._stand_down, self.coordinator.stop, self.sources.stop]
        closers += [self.executor.close, self.audit.close]
        if self.server is not None:
            closers.append(self.server.stop)
        for closer in closers:
            try:
                closer()
            except Exception as exc:  # keep closing the rest
                step = getattr(closer, "__qualname__", "?")
                log.warning("shutdown_step_failed", step=step, error=str(exc))

    def _stand_down(self) -> None:
        self.keeper.stand_down(self.coordinator.may_act() and self._writing())

    def run(self) -> None:
        while not self._stop.is_set():
            started = self.clock.monotonic()
            self.run_once()
            self.stepper.wait_for_cycle(self._next_cycle_at(started))

    def _next_cycle_at(self, started: float) -> float:
        clock, snap = self.clock, self.last_snapshot
        return next_cycle_at(
            started,
            self.cfg.interval_s,
            reading=bool(self._warm_up.reading) or self.view.waiting,  # look again soon
            snap=snap,
            now_monotonic=clock.monotonic(),
            now_s=clock.time(),
        )

    def run_once(self) -> CycleOutcome | None:
        """One cycle, its outcome logged once (None: the cycle failed; logged with why)."""
        try:
            with self.readiness.cycle_running():
                outcome = self.cycle()
        except Exception as exc:  # one bad cycle must not end the daemon
            log.exception("cycle_failed", error=str(exc))
            return None
        level = "warning" if outcome.kind in ("refuse", "blind") else "info"
        actions = len(outcome.decision.actions) if outcome.decision else 0
        getattr(log, level)(
            "cycle",
            outcome=outcome.kind,
            sentence=outcome.sentence,
            reasons=list(outcome.reasons),
            actions=actions,
        )
        return outcome

    def _writing(self) -> bool:
        """Act mode, and a controller quorum with a leader: without one every write to the
        cluster (a reassignment, a throttle) waits out its whole timeout and commits nothing."""
        quorum = self.last_snapshot.quorum if self.last_snapshot is not None else None
        return self.mode.current == "act" and (quorum is None or quorum.state != "leaderless")

    def request_stop(self) -> None:
        self._stop.set()
        self.stepper.wake()

    def wake(self) -> None:
        """Run the next cycle now, not up to ``interval_s`` later (a broker fenced or back)."""
        self.stepper.wake()

    # ---- one cycle ----------------------------------------------------------------------

    def cycle(self) -> CycleOutcome:
        t0 = self.clock.monotonic()
        coord = self.coordinator
        self.audit.replay(within_s=replay_bound(coord))
        self.metrics.observe_audit(self.audit.on_failover, self.audit.spool.pending())
        if self.keeper.drop_moves.is_set():
            self.keeper.drop_moves.clear()
            self.executor.forget_moves()
            self.keeper.catch_up_report.forget()
            self.moves.forget()  # dropped, not done: no "plan done" record
        if not coord.connected or (coord.is_leader and not coord.may_act()):
            return self._zk_outage.blind_cycle(self.clock.time())
        if reading := self._warm_up.still_reading(self.sources.feed_status):
            topics = ", ".join(reading)
            return CycleOutcome("wait", f"wait: reading {topics} to the end before deciding")
        try:
            state = read_state(self.coordinator)
            snap = self._snapshot(state)
        except ClusterUnobservable as exc:
            return self._refuse_blind(str(exc))
        self.metrics.observe_observable(True)
        self.timing.seen_clearly()
        facts = observe_snapshot(self.metrics, snap, self.cfg.policy, self.slow.cluster_slow)
        slow_changes = self.slow.take_changes()
        if not coord.may_act():
            self._zk_outage.forget()  # the leader tells it
            return CycleOutcome("standby", standby_sentence(state, facts.dead_brokers))
        self.trail.slowness(slow_changes)
        self._zk_outage.audit_if_over(self.trail, self.clock.time(), facts.dead_brokers)
        self.readiness.report(snap)
        mode = self.mode.follow(state.mode, self.trail)
        self.switches.follow(state.switches, self.trail)
        self.metrics.observe_mode(mode)
        if self._writing():  # observe mode writes nothing: no adopted move, no throttle removed
            self.requests.cordon(state.requests, snap)
            self.keeper.lead(state.plan, catch_ups(snap))
            self.moves.observe()  # before any wait below: a plan that just ended says so
        elif mode == "observe" and self.keeper.observing(state.plan):
            self.moves.forget()  # left, not done: no "plan done" record
        snap = self.view.settle(snap, lambda: self._snapshot(state), self.clock.monotonic())
        decision, plan_s = decide_cycle(
            snap,
            self.clock.monotonic,
            audit_on_failover=self.audit.on_failover,
            coordination_reliable=coord.may_act(),
            active=self.executor.active(),
            mode=mode,
            previous=self.last_decision,
            memory=self.lists,
            completed=self.view.moves.carried(),
        )
        if self.view.decided(decision):  # the metadata lags moves seen complete: read again
            return CycleOutcome("wait", f"wait: {decision.summary}")
        self.metrics.observe_plan(plan_s)
        self.metrics.observe_decision(decision, heal_needed=heal_needed(snap))
        self.trail.decision(decision, snap)
        long_failover = self.timing.failover_alerting(now := self.clock.monotonic())
        stuck = self.foreign.look(snap.reassignments, int(self.clock.time() * 1000))
        self.metrics.moves.observe_foreign_stuck(len(stuck))
        active = alerts_for(decision, audit_on_failover=long_failover)
        self.trail.alerts({**self.timing.past_holds(active, now), **stuck})
        outcome = CycleOutcome.of(decision)
        if decision.outcome == "act":
            outcome = self.keeper.execute(decision)
        started = outcome.kind == "act"
        self.requests.follow(decision, state.requests, started=started, writing=self._writing())
        self.slow.demoted(decision.demotes_slow if started else (), snap.policy.slow_brokers)
        self.last_decision = decision
        if not {r.code for r in decision.reasons} & _STALE_LOADS:
            self.load_history.record(snap.taken_at, decision.loads_before)
        self.moves.observe()
        self._last_cycle_ok = self.clock.monotonic()
        self.metrics.observe_cycle(self._last_cycle_ok - t0, self.clock.time())
        return outcome

    def _refuse_blind(self, why: str) -> CycleOutcome:
        """A cycle that could not read the cluster: the leader also audits a refusal, and past
        the blind bound raises its alert (keeping those it had: nothing shows they cleared)."""
        self.metrics.observe_observable(False)
        if not self.coordinator.may_act():
            return CycleOutcome("blind", f"blind: {why}")
        decision = blind(why)
        self.metrics.record_decision(decision.outcome, ["cluster_unobservable"], heal_needed=None)
        self.trail.decision(decision, None)
        failover = self.timing.failover_alerting(now := self.clock.monotonic())
        if self.timing.blind_alerting(now):
            active = alerts_for(decision, audit_on_failover=failover)
            self.trail.alerts({**self.trail.active_alerts, **active})
        self.last_decision = decision
        return CycleOutcome(
            "blind", f"blind: {why}; refusal audited", decision, ("cluster_unobservable",)
        )

    def _snapshot(self, state: CoordinationState) -> Snapshot:
        leadership = Leadership(
            holder=self.instance,
            epoch=self.coordinator.epoch,
            current_epoch=state.current_epoch,
            is_leader=self.coordinator.may_act(),
        )
        started = self.clock.monotonic()
        snap = observe_cluster(
            self.cfg,
            self.sources,
            state,
            leadership,
            self.clock.time(),
            running=[s.move.tp for s in self.executor.active()],
            history=self.keeper.moves_started,
            carried=Carried(
                in_flight=[m.move for m in self.executor.in_flight()],
                stalled=self.executor.stalled_destinations(),
                slowness=self.slow.judge,
                requests=self.requests.serving(state.requests),
            ),
        )
        self.metrics.observe_observation(self.clock.monotonic() - started, self.sources.stages)
        self.last_snapshot = snap
        if self.cfg.snapshot_path is not None:
            save_snapshot(self.cfg.snapshot_path, snap)
        return snap

    # ---- moves and leadership -------------------------------------------------------

    def _on_leadership_acquired(self, epoch: int) -> None:
        self.keeper.adopt.set()
        self.mode.forget()  # a new leader says its mode and where it came from

    def _on_leadership_lost(self, reason: str) -> None:
        # Drop in-flight moves: the next leader adopts the stored plan (Kafka runs them on).
        log.warning("leadership_lost", reason=reason)
        self.keeper.drop_moves.set()
        self.moves.forget()

    # ---- health -------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The status page's content (served on the HTTP thread: reads, never blocks)."""
        coord = self.coordinator
        return status_document(
            cluster=self.cfg.cluster,
            instance=self.instance,
            leader=coord.is_leader,
            epoch=coord.epoch,
            snapshot=self.last_snapshot,
            decision=self.last_decision,
            alerts=self.trail.active_alerts,
            moves=self.moves.shown,
            progress=self.moves.progress,
            recent=self.trail.recent_records(),
            requests=[r.document() for r in self.requests.latest],
            history=self.load_history.series(),
            history_span_ms=self.load_history.span_ms,
            now_monotonic=self.clock.monotonic(),
            mode=self.mode.current,
            mode_source=self.mode.source,
            readiness=self.readiness.shown(),
            cordoned_by=self.requests.cordons.by_whom,
        )

    def health(self) -> tuple[bool, dict[str, Any]]:
        coord = self.coordinator
        stale = self.clock.monotonic() - self._last_cycle_ok > 5 * self.cfg.interval_s + 30
        ok = coord.connected and not coord.shutdown_reason and not (coord.is_leader and stale)
        return ok, {
            "instance": self.instance,
            "leader": coord.is_leader,
            "epoch": coord.epoch,
            "mode": self.mode.current,
            "zookeeper_connected": coord.connected,
            "audit_on_failover": self.audit.on_failover,
            "last_decision": self.last_decision.outcome if self.last_decision else None,
        }
