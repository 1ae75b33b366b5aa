"""What the API reads from and does through the manager it runs in: one port, so the routes
stay testable without a daemon (a test passes its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from prometheus_client import CollectorRegistry

from kmedic.kafka_client import Cluster
from manager.analyzer.topic_safety import OwnSetting, not_own
from manager.model.decision import Decision
from manager.model.snapshot import Snapshot


@dataclass(frozen=True)
class ManagerView:
    cluster: str
    instance: str
    zk_root: str
    leads: Callable[[], bool]
    registry: CollectorRegistry
    health: Callable[[], tuple[bool, dict[str, Any]]]
    status_page: Callable[[], dict[str, Any]]
    decision: Callable[[], Decision | None]
    snapshot: Callable[[], Snapshot | None]
    readiness: Callable[[], Mapping[str, Any] | None]
    # An operator's write, audited by this instance: (summary, details).
    audit: Callable[[str, dict[str, Any]], None]
    # A plain ZooKeeper session (no election, no epoch), as the CLI opens one.
    zookeeper: Callable[[], AbstractContextManager[KazooClient]]
    kafka: Cluster
    audit_topic: str
    # The agents' topic (the last resort reads the new leader's log end from it).
    stats_topic: str = "kmedic.brokerstats"
    # This instance's mode now and where it came from (flag, run_time, config).
    mode: Callable[[], tuple[str, str]] = lambda: ("unknown", "unknown")
    # Every cordoned broker this instance knows of and who set its cordon.
    cordons: Callable[[], list[dict[str, Any]]] = lambda: []
    # kmedic's own topics and the min.insync.replicas it creates them with (the unsafe route).
    own_topics: OwnSetting = not_own

    def audit_write(self, by: str, user: str | None, summary: str, **details: Any) -> None:
        """An operator's write, as one record: who (``by``, ``user``) and what."""
        self.audit(f"{by}: {summary}", {"by": by, "user": user, **details})
