"""A broker's cordon (KIP-1066) as kmedic reads and writes it, on the real cluster: the newest
Kafka knows ``cordoned.log.dirs``, places no new partition on a broker cordoned with ``*`` and
refuses a reassignment onto it, and its log directories read cordoned (what its agent
reports); uncordoned, the broker takes partitions again. (On Kafka 4.1,
which does not know the config, tests/integration/test_kafka_41.py.)"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from helpers import kafka_conf, wait_for

from kmedic.kafka_admin import connect_admin, describe_broker_log_dirs
from kmedic.metadata import LogDirInfo
from manager.executor.admin_calls import AdminCalls
from manager.executor.cordons import BrokerCordons, Cordon

pytestmark = pytest.mark.integration

BROKER = 2


def replicas_per_broker(admin: AdminClient, topic: str) -> Counter[int]:
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    return Counter(b for p in meta.partitions.values() for b in p.replicas)


def log_dirs_of(cluster: Any, broker: int) -> list[LogDirInfo]:
    client = connect_admin(cluster.bootstrap_servers, client_id="test", timeout_ms=10_000)
    try:
        return describe_broker_log_dirs(client, broker)
    finally:
        client.close()


def create(admin: AdminClient, topic: str) -> Counter[int]:
    futures = admin.create_topics([NewTopic(topic, num_partitions=12, replication_factor=2)])
    futures[topic].result(timeout=30)
    return wait_for(
        lambda: (c := replicas_per_broker(admin, topic)).total() == 24 and c,
        timeout=30,
        what=f"{topic}'s 12 partitions in the metadata",
    )


def test_a_cordoned_broker_takes_no_new_partition_until_uncordoned(healthy_cluster: Any) -> None:
    cluster = healthy_cluster
    calls = AdminCalls(cluster.bootstrap_servers, 10.0, 10.0)
    cordons = BrokerCordons(calls)
    admin = AdminClient(kafka_conf(cluster.bootstrap_servers))
    name = f"cordon-{uuid.uuid4().hex[:6]}"
    assert cordons.read(BROKER) == Cordon(supported=True, value="")
    try:
        cordons.write(BROKER, True)
        wait_for(lambda: cordons.read(BROKER).whole, timeout=30, what="the cordon read back")
        # The controller learns it from the broker's next heartbeat: from then on every new
        # topic (12 partitions at RF 2 over 4 brokers, round robin) avoids it.
        wait_for(
            lambda: create(admin, f"{name}.{uuid.uuid4().hex[:4]}")[BROKER] == 0,
            timeout=30,
            what=f"a topic placed without broker {BROKER}",
        )
        assert create(admin, f"{name}.cordoned")[BROKER] == 0
        # What its agent reads and reports (DescribeLogDirs v5): every log directory cordoned.
        assert all(d.cordoned for d in log_dirs_of(cluster, BROKER))
        cordons.write(BROKER, False)
        wait_for(lambda: cordons.read(BROKER).value == "", timeout=30, what="the cordon removed")
        wait_for(
            lambda: not any(d.cordoned for d in log_dirs_of(cluster, BROKER)),
            timeout=30,
            what="its log directories read uncordoned",
        )
        wait_for(
            lambda: create(admin, f"{name}.{uuid.uuid4().hex[:4]}")[BROKER] > 0,
            timeout=30,
            what=f"broker {BROKER} placed on again",
        )
    finally:
        calls.close()
