"""The gauges of slow brokers (manager/analyzer/slowness.py), from each cycle's snapshot. Part
of ManagerMetrics (``metrics.slow``), on its registry and cluster label."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from manager.model.snapshot import Snapshot

STATES = ("slow", "recovering", "returning")


class SlowMetrics:
    def __init__(self, cluster: str, registry: CollectorRegistry) -> None:
        self.cluster = cluster
        r, c = registry, ["cluster"]
        self.score = Gauge(
            "kmedic_broker_slowness_score",
            "Each live broker's slowness score: up by policy.slow_brokers.rise on each slow "
            "sample, down by decay on each other; slow (demoted) from slow_score",
            [*c, "broker"],
            registry=r,
        )
        self.brokers = Gauge(
            "kmedic_slow_brokers",
            "Live brokers by slowness state: slow (demoted), recovering (no longer slow, "
            "leadership not yet back), returning (leadership may return)",
            [*c, "state"],
            registry=r,
        )
        self.cluster_slow = Gauge(
            "kmedic_cluster_slow",
            "1 when more brokers are slow than policy.slow_brokers.max_slow_fraction allows: "
            "the cluster is slow, and no broker is demoted",
            c,
            registry=r,
        )

    def observe(self, snap: Snapshot, cluster_slow: bool) -> None:
        self.score.clear()
        counts = dict.fromkeys(STATES, 0)
        for b in snap.brokers:
            if b.alive and b.slowness is not None:
                self.score.labels(self.cluster, str(b.id)).set(b.slowness.score)
                if b.slowness.state in counts:
                    counts[b.slowness.state] += 1
        for state, n in counts.items():
            self.brokers.labels(self.cluster, state).set(n)
        self.cluster_slow.labels(self.cluster).set(1 if cluster_slow else 0)
