"""The manager's Prometheus metrics (served by manager.web.server).

Every metric carries a ``cluster`` label, so several managers can share one Prometheus and the
alert rules in configs/prometheus/alerts.yml can name the cluster. Decision reasons are reason
codes (one per confidence gate), never free text, to keep label cardinality bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from kmedic.errors import KmedicError
from manager.analyzer.health import HealthFacts, health_facts, held_by_observe_mode, switched_off
from manager.analyzer.replication_check import replication_settings_off
from manager.analyzer.topic_safety import OwnSetting, not_own, unsafe_topics
from manager.model.decision import Decision
from manager.model.policy import Policy
from manager.model.snapshot import Snapshot
from manager.web.move_metrics import MoveMetrics
from manager.web.quorum_metrics import QuorumMetrics
from manager.web.safety_metrics import SafetyMetrics
from manager.web.slow_metrics import SlowMetrics

Outcome = Literal["act", "noop", "wait", "refuse"]
OUTCOMES: tuple[Outcome, ...] = ("act", "noop", "wait", "refuse")
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Leadership(Protocol):
    """What the leadership gauges read (the coordinator), at each scrape."""

    @property
    def epoch(self) -> int: ...

    @property
    def connected(self) -> bool: ...

    def may_act(self) -> bool: ...


class ManagerMetrics:
    """Every metric the manager exports, bound to one cluster name."""

    def __init__(
        self,
        cluster: str,
        registry: CollectorRegistry | None = None,
        own_topics: OwnSetting = not_own,
    ) -> None:
        """``own_topics``: kmedic's own topics and the min.insync.replicas it creates them
        with, which `kmedic_unsafe_topic` judges them by (kmedic/own_topics.py)."""
        self.cluster = cluster
        self.own_topics = own_topics
        self.registry = registry or CollectorRegistry()
        r, c = self.registry, ["cluster"]
        self.safety = SafetyMetrics(cluster, r)
        self.quorum = QuorumMetrics(cluster, r)
        self.slow = SlowMetrics(cluster, r)
        self.moves = MoveMetrics(cluster, r)
        self.cluster_observable = Gauge(
            "kmedic_cluster_observable",
            "1 when the last cycle could read the cluster (Admin API and ZooKeeper config)",
            c,
            registry=r,
        )
        self.dead_brokers = Gauge(
            "kmedic_dead_brokers",
            "Brokers considered dead (in or past the grace period)",
            c,
            registry=r,
        )
        self.placement_violations = Gauge(
            "kmedic_placement_violations",
            "Partitions breaking the placement policy that the last checked decision left as "
            "they are (repair_placement off, or no legal move)",
            c,
            registry=r,
        )
        self.requests = Gauge(
            "kmedic_requests",
            "Operator requests (drain, fill, demote) by state, as stored in ZooKeeper",
            [*c, "state"],
            registry=r,
        )
        self.waiting_brokers = Gauge(
            "kmedic_waiting_brokers",
            "Dead brokers still inside their grace period: the manager waits (no page)",
            c,
            registry=r,
        )
        self.under_replicated = Gauge(
            "kmedic_under_replicated_partitions",
            "Under-replicated or offline partitions; explained=true when the gate's rule explains "
            "it (a dead broker, a failed disk, a move adding it, a restart, a slow broker)",
            [*c, "explained"],
            registry=r,
        )
        self.audit_failovers = Counter(
            "kmedic_audit_failovers",
            "Times the audit log went to its failover sink (a short one is not alerted)",
            c,
            registry=r,
        )
        self.would_act = Counter(
            "kmedic_would_act",
            "Decisions to act kept from the cluster, by why: observe mode, or a goal's switch",
            [*c, "why"],
            registry=r,
        )
        self.decisions = Counter(
            "kmedic_decisions", "Cycle decisions by outcome", [*c, "outcome"], registry=r
        )
        self.decision_reasons = Counter(
            "kmedic_decision_reasons",
            "Reasons given with decisions (gate codes), by outcome",
            [*c, "outcome", "reason"],
            registry=r,
        )
        self.last_outcome = Gauge(
            "kmedic_last_decision",
            "1 for the outcome of the latest cycle, 0 for the others",
            [*c, "outcome"],
            registry=r,
        )
        self.refusing_to_heal = Gauge(
            "kmedic_refusing_to_heal",
            "1 while some partition needs healing (a replica on a dead broker or a failed disk) "
            "and the manager will not heal it: a gate refused, it cannot be placed, or a "
            "policy.goals switch holds the heal back",
            c,
            registry=r,
        )
        self.http_reads_open = Gauge(
            "kmedic_http_reads_open",
            "1 while this instance's HTTP endpoints listen beyond loopback with no "
            "basic_auth_users: anyone reaching the port reads the status and the audit log",
            c,
            registry=r,
        )
        self.held_throttles = Gauge(
            "kmedic_held_throttles",
            "Broker replication throttle rates kmedic set and observe mode keeps (it writes "
            "nothing): their partitions replicate at an old plan's rate until kmedic acts",
            c,
            registry=r,
        )
        self.would_heal = Gauge(
            "kmedic_would_heal",
            "1 while some partition needs healing and observe mode keeps the heal kmedic "
            "planned from the cluster: nothing heals it until a person does or lets kmedic act",
            c,
            registry=r,
        )
        self.actions = Counter(
            "kmedic_actions", "Actions by type and result", [*c, "type", "result"], registry=r
        )
        self.plan_duration = Histogram(
            "kmedic_plan_duration_seconds",
            "Time to plan",
            c,
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.observe_stage = Gauge(
            "kmedic_observe_stage_seconds",
            "The last cycle's observation, wall seconds by stage: quorum, admin (the Admin "
            "reads), feeds (the agents' and loads' copy), settings (configs, eligible leaders)",
            [*c, "stage"],
            registry=r,
        )
        self.observe_duration = Histogram(
            "kmedic_observe_duration_seconds",
            "Time to observe the cluster: the Admin answers, the feeds' copy, the snapshot",
            c,
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.cycle_duration = Histogram(
            "kmedic_cycle_duration_seconds",
            "Time for a whole cycle",
            c,
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.last_cycle = Gauge(
            "kmedic_last_cycle_timestamp_seconds", "When the last cycle finished", c, registry=r
        )
        self.load_age = Gauge(
            "kmedic_load_data_age_seconds", "Age of the newest per-broker load data", c, registry=r
        )
        self.load_valid = Gauge(
            "kmedic_load_data_valid_fraction",
            "Share of replicas with a valid load window",
            c,
            registry=r,
        )
        self.mode = Gauge(
            "kmedic_mode",
            "1 for the mode the leader runs in (act, or observe: nothing is written to the "
            "cluster), 0 for the other",
            [*c, "mode"],
            registry=r,
        )
        self.is_leader = Gauge(
            "kmedic_is_leader", "1 when this instance leads and may act", c, registry=r
        )
        self.epoch = Gauge(
            "kmedic_fencing_epoch", "Fencing epoch this instance holds", c, registry=r
        )
        self.zk_connected = Gauge(
            "kmedic_zookeeper_connected", "1 while connected to ZooKeeper", c, registry=r
        )
        self.audit_records = Counter(
            "kmedic_audit_records", "Audit records written, by sink", [*c, "sink"], registry=r
        )
        self.audit_on_failover = Gauge(
            "kmedic_audit_on_failover",
            "1 while audit records wait in the failover spool for the audit topic",
            c,
            registry=r,
        )
        self.audit_spool_pending = Gauge(
            "kmedic_audit_spool_pending", "Audit records waiting in the spool", c, registry=r
        )
        for outcome in OUTCOMES:
            self.decisions.labels(cluster, outcome)
            self.last_outcome.labels(cluster, outcome).set(0)
        for explained in ("true", "false"):
            self.under_replicated.labels(cluster, explained).set(0)
        for gauge in (
            self.dead_brokers,
            self.waiting_brokers,
            self.placement_violations,
            self.refusing_to_heal,
            self.would_heal,
            self.moves.moves_in_flight,
        ):
            gauge.labels(cluster).set(0)

    # -- updates, one per fact the daemon learns ------------------------------------------

    def observe_held_throttles(self, rates: int) -> None:
        self.held_throttles.labels(self.cluster).set(rates)

    def observe_http_exposure(self, *, reads_open: bool) -> None:
        self.http_reads_open.labels(self.cluster).set(1 if reads_open else 0)

    def observe_observable(self, observable: bool) -> None:
        self.cluster_observable.labels(self.cluster).set(1 if observable else 0)

    def observe_cluster(
        self, dead_brokers: int, waiting_brokers: int, urp_explained: int, urp_unexplained: int
    ) -> None:
        self.dead_brokers.labels(self.cluster).set(dead_brokers)
        self.waiting_brokers.labels(self.cluster).set(waiting_brokers)
        self.under_replicated.labels(self.cluster, "true").set(urp_explained)
        self.under_replicated.labels(self.cluster, "false").set(urp_unexplained)

    def observe_requests(self, by_state: Mapping[str, int]) -> None:
        for state in ("pending", "running", "done", "partial", "failed", "cancelled"):
            self.requests.labels(self.cluster, state).set(by_state.get(state, 0))

    def observe_placement(self, violations: int) -> None:
        self.placement_violations.labels(self.cluster).set(violations)

    def record_decision(
        self,
        outcome: Outcome,
        reasons: Iterable[str],
        *,
        heal_needed: bool | None = False,
        unhealed: bool = False,
        would_act: str | None = None,
        heal_disabled: bool = False,
        heal_observed: bool = False,
    ) -> None:
        """Count a decision. Refusing to heal: some partition needs healing (``heal_needed``)
        and the decision refuses, heals partially (``unhealed``: some partitions refused), or
        would heal but a switch keeps it from doing so (``heal_disabled``). Would heal:
        observe mode keeps the heal from the cluster (``heal_observed``). ``would_act``: why a
        decision to act was kept from the cluster, counted.
        ``heal_needed=None`` (not known: the cluster could not be observed) leaves the gauge
        as the last observed cycle set it."""
        if outcome not in OUTCOMES:
            raise KmedicError(f"unknown decision outcome {outcome!r}; expected one of {OUTCOMES}")
        self.decisions.labels(self.cluster, outcome).inc()
        if would_act is not None:
            self.would_act.labels(self.cluster, would_act).inc()
        for reason in sorted(set(reasons)):
            self.decision_reasons.labels(self.cluster, outcome, reason).inc()
        for other in OUTCOMES:
            self.last_outcome.labels(self.cluster, other).set(1 if other == outcome else 0)
        if heal_needed is not None:
            refusing = heal_needed and (outcome == "refuse" or unhealed or heal_disabled)
            self.refusing_to_heal.labels(self.cluster).set(1 if refusing else 0)
            self.would_heal.labels(self.cluster).set(1 if heal_needed and heal_observed else 0)

    def observe_decision(self, decision: Decision, *, heal_needed: bool) -> None:
        """Everything a leader's decision tells the metrics."""
        self.record_decision(
            decision.outcome,
            [r.code for r in (*decision.reasons, *decision.unhealed)],
            heal_needed=heal_needed,
            unhealed=bool(decision.unhealed),
            would_act=decision.would_act,
            heal_disabled=decision.kind == "heal" and switched_off(decision),
            heal_observed=held_by_observe_mode(decision),
        )
        if decision.placement_violations is not None:  # a heal does not look: keep the last
            self.observe_placement(decision.placement_violations)

    def record_action(self, action_type: str, result: str, count: int = 1) -> None:
        self.actions.labels(self.cluster, action_type, result).inc(count)

    def observe_plan(self, seconds: float) -> None:
        self.plan_duration.labels(self.cluster).observe(seconds)

    def observe_observation(
        self, seconds: float, stages: Mapping[str, float] | None = None
    ) -> None:
        self.observe_duration.labels(self.cluster).observe(seconds)
        for stage, spent in (stages or {}).items():
            self.observe_stage.labels(self.cluster, stage).set(spent)

    def observe_cycle(self, seconds: float, finished_at_s: float) -> None:
        self.cycle_duration.labels(self.cluster).observe(seconds)
        self.last_cycle.labels(self.cluster).set(finished_at_s)

    def observe_loads(self, age_s: float, valid_fraction: float) -> None:
        self.load_age.labels(self.cluster).set(age_s)
        self.load_valid.labels(self.cluster).set(valid_fraction)

    def follow_leadership(self, coordinator: Leadership) -> None:
        """Leadership is read at each scrape, not set at each cycle: an instance cut off from
        ZooKeeper says at once that it may not act, even while its cycle waits on a dead
        broker (cc33: a cut-off leader's gauge said 1 for 20 s beside the new leader's)."""
        self.is_leader.labels(self.cluster).set_function(lambda: int(coordinator.may_act()))
        self.epoch.labels(self.cluster).set_function(lambda: coordinator.epoch)
        self.zk_connected.labels(self.cluster).set_function(lambda: int(coordinator.connected))

    def observe_mode(self, mode: str) -> None:
        for other in ("act", "observe"):
            self.mode.labels(self.cluster, other).set(1 if other == mode else 0)

    def count_audit_failover(self) -> None:
        self.audit_failovers.labels(self.cluster).inc()

    def observe_audit(self, on_failover: bool, spool_pending: int) -> None:
        self.audit_on_failover.labels(self.cluster).set(1 if on_failover else 0)
        self.audit_spool_pending.labels(self.cluster).set(spool_pending)

    def count_audit_record(self, sink: str) -> None:
        self.audit_records.labels(self.cluster, sink).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def observe_snapshot(
    metrics: ManagerMetrics, snap: Snapshot, policy: Policy, cluster_slow: bool
) -> HealthFacts:
    """Every gauge a cycle's snapshot sets, on every instance; the facts behind them."""
    facts = health_facts(snap)
    metrics.observe_cluster(
        facts.dead_brokers, facts.waiting_brokers, facts.urp_explained, facts.urp_unexplained
    )
    metrics.observe_loads(facts.load_age_s, facts.load_valid_fraction)
    metrics.safety.observe_unsafe_topics(unsafe_topics(snap, policy, metrics.own_topics))
    metrics.safety.observe_replication_settings(replication_settings_off(snap))
    metrics.quorum.observe(snap.quorum)
    metrics.slow.observe(snap, cluster_slow)
    return facts
