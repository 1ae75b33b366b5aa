"""What the soak asks the cluster and the managers, through fresh clients that survive brokers
coming and going: is the cluster whole, which throttles are set, who leads."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from prometheus_client.parser import text_string_to_metric_families

from kmedic.errors import KmedicError
from manager.throttling.ownership import FOLLOWER_REPLICAS, LEADER_REPLICAS, RATE_KEYS

T = TypeVar("T")


def ask(bootstrap: str, question: Callable[[AdminClient], T], tries: int = 6) -> T:
    return _retried(
        bootstrap, lambda: question(AdminClient({"bootstrap.servers": bootstrap})), tries
    )


def _retried(bootstrap: str, call: Callable[[], T], tries: int) -> T:
    """``call()`` on fresh clients until one answers: a broker just killed, not yet fenced,
    refuses connections for a few seconds, and either client library may pick it."""
    last: Exception | None = None
    for _ in range(tries):
        try:
            return call()
        except (KafkaException, KafkaError, TimeoutError) as exc:
            last = exc
            time.sleep(1)
    raise KmedicError(f"the Admin API at {bootstrap} did not answer in {tries} tries: {last}")


def under_replicated(bootstrap: str) -> list[str]:
    """Partitions whose ISR is short of their replicas, or that have no leader."""

    def read(admin: AdminClient) -> list[str]:
        meta = admin.list_topics(timeout=10)
        return sorted(
            f"{t}:{p.id}"
            for t, topic in meta.topics.items()
            for p in topic.partitions.values()
            if len(p.isrs) < len(p.replicas) or p.leader < 0
        )

    return ask(bootstrap, read)


def reassigning(bootstrap: str, tries: int = 6) -> list[str]:
    def read() -> list[str]:
        client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)
        try:
            ongoing = client.list_partition_reassignments()
        finally:
            client.close()
        return sorted(f"{tp.topic}:{tp.partition}" for tp in ongoing)

    return _retried(bootstrap, read, tries)


def quorum_leader(bootstrap: str, tries: int = 10) -> int:
    """The KRaft controller quorum's leader (DescribeMetadataQuorum), asked until one is
    elected: a quorum that just lost its leader answers nothing for a few seconds."""

    def read() -> int:
        client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5_000)
        try:
            doc = client.describe_metadata_quorum()
        finally:
            client.close()
        leader = int(doc["topics"][0]["partitions"][0]["leader_id"])
        if leader < 0:
            raise TimeoutError("the quorum has no leader yet")
        return leader

    return _retried(bootstrap, read, tries)


def replicas_on(bootstrap: str, broker: int) -> list[str]:
    def read(admin: AdminClient) -> list[str]:
        meta = admin.list_topics(timeout=10)
        return sorted(
            f"{t}:{p.id}"
            for t, topic in meta.topics.items()
            for p in topic.partitions.values()
            if broker in p.replicas
        )

    return ask(bootstrap, read)


def leader_of(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The broker leading ``topic``'s ``partition`` (-1: none)."""

    def read(admin: AdminClient) -> int:
        return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader)

    return ask(bootstrap, read)


def registered(bootstrap: str) -> set[int]:
    """The brokers the controllers count as registered and unfenced (DescribeCluster)."""

    def read(admin: AdminClient) -> set[int]:
        return {node.id for node in admin.describe_cluster(request_timeout=10).result(15).nodes}

    return ask(bootstrap, read)


def replicas_of(bootstrap: str, topic: str) -> list[int]:
    """Every broker holding a replica of ``topic``."""

    def read(admin: AdminClient) -> list[int]:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        return sorted({b for p in meta.partitions.values() for b in p.replicas})

    return ask(bootstrap, read)


def outside(bootstrap: str, topic: str, brokers: tuple[int, ...]) -> list[str]:
    """The partitions of ``topic`` with a replica on a broker not in ``brokers``."""

    def read(admin: AdminClient) -> list[str]:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        return sorted(
            f"{topic}:{p.id} on {list(p.replicas)}"
            for p in meta.partitions.values()
            if set(p.replicas) - set(brokers)
        )

    return ask(bootstrap, read)


def throttles(bootstrap: str, brokers: list[int]) -> list[str]:
    """Every replication throttle set: rates on brokers, throttled replicas on topics."""

    def read(admin: AdminClient) -> list[str]:
        topics = [t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")]
        # One broker per call (the Admin API's rule); every topic in one.
        calls = [[ConfigResource(ResourceType.BROKER, str(b))] for b in brokers]
        calls.append([ConfigResource(ResourceType.TOPIC, t) for t in topics])
        found = []
        for resources in calls:
            for res, future in admin.describe_configs(resources).items():
                broker = res.restype == ResourceType.BROKER
                keys = RATE_KEYS if broker else (LEADER_REPLICAS, FOLLOWER_REPLICAS)
                for key, entry in future.result(30).items():
                    if key in keys and entry.value and not entry.is_default:
                        found.append(f"{res.name} {key}={entry.value}")
        return sorted(found)

    return ask(bootstrap, read)


def metric(port: int, name: str, **labels: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            text = page.read().decode()
    except OSError:
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def wait(check: Callable[[], T], timeout_s: float, what: str, interval_s: float = 1.0) -> T:
    """Poll ``check`` until it returns something truthy; KmedicError naming ``what``."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except KmedicError:
            last = None
        if last:
            return last
        time.sleep(interval_s)
    raise KmedicError(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")
