"""The gauges of the moves kmedic runs: how many are in flight, the oldest's age, the stalled
ones (and other people's stuck reassignments), the running plan's bytes, rate and ETA, the
replication throttle rates kmedic set, and the bytes its completed moves copied. Part of
ManagerMetrics (``metrics.moves``), on its registry and cluster label."""

from __future__ import annotations

import math
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

from manager.model.plan_progress import PlanProgress


class MoveMetrics:
    def __init__(self, cluster: str, registry: CollectorRegistry) -> None:
        self.cluster = cluster
        r, c = registry, ["cluster"]
        self.moves_in_flight = Gauge(
            "kmedic_moves_in_flight",
            "Partition reassignments started and not finished",
            c,
            registry=r,
        )
        self.oldest_move_age = Gauge(
            "kmedic_oldest_move_age_seconds",
            "Age of the oldest reassignment in flight (0 when none)",
            c,
            registry=r,
        )
        self.plan_bytes = Gauge(
            "kmedic_plan_bytes",
            "The running plan's bytes to copy (state=total) and copied so far (state=copied)",
            [*c, "state"],
            registry=r,
        )
        self.plan_rate = Gauge(
            "kmedic_plan_copy_rate_bytes_per_second",
            "The running plan's copy rate over the last 30 s (0 when no plan runs)",
            c,
            registry=r,
        )
        self.plan_eta = Gauge(
            "kmedic_plan_eta_seconds",
            "Time left for the running plan at its copy rate (0 when no plan runs, NaN while "
            "the rate is unknown)",
            c,
            registry=r,
        )
        self.throttle_rate = Gauge(
            "kmedic_throttle_rate_bytes_per_second",
            "The replication throttle rate kmedic set on a broker taking part in moves "
            "(direction=out: leader.replication.throttled.rate; in: follower's)",
            [*c, "broker", "direction"],
            registry=r,
        )
        self.stuck_foreign = Gauge(
            "kmedic_stuck_foreign_reassignments",
            "Reassignments kmedic did not start whose new replicas gained no byte for "
            "executor.stall_s",
            c,
            registry=r,
        )
        self.stuck_moves = Gauge(
            "kmedic_stuck_moves",
            "Moves in flight whose new replicas gained no byte for executor.stall_s",
            c,
            registry=r,
        )
        self.bytes_moved = Counter(
            "kmedic_bytes_moved", "Bytes of replica data moved by completed moves", c, registry=r
        )

    def observe_moves(self, in_flight: int, oldest_age_s: float, stuck: int) -> None:
        self.moves_in_flight.labels(self.cluster).set(in_flight)
        self.oldest_move_age.labels(self.cluster).set(oldest_age_s)
        self.stuck_moves.labels(self.cluster).set(stuck)

    def observe_foreign_stuck(self, count: int) -> None:
        self.stuck_foreign.labels(self.cluster).set(count)

    def observe_plan_progress(self, progress: PlanProgress | None) -> None:
        """The running plan's figures; all 0 when no plan runs."""
        if progress is None:
            progress = PlanProgress(0, 0, 0, 0, eta_s=0.0)
        self.plan_bytes.labels(self.cluster, "total").set(progress.total_bytes)
        self.plan_bytes.labels(self.cluster, "copied").set(progress.copied_bytes)
        self.plan_rate.labels(self.cluster).set(progress.rate_bytes_per_s or 0.0)
        eta = progress.eta_s
        self.plan_eta.labels(self.cluster).set(math.nan if eta is None else eta)

    def observe_throttle_rates(self, rates: Mapping[tuple[int, str], str]) -> None:
        """The rates kmedic has set now (a broker's series goes when its rate is removed)."""
        self.throttle_rate.clear()
        for (broker, config), value in rates.items():
            direction = "out" if config.startswith("leader.") else "in"
            self.throttle_rate.labels(self.cluster, str(broker), direction).set(float(value))

    def add_bytes_moved(self, nbytes: int) -> None:
        self.bytes_moved.labels(self.cluster).inc(max(0, nbytes))
