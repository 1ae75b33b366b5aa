"""The running manager's HTTP server, and the manager as its API sees it (manager.api.view):
what it reads, the audit record of an operator's write, and a plain ZooKeeper session per
call, as the CLI opens one (the coordinator's session stays the election's own)."""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol

from kmedic.logging import get_logger
from kmedic.web_config import WebConfig, exposure, load_web_config
from manager.api.server import ApiServer
from manager.api.view import ManagerView
from manager.config import ManagerConfig
from manager.coordination.session import zk_session
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.mode import ModeTracker
from manager.daemon.ports import Coordinator
from manager.daemon.readiness_sweep import ReadinessSweep
from manager.daemon.requests import RequestFollower
from manager.model.decision import Decision
from manager.model.snapshot import Snapshot
from manager.web.metrics import ManagerMetrics
from manager.web.status_page import cordon_rows

log = get_logger(__name__)


class RunningManager(Protocol):
    """What the view takes from manager.daemon.manager.Manager (which imports this module)."""

    cfg: ManagerConfig
    instance: str
    coordinator: Coordinator
    metrics: ManagerMetrics
    trail: AuditTrail
    readiness: ReadinessSweep
    mode: ModeTracker
    requests: RequestFollower
    last_decision: Decision | None
    last_snapshot: Snapshot | None

    def health(self) -> tuple[bool, dict[str, Any]]: ...

    def status(self) -> dict[str, Any]: ...


def api_view(manager: RunningManager) -> ManagerView:
    cfg = manager.cfg
    zk = cfg.zookeeper

    return ManagerView(
        cluster=cfg.cluster,
        instance=manager.instance,
        zk_root=zk.root,
        leads=manager.coordinator.may_act,
        registry=manager.metrics.registry,
        health=manager.health,
        status_page=manager.status,
        decision=lambda: manager.last_decision,
        snapshot=lambda: manager.last_snapshot,
        readiness=manager.readiness.shown,
        audit=manager.trail.operator,
        zookeeper=partial(zk_session, zk.zk_connect, auth=zk.auth),
        kafka=cfg.own_topics_client,
        audit_topic=cfg.topics.actions,
        stats_topic=cfg.topics.brokerstats,
        mode=lambda: (manager.mode.current, manager.mode.source),
        cordons=lambda: cordon_rows(manager.last_snapshot, manager.requests.cordons.by_whom),
        own_topics=cfg.topics.own(),
    )


def serve_api(manager: RunningManager) -> ApiServer:
    """The manager's HTTP server, started on its config's address, protected as its web
    config says; how open it is said in one line each at start, and as a gauge."""
    http = manager.cfg.http
    web = load_web_config(http.web_config_file) if http.web_config_file else WebConfig()
    told = exposure(http.host, web)
    for event, sentence in told:
        log.warning(event, host=http.host, port=http.port, sentence=sentence)
    manager.metrics.observe_http_exposure(reads_open=any(e == "http_reads_open" for e, _ in told))
    server = ApiServer(
        api_view(manager), http.host, http.port, web, max_followers=http.max_followers
    )
    return server.start()
