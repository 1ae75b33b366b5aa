"""What the Admin API says about one broker: registration, rack, roles and ISR, reassignments,
log directories. I/O through kafka-python's KafkaAdminClient (one connection for every call it
needs, including DescribeLogDirs with capacity figures and ListPartitionReassignments).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from agent.exporter import TopicPartition
from kmedic.errors import KmedicError
from kmedic.kafka_admin import connect_admin


class AdminApiError(KmedicError):
    """An Admin API call failed (cluster unreachable, timeout, error code)."""


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Reassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True)
class LogDirInfo:
    path: str
    total_bytes: int | None
    usable_bytes: int | None
    replica_bytes: int
    error_code: int


@dataclass(frozen=True)
class BrokerNode:
    host: str
    port: int
    rack: str | None
    fenced: bool


@dataclass(frozen=True)
class AdminView:
    """One consistent read of the cluster as it concerns this broker."""

    node: BrokerNode | None  # None: the broker is not registered
    partitions: list[PartitionInfo]
    reassignments: dict[TopicPartition, Reassignment]
    log_dirs: list[LogDirInfo] | None  # None: the broker did not answer DescribeLogDirs
    kafka_version: str | None


def parse_nodes(cluster: dict[str, Any]) -> dict[int, BrokerNode]:
    return {
        int(b["broker_id"]): BrokerNode(
            host=str(b["host"]),
            port=int(b["port"]),
            rack=b.get("rack") or None,
            fenced=bool(b.get("is_fenced", False)),
        )
        for b in cluster.get("brokers", [])
    }


def parse_topics(topics: list[dict[str, Any]]) -> list[PartitionInfo]:
    out = []
    for t in topics:
        for p in t.get("partitions", []):
            out.append(
                PartitionInfo(
                    topic=str(t["name"]),
                    partition=int(p["partition_index"]),
                    leader=int(p["leader_id"]),
                    replicas=tuple(int(r) for r in p["replica_nodes"]),
                    isr=tuple(int(r) for r in p["isr_nodes"]),
                )
            )
    return out


def parse_log_dirs(result: list[dict[str, Any]], broker_id: int) -> list[LogDirInfo] | None:
    for entry in result:
        if int(entry.get("broker", -1)) != broker_id:
            continue
        dirs = []
        for d in entry.get("log_dirs", []):
            replica_bytes = sum(
                int(p["partition_size"])
                for t in d.get("topics", [])
                for p in t.get("partitions", [])
                if not p.get("is_future_key", False)
            )
            total, usable = d.get("total_bytes"), d.get("usable_bytes")
            dirs.append(
                LogDirInfo(
                    path=str(d["log_dir"]),
                    # -1 means the broker does not know (older protocol versions).
                    total_bytes=int(total) if total is not None and total >= 0 else None,
                    usable_bytes=int(usable) if usable is not None and usable >= 0 else None,
                    replica_bytes=replica_bytes,
                    error_code=int(d.get("error_code", 0)),
                )
            )
        return dirs
    return None


def parse_reassignments(result: dict[Any, dict[str, Any]]) -> dict[TopicPartition, Reassignment]:
    return {
        (str(tp.topic), int(tp.partition)): Reassignment(
            replicas=tuple(r.get("replicas", [])),
            adding=tuple(r.get("adding_replicas", [])),
            removing=tuple(r.get("removing_replicas", [])),
        )
        for tp, r in result.items()
    }


def tcp_reachable(host: str, port: int, timeout_s: float) -> bool:
    """Whether the broker's listener accepts a TCP connection."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class AdminSource:
    """Reads the AdminView; reconnects lazily after failures."""

    def __init__(self, bootstrap: str, broker_id: int, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._broker_id = broker_id
        self._timeout_ms = int(timeout_s * 1000)
        self._client: Any = None
        self._kafka_version: str | None = None

    def _connect(self) -> Any:
        if self._client is None:
            self._client = connect_admin(
                self._bootstrap,
                client_id=f"kmedic-agent-{self._broker_id}",
                timeout_ms=self._timeout_ms,
                error=AdminApiError,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None

    def nodes(self) -> dict[int, BrokerNode]:
        client = self._connect()
        try:
            return parse_nodes(client.describe_cluster())
        except Exception as exc:
            self.close()
            raise AdminApiError(f"DescribeCluster failed: {exc}") from exc

    def read(self, node: BrokerNode | None) -> AdminView:
        """Topics, reassignments and (if the broker is registered) its log dirs."""
        client = self._connect()
        try:
            partitions = parse_topics(client.describe_topics())
            reassignments = parse_reassignments(
                client.list_partition_reassignments(timeout_ms=self._timeout_ms)
            )
        except Exception as exc:
            self.close()
            raise AdminApiError(f"Admin API metadata call failed: {exc}") from exc
        log_dirs = None
        if node is not None:
            try:
                log_dirs = parse_log_dirs(
                    client.describe_log_dirs(brokers=[self._broker_id]), self._broker_id
                )
            except Exception:
                log_dirs = None  # statvfs stands in; see agent.sampler
            if self._kafka_version is None:
                self._kafka_version = self._probe_version(client)
        return AdminView(node, partitions, reassignments, log_dirs, self._kafka_version)

    def _probe_version(self, client: Any) -> str | None:
        # kafka-python infers the newest release whose API versions the broker matches.
        try:
            version = client._client.check_version(
                node_id=self._broker_id, timeout_ms=self._timeout_ms
            )
        except Exception:
            return None
        return ".".join(str(v) for v in version) if version else None
