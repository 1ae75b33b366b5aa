"""The agent's own Prometheus metrics, on a registry of its own (served at /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kmedic import brokerstats as bs
from kmedic.http_server import HttpServer
from kmedic.metrics_http import serve_metrics
from kmedic.web_config import WebConfig


class AgentMetrics:
    def __init__(self, broker_id: int) -> None:
        self.registry = CollectorRegistry()
        labels = {"broker": str(broker_id)}
        self.samples = Counter(
            "kmedic_agent_samples",
            "Samples taken, by outcome (ok or failed).",
            ["broker", "outcome"],
            registry=self.registry,
        )
        self.failures = Counter(
            "kmedic_agent_failures",
            "Samples with a failure, by reason code.",
            ["broker", "reason"],
            registry=self.registry,
        )
        self.publish_latency = Histogram(
            "kmedic_agent_publish_latency_seconds",
            "Time from queuing a record to its acknowledgement by all in-sync replicas.",
            ["broker"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        ).labels(**labels)
        self.publish_errors = Counter(
            "kmedic_agent_publish_errors",
            "Records not delivered (producer error, timeout, or full queue).",
            ["broker"],
            registry=self.registry,
        ).labels(**labels)
        self.sample_seconds = Histogram(
            "kmedic_agent_sample_duration_seconds",
            "Wall time of one sample (all sources and the record).",
            ["broker"],
            registry=self.registry,
        ).labels(**labels)
        self.record_bytes = Gauge(
            "kmedic_agent_record_bytes",
            "Serialised size of the last sample, before compression (all chunks).",
            ["broker"],
            registry=self.registry,
        ).labels(**labels)
        self.last_success = Gauge(
            "kmedic_agent_last_success_timestamp_seconds",
            "Unix time of the last sample without failure.",
            ["broker"],
            registry=self.registry,
        ).labels(**labels)
        self.last_delivery = Gauge(
            "kmedic_agent_last_delivery_timestamp_seconds",
            "Unix time of the last record acknowledged by the stats topic.",
            ["broker"],
            registry=self.registry,
        ).labels(**labels)
        self._broker = str(broker_id)
        for reason in bs.FAILURE_REASONS:  # export zeros so rates work from the start
            self.failures.labels(broker=self._broker, reason=reason)
        for outcome in ("ok", "failed"):
            self.samples.labels(broker=self._broker, outcome=outcome)

    def record_sample(self, stats: bs.BrokerStats, duration_s: float, size: int) -> None:
        self.sample_seconds.observe(duration_s)
        self.record_bytes.set(size)
        if stats.failure is None:
            self.samples.labels(broker=self._broker, outcome="ok").inc()
            self.last_success.set(stats.timestamp_ms / 1000)
        else:
            self.samples.labels(broker=self._broker, outcome="failed").inc()
            self.failures.labels(broker=self._broker, reason=stats.failure.reason).inc()

    def delivered(self, latency_s: float | None, error: str | None, now_s: float) -> None:
        if error is not None or latency_s is None:
            self.publish_errors.inc()
            return
        self.publish_latency.observe(latency_s)
        self.last_delivery.set(now_s)

    def serve(self, host: str, port: int, web: WebConfig | None = None) -> HttpServer:
        """Start the /metrics HTTP server; returns the server (call ``stop()`` to stop)."""
        return serve_metrics(self.registry, host, port, web)
