"""Serving a Prometheus registry at /metrics, for the roles that need nothing more (the
agent and the Spark job; the manager's server also has /healthz and /status)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, start_http_server

from kmedic.errors import KmedicError


def serve_metrics(registry: CollectorRegistry, host: str, port: int) -> Any:
    """Start the /metrics HTTP server in a daemon thread; returns the server (``server_port``
    is the bound port, ``shutdown()`` stops it). A port in use is a KmedicError naming it."""
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise KmedicError(f"cannot serve /metrics on {host}:{port}: {exc.strerror}") from exc
    return server
