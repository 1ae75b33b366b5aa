"""The manager's HTTP server as tests start it without a daemon: its pages (metrics, health,
status) from what the test passes, and, where a test passes them, ZooKeeper and the audit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from kazoo.client import KazooClient
from prometheus_client import CollectorRegistry

from kmedic.web_config import WebConfig
from manager.api.server import ApiServer
from manager.api.view import ManagerView


def _absent(what: str) -> Callable[..., Any]:
    def missing(*_: Any) -> Any:
        raise AssertionError(f"this test serves no {what}")

    return missing


def view_of(
    registry: CollectorRegistry,
    health: Callable[[], tuple[bool, dict[str, Any]]],
    *,
    status: Callable[[], dict[str, Any]] | None = None,
    cluster: str = "test",
    zookeeper: Callable[[], AbstractContextManager[KazooClient]] | None = None,
    zk_root: str = "/kmedic",
    audit: Callable[[str, dict[str, Any]], None] | None = None,
    readiness: Callable[[], Mapping[str, Any] | None] = lambda: None,
    kafka: str = "127.0.0.1:1",
    snapshot: Callable[[], Any] = lambda: None,
) -> ManagerView:
    return ManagerView(
        cluster=cluster,
        instance="test-instance",
        zk_root=zk_root,
        leads=lambda: True,
        registry=registry,
        health=health,
        status_page=status or _absent("status page"),
        decision=lambda: None,
        snapshot=snapshot,
        readiness=readiness,
        audit=audit or _absent("audit log"),
        zookeeper=zookeeper or _absent("ZooKeeper"),
        kafka=kafka,
        audit_topic="kmedic.actions",
    )


def serve(
    registry: CollectorRegistry,
    health: Callable[[], tuple[bool, dict[str, Any]]],
    *,
    status: Callable[[], dict[str, Any]] | None = None,
    web: WebConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    max_followers: int = 8,
) -> ApiServer:
    """The pages served, started."""
    view = view_of(registry, health, status=status)
    return ApiServer(view, host, port, web, max_followers=max_followers).start()
