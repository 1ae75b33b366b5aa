"""The gauges of the KRaft controller quorum (manager/analyzer/quorum_health.py), from each
cycle's snapshot. Part of ManagerMetrics (``metrics.quorum``), on its registry and cluster
label. An unknown reading (the request refused, an older Kafka) sets ``kmedic_quorum_read`` to
0 and leaves the others as they were last known."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from manager.analyzer.quorum_health import down, lagging
from manager.model.snapshot import Quorum


class QuorumMetrics:
    def __init__(self, cluster: str, registry: CollectorRegistry) -> None:
        self.cluster = cluster
        r, c = registry, ["cluster"]
        self.read = Gauge(
            "kmedic_quorum_read",
            "1 when the last cycle read the controller quorum (led or leaderless), 0 when the "
            "read failed otherwise (no such API, refused)",
            c,
            registry=r,
        )
        self.has_leader = Gauge(
            "kmedic_quorum_has_leader",
            "1 when the KRaft controller quorum has a leader, 0 when none answered",
            c,
            registry=r,
        )
        self.voters = Gauge(
            "kmedic_quorum_voters",
            "The quorum's voters by state: up, down (no fetch from the leader for 10 s) or "
            "lagging (more than 1000 records behind)",
            [*c, "state"],
            registry=r,
        )
        self.voter_lag = Gauge(
            "kmedic_quorum_voter_lag_records",
            "Records each voter is behind the leader's high watermark",
            [*c, "voter"],
            registry=r,
        )

    def observe(self, quorum: Quorum | None) -> None:
        if quorum is None:
            return
        self.read.labels(self.cluster).set(0 if quorum.state == "unknown" else 1)
        if quorum.state == "unknown":
            return
        self.has_leader.labels(self.cluster).set(1 if quorum.state == "led" else 0)
        if quorum.state != "led":
            return  # the voters' last known figures stand
        gone, slow = len(down(quorum)), len(lagging(quorum))
        counts = {"up": len(quorum.voters) - gone - slow, "down": gone, "lagging": slow}
        for state, n in counts.items():
            self.voters.labels(self.cluster, state).set(n)
        self.voter_lag.clear()
        for v in quorum.voters:
            if v.lag is not None:
                self.voter_lag.labels(self.cluster, str(v.id)).set(v.lag)
