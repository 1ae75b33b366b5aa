"""The manager daemon: observe, decide, act or refuse — one cycle at a time, audited.

Each cycle builds one immutable snapshot, runs the pure planner over it, and then acts only
when this instance leads with a current fencing epoch. Standbys observe and export metrics but
neither decide nor write the audit log. The in-flight plan lives in ZooKeeper (compare-and-set
on its version), so a new leader adopts it instead of starting over or leaving moves orphaned.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.analyzer.health import alerts_for, heal_needed, health_facts
from manager.analyzer.planner import decide
from manager.audit.kafka_sink import KafkaAuditSink, ensure_audit_topic
from manager.audit.log import AuditLog
from manager.config import ManagerConfig
from manager.coordination.leadership import Coordinator, default_instance_id
from manager.coordination.move_budget import from_plan, moves_in_window, with_started
from manager.coordination.placement_store import ZkConfigStore
from manager.coordination.plan_document import (
    moves_for,
    moves_to_adopt,
    own_partitions,
    plan_document,
    trimmed,
)
from manager.coordination.plan_store import StoredPlan
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.rules import blind, degrade, wait_for_plan
from manager.executor.executor import Executor, MoveState
from manager.model.decision import Decision
from manager.model.snapshot import Leadership, Snapshot
from manager.monitor.observe import DeathEvidence, build_snapshot, death_evidence
from manager.monitor.sources import AdminUnavailable, ClusterSources
from manager.web.metrics import ManagerMetrics, MetricsServer
from manager.web.status_page import status_document

log = get_logger(__name__)


class ClusterUnobservable(KmedicError):
    """This cycle could not read the cluster (Admin API) or its placement config (ZooKeeper)."""


class Manager:
    """One manager instance. ``start`` connects everything; ``cycle`` runs one cycle;
    ``run`` loops until ``stop``."""

    def __init__(self, cfg: ManagerConfig) -> None:
        self.cfg = cfg
        self.instance = cfg.instance_id or default_instance_id()
        self.metrics = ManagerMetrics(cfg.cluster)
        self._stop = threading.Event()
        self._adopt = threading.Event()  # set when leadership is (re)acquired
        # When moves started (wall clock), as stored with the plan: the hourly budget.
        self._moves_started: list[tuple[float, int]] = []
        self._last_cycle_ok = 0.0
        self._started_at = time.monotonic()
        self.last_decision: Decision | None = None
        self.last_snapshot: Snapshot | None = None
        self._moves_view: tuple[MoveState, ...] = ()
        self._evidence: dict[int, DeathEvidence] = {}
        self.coordinator = Coordinator(
            cfg.zookeeper,
            cfg.cluster,
            self.instance,
            on_leadership_acquired=lambda epoch: self._adopt.set(),
            on_leadership_lost=self._on_leadership_lost,
            on_shutdown=lambda reason: self._stop.set(),
        )
        self._zk = KazooClient(
            hosts=cfg.zookeeper.zk_connect, timeout=cfg.zookeeper.session_timeout_s
        )
        self.config_store = ZkConfigStore(self._zk, cfg.cluster, cfg.zookeeper.root)
        self.sources = ClusterSources(
            cluster=cfg.cluster,
            bootstrap=cfg.bootstrap,
            stats_topic=cfg.topics.brokerstats,
            loads_topic=cfg.topics.replica_loads,
            stats_lookback_s=cfg.stats_lookback_s,
        )
        secondary = cfg.audit.secondary_bootstrap
        self.audit = AuditLog(
            KafkaAuditSink("primary", cfg.bootstrap, cfg.topics.actions),
            cfg.audit.spool_dir,
            secondary=KafkaAuditSink("secondary", secondary, cfg.topics.actions)
            if secondary
            else None,
            write_timeout_s=cfg.audit.write_timeout_s,
            retry_interval_s=cfg.audit.retry_interval_s,
        )
        self.trail = AuditTrail(
            self.audit,
            self.metrics,
            cluster=cfg.cluster,
            instance=self.instance,
            epoch=lambda: self.coordinator.epoch,
        )
        self._drop_moves = threading.Event()  # set when leadership is lost
        self.executor = self._new_executor()
        self.server = MetricsServer(
            self.metrics.registry, self.health, cfg.http.host, cfg.http.port, status=self.status
        )

    def _new_executor(self) -> Executor:
        cfg = self.cfg
        return Executor(
            cfg.bootstrap,
            cfg.executor,
            on_event=lambda kind, state, details: self.trail.move_event(kind, state, details),
        )

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> Manager:
        self.server.start()
        try:
            ensure_audit_topic(self.cfg.bootstrap, self.cfg.topics.actions)
        except KmedicError as exc:  # the audit log fails over; the topic can come later
            log.warning("audit_topic_unavailable", error=str(exc))
        self.sources.start()
        try:
            self._zk.start(timeout=self.cfg.zookeeper.session_timeout_s)
        except Exception as exc:
            raise KmedicError(
                f"cannot connect to ZooKeeper at {self.cfg.zookeeper.zk_connect}: {exc}"
            ) from exc
        self.coordinator.start()
        log.info(
            "manager_started",
            instance=self.instance,
            cluster=self.cfg.cluster,
            metrics_port=self.server.port,
        )
        return self

    def stop(self) -> None:
        self._stop.set()
        for closer in (
            self.coordinator.stop,
            self._zk.stop,
            self._zk.close,
            self.sources.stop,
            self.executor.close,
            self.audit.close,
            self.server.stop,
        ):
            try:
                closer()
            except Exception as exc:  # keep closing the rest
                log.warning(
                    "shutdown_step_failed",
                    step=getattr(closer, "__qualname__", "?"),
                    error=str(exc),
                )

    def run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.cycle()
            except Exception as exc:  # one bad cycle must not end the daemon
                log.exception("cycle_failed", error=str(exc))
            self._stop.wait(max(0.0, self.cfg.interval_s - (time.monotonic() - started)))

    def request_stop(self) -> None:
        self._stop.set()

    # ---- one cycle ----------------------------------------------------------------------

    def cycle(self) -> Decision | None:
        t0 = time.monotonic()
        coord = self.coordinator
        self.metrics.observe_leadership(coord.is_leader, coord.epoch, coord.connected)
        self.audit.replay()
        self.metrics.observe_audit(self.audit.on_failover, self.audit.spool.pending())
        if self._drop_moves.is_set():
            self._drop_moves.clear()
            self.executor.close()
            self.executor = self._new_executor()
        if not coord.connected:
            log.warning("no_action", why="ZooKeeper is unreachable; leadership cannot be proven")
            return None
        try:
            snap = self._snapshot()
        except ClusterUnobservable as exc:
            return self._refuse_blind(str(exc))
        self.metrics.observe_observable(True)
        facts = health_facts(snap)
        self.metrics.observe_cluster(facts.dead_brokers, facts.urp_explained, facts.urp_unexplained)
        self.metrics.observe_loads(facts.load_age_s, facts.load_valid_fraction)
        if not coord.is_leader:
            log.info("standby", leader=coord.current_leader(), dead_brokers=facts.dead_brokers)
            return None
        if self._adopt.is_set():
            self._adopt_plan(snap)
        if self.executor.active():
            self._step_executor()
        t_plan = time.monotonic()
        decision = degrade(
            decide(snap),
            audit_on_failover=self.audit.on_failover,
            coordination_reliable=coord.may_act(),
        )
        self.metrics.observe_plan(time.monotonic() - t_plan)
        active = self.executor.active()
        running = sum(1 for m in active if m.status == "in_flight")
        decision = wait_for_plan(decision, running=running, queued=len(active) - running)
        self.metrics.record_decision(
            decision.outcome, [r.code for r in decision.reasons], heal_needed=heal_needed(snap)
        )
        self.trail.decision(decision, snap, self._evidence)
        self.trail.alerts(alerts_for(decision, audit_on_failover=self.audit.on_failover))
        if decision.outcome == "act":
            self._execute(decision, snap)
        self.last_decision = decision
        self._observe_moves()
        self._last_cycle_ok = time.monotonic()
        self.metrics.observe_cycle(self._last_cycle_ok - t0, time.time())
        return decision

    def _refuse_blind(self, why: str) -> Decision | None:
        """A cycle that could not read the cluster: a standby says so in its log; the leader
        also audits a refusal and raises an alert (keeping the alerts it had: nothing shows
        they cleared)."""
        log.warning("no_action", why=why)
        self.metrics.observe_observable(False)
        if not self.coordinator.is_leader:
            return None
        decision = blind(why)
        self.metrics.record_decision(
            decision.outcome, [r.code for r in decision.reasons], heal_needed=None
        )
        self.trail.decision(decision, None, {})
        active = alerts_for(decision, audit_on_failover=self.audit.on_failover)
        self.trail.alerts({**self.trail.active_alerts, **active})
        self.last_decision = decision
        return decision

    def _snapshot(self) -> Snapshot:
        now_ms = int(time.time() * 1000)
        coord = self.coordinator
        try:
            placement = self.config_store.load()
            stored = coord.plans.read()
            current_epoch = coord.current_epoch()
        except KmedicError as exc:
            raise ClusterUnobservable(f"ZooKeeper read failed: {exc}") from exc
        own = own_partitions(stored.plan if stored else None)
        leadership = Leadership(
            holder=self.instance,
            epoch=coord.epoch,
            current_epoch=current_epoch,
            is_leader=coord.may_act(),
        )
        try:
            obs = self.sources.observe(
                now_ms,
                placement=placement,
                leadership=leadership,
                own_moves=own | {s.move.tp for s in self.executor.active()},
                moves_last_hour=self._moves_last_hour(stored),
            )
        except AdminUnavailable as exc:
            raise ClusterUnobservable(str(exc)) from exc
        snap = build_snapshot(obs, self.cfg.policy, self.cfg.capacity)
        self.last_snapshot = snap
        self._evidence = death_evidence(obs)
        if self.cfg.snapshot_path is not None:
            _write_atomically(self.cfg.snapshot_path, snap.model_dump_json(indent=1))
        return snap

    # ---- acting -------------------------------------------------------------------------

    def _execute(self, decision: Decision, snap: Snapshot) -> None:
        coord = self.coordinator
        if self._adopt.is_set():
            # Not yet seen: the predecessor's plan and its move history (the hourly budget).
            log.warning("no_action", why="the stored plan has not been adopted yet")
            return
        if not coord.verify_leadership():
            log.warning("no_action", why="leadership could not be verified just before acting")
            return
        moves = moves_for(decision, snap)
        stored = coord.plans.read()
        started = with_started(
            from_plan(stored.plan) if stored else self._moves_started, time.time(), len(moves)
        )
        plan = plan_document(decision, moves, coord.epoch, started)
        try:
            coord.plans.write(plan, stored.version if stored else None)
        except KmedicError as exc:
            log.warning("no_action", why=f"the in-flight plan could not be stored: {exc}")
            return
        self._moves_started = started
        self.executor.submit(moves)
        self._step_executor()

    def _step_executor(self) -> None:
        try:
            self.executor.step()
        except KmedicError as exc:
            log.warning("executor_step_failed", error=str(exc))
            return
        self._sync_plan()

    def _sync_plan(self) -> None:
        """Keep the stored plan equal to the moves still active; when all are done it is
        emptied, not deleted, so that the move history it carries outlives it."""
        active = {s.move.tp for s in self.executor.active()}
        try:
            stored = self.coordinator.plans.read()
            changed = trimmed(stored.plan, active) if stored else None
            if stored is not None and changed is not None:
                self.coordinator.plans.write(changed, stored.version)
        except KmedicError as exc:
            log.warning("plan_sync_failed", error=str(exc))

    def _adopt_plan(self, snap: Snapshot) -> None:
        """After a restart or failover: continue the moves the stored plan still lists; with
        none left and no reassignment running anywhere, remove replication throttles a crashed
        leader may have left behind (a throttle without a reassignment only slows recovery)."""
        self._adopt.clear()
        try:
            stored = self.coordinator.plans.read()
        except KmedicError as exc:
            log.warning("plan_adoption_failed", error=str(exc))
            self._adopt.set()
            return
        if stored is not None:
            self._moves_started = from_plan(stored.plan)
        if stored is None or not stored.plan.get("moves"):
            if not snap.reassignments:
                self._clear_leftover_throttles(snap)
            return
        moves = moves_to_adopt(stored.plan, {s.move.tp for s in self.executor.active()})
        self.executor.submit(moves)
        self.trail.record(
            "decision",
            f"adopted the in-flight plan of epoch {stored.epoch} by {stored.instance}: "
            f"{len(moves)} moves to continue",
            partitions=[f"{m.topic}:{m.partition}" for m in moves],
            details={"adopted_from": stored.instance, "adopted_epoch": stored.epoch},
        )

    def _clear_leftover_throttles(self, snap: Snapshot) -> None:
        topics = [t.name for t in snap.topics]
        brokers = [b.id for b in snap.brokers if b.alive]
        try:
            self.executor.clear_throttles(topics, brokers)
        except KmedicError as exc:
            log.warning("throttle_cleanup_failed", error=str(exc))
            return
        log.info("throttles_cleared", topics=len(topics), brokers=len(brokers))

    def _observe_moves(self) -> None:
        self._moves_view = tuple(self.executor.active())  # for the status page's thread
        now = time.monotonic()
        flight = self.executor.in_flight()
        oldest = max((now - s.started_at for s in flight if s.started_at is not None), default=0.0)
        self.metrics.observe_moves(len(flight), oldest, sum(1 for s in flight if s.timed_out))

    def _moves_last_hour(self, stored: StoredPlan | None) -> int:
        """Counted from the stored plan's history when there is one: it is what every
        instance, this one after a restart included, agrees on."""
        history = from_plan(stored.plan) if stored else self._moves_started
        return moves_in_window(history, time.time())

    def _on_leadership_lost(self, reason: str) -> None:
        # Drop in-flight decisions: the next leader adopts the stored plan; Kafka keeps running
        # the reassignments already issued.
        log.warning("leadership_lost", reason=reason)
        self._drop_moves.set()

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
            moves=self._moves_view,
            recent=self.trail.recent_records(),
        )

    def health(self) -> tuple[bool, dict[str, Any]]:
        coord = self.coordinator
        stale = (
            time.monotonic() - max(self._last_cycle_ok, self._started_at)
            > 5 * self.cfg.interval_s + 30
        )
        ok = (
            coord.connected and coord.shutdown_reason is None and (not coord.is_leader or not stale)
        )
        return ok, {
            "instance": self.instance,
            "leader": coord.is_leader,
            "epoch": coord.epoch,
            "zookeeper_connected": coord.connected,
            "audit_on_failover": self.audit.on_failover,
            "last_decision": self.last_decision.outcome if self.last_decision else None,
        }


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
