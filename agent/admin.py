"""What the Admin API says about one broker: registration, rack, reassignments, log directories,
and - when asked, every few minutes (agent.roles) - the whole cluster's Metadata. I/O through
kafka-python's KafkaAdminClient (one connection for every call it needs, including
DescribeLogDirs with capacity figures and ListPartitionReassignments).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from kmedic import __version__
from kmedic.errors import KmedicError
from kmedic.kafka_admin import connect_admin, describe_broker_log_dirs, describe_partitions
from kmedic.kafka_client import Cluster
from kmedic.metadata import (
    BrokerNode,
    LogDirInfo,
    PartitionInfo,
    Reassignment,
    TopicPartition,
    parse_nodes,
    parse_reassignments,
)

# Cluster-wide reads per sample: a later one goes to another broker when the broker asked had
# just died. The attempts are spaced: an attempt made at once failed on the same dead
# connection (CI: both within 2 ms of the kill, and a live broker's agent published a failure).
METADATA_ATTEMPTS = 3
ATTEMPT_PAUSE_S = 0.2
T = TypeVar("T")
Reassignments = dict[TopicPartition, Reassignment]


class AdminApiError(KmedicError):
    """An Admin API call failed (cluster unreachable, timeout, error code)."""


@dataclass(frozen=True)
class AdminView:
    """One consistent read of the cluster as it concerns this broker."""

    node: BrokerNode | None  # None: the broker is not registered
    # This broker's partitions (it holds a replica, or leads) by a Metadata read of the whole
    # cluster; None when this read did not include one.
    partitions: list[PartitionInfo] | None
    reassignments: dict[TopicPartition, Reassignment]
    log_dirs: list[LogDirInfo] | None  # None: the broker did not answer DescribeLogDirs
    kafka_version: str | None


def tcp_reachable(host: str, port: int, timeout_s: float) -> bool:
    """Whether the broker's listener accepts a TCP connection."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class AdminSource:
    """Reads the AdminView; reconnects lazily after failures."""

    def __init__(self, bootstrap: Cluster, broker_id: int, timeout_s: float) -> None:
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
            # Requests for the controller go to this agent's own broker, which forwards them
            # (KRaft): kafka-python would send them to the broker the metadata names, which
            # for a few seconds after a broker dies may be that dead, not yet fenced, broker.
            self._client._controller_id = self._broker_id
        return self._client

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None

    @property
    def connected(self) -> bool:
        """A client is open (a probe must not be the one to bootstrap a new one)."""
        return self._client is not None

    def probe_ms(self, timeout_s: float) -> float:
        """One ApiVersions round trip to this agent's broker, in milliseconds: answered by the
        broker's request handlers, so a stopped JVM, a full request queue or a stalled disk
        under them shows. AdminApiError when it fails or takes longer than ``timeout_s``."""
        client = self._connect()
        request = ApiVersionsRequest(
            client_software_name="kmedic-agent", client_software_version=__version__
        )

        async def send() -> object:
            return await client._manager.send(
                request, node_id=self._broker_id, request_timeout_ms=int(timeout_s * 1000)
            )

        started = time.monotonic()
        try:
            client._manager.run(send)
        except Exception as exc:
            raise AdminApiError(f"probe of broker {self._broker_id} failed: {exc}") from exc
        return (time.monotonic() - started) * 1000

    def nodes(self) -> dict[int, BrokerNode]:
        client = self._connect()
        return self._attempted(
            lambda: parse_nodes(client.describe_cluster()), "DescribeCluster failed"
        )

    def _attempted(self, call: Callable[[], T], failed: str) -> T:
        """``call`` up to METADATA_ATTEMPTS times, ATTEMPT_PAUSE_S apart, on the same client:
        the broker that refused the connection (one that just died) is in its reconnect
        backoff, so another one answers (a fresh client knows no broker is dead and may ask
        that one first). The last failure closes the client and is raised as ``failed``."""
        for _ in range(METADATA_ATTEMPTS - 1):
            try:
                return call()
            except Exception:
                time.sleep(ATTEMPT_PAUSE_S)
        try:
            return call()
        except Exception as exc:
            self.close()
            raise AdminApiError(f"{failed}: {exc}") from exc

    def read(self, node: BrokerNode | None, *, metadata: bool) -> AdminView:
        """Reassignments, (if the broker is registered) its log dirs, and with ``metadata``
        its partitions as the whole cluster's Metadata answer gives them."""
        client = self._connect()

        def cluster_wide() -> tuple[list[PartitionInfo] | None, Reassignments]:
            # The whole cluster's Metadata answer, decoded into columns; only this broker's
            # partitions become records.
            partitions = (
                describe_partitions(client).hosted_by(self._broker_id) if metadata else None
            )
            return partitions, parse_reassignments(
                client.list_partition_reassignments(timeout_ms=self._timeout_ms)
            )

        partitions, reassignments = self._attempted(cluster_wide, "Admin API metadata call failed")
        log_dirs = None
        if node is not None:
            try:
                log_dirs = describe_broker_log_dirs(client, self._broker_id)
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
