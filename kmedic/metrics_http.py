"""Serving a Prometheus registry at /metrics, for the roles that need nothing more (the
agent and the Spark job; the manager's server also has /healthz and /status)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kmedic.http_server import HttpServer
from kmedic.web_config import WebConfig


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int, web: WebConfig | None = None
) -> HttpServer:
    """Serve /metrics in a daemon thread (``port`` is the bound port, ``stop()`` ends it),
    behind TLS and basic authentication when ``web`` says so. A port in use is a
    KmedicError naming it."""
    routes = {"/metrics": lambda: (200, CONTENT_TYPE_LATEST, generate_latest(registry))}
    return HttpServer(routes, host, port, web=web, name="kmedic-metrics", what="/metrics").start()
