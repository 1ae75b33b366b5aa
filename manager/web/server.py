"""The manager's small HTTP server: ``/metrics``, ``/healthz`` and the status page."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kmedic.http_server import HttpServer, Reply, Route
from kmedic.logging import get_logger
from kmedic.web_config import WebConfig
from manager.web.status_page import render_html

log = get_logger(__name__)

HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]


StatusPage = Callable[[], dict[str, Any]]


class MetricsServer:
    """Serves ``/metrics`` (Prometheus text format), ``/healthz`` (200 or 503 with JSON) and,
    given a status callback, ``/status`` (HTML) and ``/status.json``; behind TLS and basic
    authentication when a web config says so."""

    def __init__(
        self,
        registry: CollectorRegistry,
        health: HealthCheck,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        status: StatusPage | None = None,
        web: WebConfig | None = None,
    ) -> None:
        self.registry = registry
        self.health = health
        self.status = status
        routes: dict[str, Route] = {"/metrics": self._metrics, "/healthz": self._healthz}
        if status is not None:
            routes["/status"] = lambda: self._status(html=True)
            routes["/status.json"] = lambda: self._status(html=False)
        self._http = HttpServer(routes, host, port, web=web, name="kmedic-metrics", what="metrics")

    @property
    def port(self) -> int:
        return self._http.port

    def start(self) -> MetricsServer:
        self._http.start()
        log.info("metrics_serving", port=self.port, scheme=self._http.scheme)
        return self

    def stop(self) -> None:
        self._http.stop()

    def _metrics(self) -> Reply:
        return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)

    def _healthz(self) -> Reply:
        try:
            ok, details = self.health()
        except Exception as exc:  # a broken check is itself unhealthy
            ok, details = False, {"error": repr(exc)}
        body = json.dumps({"healthy": ok, **details}, sort_keys=True).encode()
        return 200 if ok else 503, "application/json", body

    def _status(self, *, html: bool) -> Reply:
        assert self.status is not None
        try:
            doc = self.status()
        except Exception as exc:  # the page must not take the server down
            return 500, "text/plain", f"status unavailable: {exc!r}\n".encode()
        if html:
            return 200, "text/html; charset=utf-8", render_html(doc).encode()
        return 200, "application/json", json.dumps(doc, sort_keys=True).encode()
