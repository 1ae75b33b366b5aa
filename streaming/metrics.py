"""The streaming job's own Prometheus metrics, on a registry of its own (served at /metrics
when ``metrics_port`` is set).

They come from Spark's progress reports, read by the loop that waits on the queries, and from
the restart loop. Spark's UI says the same per run; these survive a restart of the queries
and can be scraped and alerted on next to the manager's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from kmedic.http_server import HttpServer
from kmedic.logging import get_logger
from kmedic.metrics_http import serve_metrics
from kmedic.web_config import WebConfig

log = get_logger(__name__)

# Progress reports read per query and poll at most: Spark keeps the last 100; a poll each
# second sees every batch unless more than this many finish in between.
_RECENT = 20


class StreamMetrics:
    """Every metric carries the ``cluster`` label, as the manager's do, so the alert rules
    can name the cluster."""

    def __init__(self, cluster: str = "default") -> None:
        self.registry = CollectorRegistry()
        self.cluster = cluster
        self.restarts = Counter(
            "kmedic_stream_restarts",
            "Times the queries were started again after one failed.",
            ["cluster"],
            registry=self.registry,
        ).labels(cluster)
        self.queries_active = Gauge(
            "kmedic_stream_queries_active",
            "Streaming queries running now (1 when healthy: the loads).",
            ["cluster"],
            registry=self.registry,
        ).labels(cluster)
        self.batches = Counter(
            "kmedic_stream_batches",
            "Micro-batches completed, by query.",
            ["cluster", "query"],
            registry=self.registry,
        )
        self.input_rows = Counter(
            "kmedic_stream_input_rows",
            "Source records read by completed micro-batches, by query.",
            ["cluster", "query"],
            registry=self.registry,
        )
        self.last_batch = Gauge(
            "kmedic_stream_last_batch_timestamp_seconds",
            "Unix time the last micro-batch of a query completed.",
            ["cluster", "query"],
            registry=self.registry,
        )
        self.batch_seconds = Gauge(
            "kmedic_stream_batch_duration_seconds",
            "Wall time of the last micro-batch of a query.",
            ["cluster", "query"],
            registry=self.registry,
        )
        # query name -> (run id, highest batch id counted in that run)
        self._counted: dict[str, tuple[str, int]] = {}

    def _counted_already(self, progress: Mapping[str, Any]) -> bool:
        seen = self._counted.get(str(progress.get("name") or "unnamed"))
        batch = progress.get("batchId")
        return (
            seen is not None
            and seen[0] == str(progress.get("runId"))
            and isinstance(batch, int)
            and batch <= seen[1]
        )

    def record_progress(self, progress: Mapping[str, Any]) -> bool:
        """Count one progress report (Spark's JSON as a dict). Reports of a batch already
        counted, and Spark's idle reports that repeat a batch id, are ignored: returns
        whether this one counted."""
        name = str(progress.get("name") or "unnamed")
        run = str(progress.get("runId"))
        batch = progress.get("batchId")
        if not isinstance(batch, int) or self._counted_already(progress):
            return False
        self._counted[name] = (run, batch)
        self.batches.labels(self.cluster, name).inc()
        self.input_rows.labels(self.cluster, name).inc(
            max(0, int(progress.get("numInputRows") or 0))
        )
        took_ms = float((progress.get("durationMs") or {}).get("triggerExecution", 0))
        self.batch_seconds.labels(self.cluster, name).set(took_ms / 1000)
        started = _epoch_seconds(progress.get("timestamp"))
        if started is not None:
            self.last_batch.labels(self.cluster, name).set(started + took_ms / 1000)
        return True

    def observe(self, queries: Iterable[Any]) -> None:
        """Read the progress reports of the queries (StreamingQuery objects) not counted yet.
        Never raises: metrics must not end the job, nor hide the failure being raised."""
        active = 0
        for query in queries:
            try:
                if query.isActive:
                    active += 1
                unseen: list[Mapping[str, Any]] = []
                for report in _reports_newest_first(query):
                    if self._counted_already(report):
                        break
                    unseen.append(report)
                for report in reversed(unseen):
                    self.record_progress(report)
            except Exception as exc:  # a py4j error from a query that is going away
                log.warning("stream_progress_unreadable", error=f"{type(exc).__name__}: {exc}")
        self.queries_active.set(active)

    def serve(self, host: str, port: int, web: WebConfig | None = None) -> HttpServer:
        """Start the /metrics HTTP server; returns the server (call ``stop()`` to stop)."""
        return serve_metrics(self.registry, host, port, web)


def _reports_newest_first(query: Any) -> Iterator[Mapping[str, Any]]:
    """The query's last progress reports, newest first, as Spark's JSON, read one at a time.

    Straight from the JVM query (``_jsq``): PySpark's ``recentProgress`` builds every one of
    the 100 reports Spark keeps out of dozens of py4j calls each, thousands a second per
    query; this reads only the reports the caller has not seen, one call each.
    """
    reports = query._jsq.recentProgress()
    newest = len(reports) - 1
    for index in range(newest, max(-1, newest - _RECENT), -1):
        parsed: dict[str, Any] = json.loads(reports[index].json())
        yield parsed


def _epoch_seconds(stamp: object) -> float | None:
    """Spark's ISO-8601 UTC stamp (``2026-11-22T15:51:04.477Z``) as Unix seconds."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
