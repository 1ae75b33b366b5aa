"""What the end-to-end tests ask of the real cluster and of a manager: through fresh clients,
retried while brokers come and go."""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Callable, Iterable
from typing import TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import kafka_conf, wait_for
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import KafkaError as KpKafkaError
from prometheus_client.parser import text_string_to_metric_families

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings
from manager.audit.kafka_reader import read_records
from manager.audit.log import AuditRecord

T = TypeVar("T")
Partitions = dict[tuple[str, int], tuple[list[int], list[int]]]


def ask(bootstrap: Cluster, question: Callable[[AdminClient], T]) -> T:
    """Ask the Admin API, from a fresh client on each try: a paused broker keeps its
    connections open and swallows whatever request reaches it."""
    for _ in range(6):
        try:
            return question(AdminClient(kafka_conf(bootstrap)))
        except (KafkaException, TimeoutError):
            time.sleep(1)
    raise AssertionError("the Admin API did not answer in 6 tries")


def partitions(bootstrap: Cluster, topics: Iterable[str]) -> Partitions:
    """(replicas, ISR) of every partition of these topics."""
    wanted = list(topics)

    def read(admin: AdminClient) -> Partitions:
        meta = admin.list_topics(timeout=5)
        return {
            (t, p.id): (list(p.replicas), list(p.isrs))
            for t in wanted
            for p in meta.topics[t].partitions.values()
        }

    return ask(bootstrap, read)


def under_replicated(bootstrap: Cluster) -> list[str]:
    """Every partition of every topic (kmedic's own and Kafka's among them) whose ISR is
    short of its replicas: what a test waits out before the next one kills a broker."""

    def read(admin: AdminClient) -> list[str]:
        meta = admin.list_topics(timeout=5)
        return sorted(
            f"{t}:{p.id}"
            for t, topic in meta.topics.items()
            for p in topic.partitions.values()
            if len(p.isrs) < len(p.replicas)
        )

    return ask(bootstrap, read)


def live_brokers(bootstrap: Cluster) -> set[int]:
    return ask(bootstrap, lambda a: {n.id for n in a.describe_cluster().result(timeout=5).nodes})


def audit_records(bootstrap: Cluster, since_ms: int) -> list[AuditRecord]:
    def read() -> list[AuditRecord] | None:
        try:
            return list(read_records(bootstrap, since_ms=since_ms))
        except (KafkaException, KmedicError):
            return None  # the audit topic's leader is moving or its broker is down; read again

    return wait_for(read, timeout=60, interval=2, what="the audit topic to be readable")


def metric(port: int, name: str, **labels: str) -> float | None:
    """The sum of a metric's samples matching ``labels``; None while nothing answers."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    except OSError:
        return None
    total = 0.0
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


def reassignments(bootstrap: Cluster) -> dict[tuple[str, int], tuple[int, ...]]:
    """Every reassignment Kafka runs, with the replicas it heads to."""
    client = KafkaAdminClient(**client_settings(bootstrap).kafka_python())
    try:
        ongoing = client.list_partition_reassignments()
    finally:
        client.close()
    return {
        (tp.topic, tp.partition): tuple(
            b for b in info["replicas"] if b not in info.get("removing_replicas", [])
        )
        for tp, info in ongoing.items()
    }


Placement = dict[tuple[str, int], list[int]]


def placement(bootstrap: Cluster) -> Placement:
    """The replica list of every partition of every topic, Kafka's own and kmedic's among them."""

    def read(admin: AdminClient) -> Placement:
        meta = admin.list_topics(timeout=5)
        return {
            (t, p.id): list(p.replicas)
            for t, topic in meta.topics.items()
            for p in topic.partitions.values()
        }

    return ask(bootstrap, read)


def put_back(bootstrap: Cluster, initial: Placement) -> int:
    """Every partition that still exists back on the replicas ``initial`` gave it (a heal test
    leaves the broker it killed emptier), its preferred leader elected; how many moved."""
    now = placement(bootstrap)
    moved = {
        key: replicas for key, replicas in initial.items() if now.get(key) not in (None, replicas)
    }
    if moved:
        client = KafkaAdminClient(**client_settings(bootstrap).kafka_python())
        try:
            client.alter_partition_reassignments(
                {KpTopicPartition(t, p): replicas for (t, p), replicas in moved.items()}
            )
            wait_for(
                lambda: not client.list_partition_reassignments(),
                timeout=180,
                what=f"{len(moved)} partitions back on their first replicas",
            )
            by_topic: dict[str, list[int]] = {}
            for t, p in moved:
                by_topic.setdefault(t, []).append(p)
            # Some may be led by their preferred replica already: nothing to elect there.
            with contextlib.suppress(KpKafkaError):
                client.elect_leaders(0, by_topic, timeout_ms=30_000)  # 0: preferred
        finally:
            client.close()
    return len(moved)
