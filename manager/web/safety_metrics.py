"""The gauges of what would hurt on the day a broker dies: unsafe topics
(manager/analyzer/topic_safety.py) and failure readiness (manager/analyzer/readiness.py).
Part of ManagerMetrics (``metrics.safety``), on its registry and cluster label."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Gauge

from manager.analyzer.readiness import Verdict
from manager.analyzer.topic_safety import UNSAFE_KINDS, UnsafeTopic
from manager.model.replication_settings import SettingOff

SCENARIO_KINDS = ("broker", "rack", "domain")


class SafetyMetrics:
    def __init__(self, cluster: str, registry: CollectorRegistry) -> None:
        self.cluster = cluster
        r, c = registry, ["cluster"]
        self.unsafe_topics = Gauge(
            "kmedic_unsafe_topics",
            "Topics a broker loss turns into an outage or lost writes, by kind "
            "(manager/analyzer/topic_safety.py)",
            [*c, "kind"],
            registry=r,
        )
        self.unsafe_topic = Gauge(
            "kmedic_unsafe_topic",
            "1 for each unsafe topic and kind (no series for a safe one)",
            [*c, "topic", "kind"],
            registry=r,
        )
        self.setting_off = Gauge(
            "kmedic_broker_replication_setting_off",
            "A live broker's static replication setting over what kmedic's throttled copies "
            "are measured at, with its value (manager/model/replication_settings.py; no series "
            "for a broker that has them)",
            [*c, "broker", "setting"],
            registry=r,
        )
        self.unhealable = Gauge(
            "kmedic_readiness_unhealable",
            "Losses (of one broker, rack or failure domain) the last readiness sweep found "
            "kmedic could not fully heal (no placement, no live replica), by scenario kind",
            [*c, "scenario"],
            registry=r,
        )
        self.unhealable_loss = Gauge(
            "kmedic_readiness_unhealable_loss",
            "For each loss kmedic could not fully heal: the partitions its heal would leave "
            "under-replicated (1 for a refusal), and the first reason's code",
            [*c, "scenario", "name", "reason"],
            registry=r,
        )
        self.left_to_operator = Gauge(
            "kmedic_readiness_left_to_operator",
            "For each loss kmedic would, by its policy (max_dead_brokers, maintenance, a "
            "budget) or the cluster's present incident, leave to a human: 1, with the first "
            "reason's code. Reported, not alerted",
            [*c, "scenario", "name", "reason"],
            registry=r,
        )
        self.heal_bytes = Gauge(
            "kmedic_readiness_max_heal_bytes",
            "The most bytes the heal of any one loss would copy (last readiness sweep)",
            c,
            registry=r,
        )
        self.heal_seconds = Gauge(
            "kmedic_readiness_max_heal_seconds",
            "The longest estimated time from a loss to fully replicated, over the losses the "
            "last readiness sweep found kmedic would heal (grace period included)",
            c,
            registry=r,
        )
        self.sweep_reused = Gauge(
            "kmedic_readiness_last_sweep_reused_scenarios",
            "Scenarios the last readiness sweep kept from the one before: nothing they depend "
            "on had changed",
            c,
            registry=r,
        )
        self.sweep_cpu = Gauge(
            "kmedic_readiness_last_sweep_cpu_seconds",
            "The CPU time the last readiness sweep took (its thread's)",
            c,
            registry=r,
        )
        self.swept = Gauge(
            "kmedic_readiness_last_sweep_timestamp_seconds",
            "When the last readiness sweep finished",
            c,
            registry=r,
        )

    def observe_unsafe_topics(self, unsafe: Iterable[UnsafeTopic]) -> None:
        self.unsafe_topic.clear()
        counts = dict.fromkeys(UNSAFE_KINDS, 0)
        for topic in unsafe:
            counts[topic.kind] += 1
            self.unsafe_topic.labels(self.cluster, topic.topic, topic.kind).set(1)
        for kind, count in counts.items():
            self.unsafe_topics.labels(self.cluster, kind).set(count)

    def observe_replication_settings(self, off: Iterable[SettingOff]) -> None:
        self.setting_off.clear()
        for o in off:
            self.setting_off.labels(self.cluster, str(o.broker), o.setting).set(o.value)

    def observe_readiness(self, verdicts: Iterable[Verdict], at_s: float) -> None:
        self.unhealable_loss.clear()
        self.left_to_operator.clear()
        counts = dict.fromkeys(SCENARIO_KINDS, 0)
        most, longest = 0, 0.0
        for v in verdicts:
            most = max(most, v.bytes_to_copy)
            longest = max(longest, v.heal_s or 0.0)
            if v.healable:
                continue
            if not v.at_risk:
                reason = v.why[0].code if v.why else v.outcome
                labels = (self.cluster, v.scenario.kind, v.scenario.name, reason)
                self.left_to_operator.labels(*labels).set(1)
                continue
            counts[v.scenario.kind] += 1
            left = len(v.why) if v.outcome == "act" else 1  # a partial heal, or a refusal
            reason = v.why[0].code if v.why else v.outcome
            labels = (self.cluster, v.scenario.kind, v.scenario.name, reason)
            self.unhealable_loss.labels(*labels).set(max(1, left))
        for kind, count in counts.items():
            self.unhealable.labels(self.cluster, kind).set(count)
        self.heal_bytes.labels(self.cluster).set(most)
        self.heal_seconds.labels(self.cluster).set(longest)
        self.swept.labels(self.cluster).set(at_s)

    def observe_sweep_cost(self, reused: int, cpu_s: float) -> None:
        self.sweep_reused.labels(self.cluster).set(reused)
        self.sweep_cpu.labels(self.cluster).set(cpu_s)
