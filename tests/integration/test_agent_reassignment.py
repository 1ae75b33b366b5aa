"""Replicas under reassignment, as the agent reports them, against a real throttled move."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from helpers import kafka_conf, wait_for
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic

from agent.config import AgentConfig
from agent.sampler import Sampler

pytestmark = pytest.mark.integration

THROTTLE = "10000"  # bytes/s: a few MB take minutes to copy, so the move stays in progress


def _throttle(admin: AdminClient, topic: str, leader: int, target: int, op: Any) -> None:
    def entry(name: str, value: str) -> Any:
        return ConfigEntry(name, value, incremental_operation=op)

    resources = [
        ConfigResource(
            ConfigResource.Type.BROKER,
            str(leader),
            incremental_configs=[entry("leader.replication.throttled.rate", THROTTLE)],
        ),
        ConfigResource(
            ConfigResource.Type.BROKER,
            str(target),
            incremental_configs=[entry("follower.replication.throttled.rate", THROTTLE)],
        ),
        ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[
                entry("leader.replication.throttled.replicas", f"0:{leader}"),
                entry("follower.replication.throttled.replicas", f"0:{target}"),
            ],
        ),
    ]
    for resource in resources:  # one broker resource per call, says the client
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)


def _sample(cluster: Any, broker: int) -> Any:
    config = AgentConfig.model_validate(
        {
            "broker_id": broker,
            "bootstrap": cluster.bootstrap_servers,
            "exporter_url": cluster.exporter_url(broker),
            "interval_s": 2.0,
            "metrics_port": None,
        }
    )
    sampler = Sampler(config)
    try:
        return sampler.sample()
    finally:
        sampler.close()


def test_reassigning_replicas_are_reported(healthy_cluster: Any) -> None:
    cluster = healthy_cluster
    leader, target, bystander = cluster.broker_ids[0], cluster.broker_ids[2], cluster.broker_ids[1]
    topic = f"reassign-{uuid.uuid4().hex[:8]}"
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    cadmin = AdminClient(kafka_conf(cluster.bootstrap_servers))
    tp = TopicPartition(topic, 0)
    try:
        kadmin.create_topics([NewTopic(topic, replica_assignments={0: [leader]})])
        wait_for(
            lambda: topic in cadmin.list_topics(timeout=5).topics, timeout=30, what="the topic"
        )
        producer = Producer(kafka_conf(cluster.bootstrap_servers, {"linger.ms": 20}))
        for _ in range(3000):
            producer.produce(topic, b"r" * 1000, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0
        _throttle(cadmin, topic, leader, target, AlterConfigOpType.SET)
        kadmin.alter_partition_reassignments({tp: [leader, target]})
        wait_for(
            lambda: tp in kadmin.list_partition_reassignments(),
            timeout=30,
            what="the reassignment to be listed",
        )
        for broker in (leader, target):
            rec = _sample(cluster, broker)
            assert rec.failure is None, rec.failure
            moving = [r for r in rec.reassigning if r.topic == topic]
            assert len(moving) == 1, f"broker {broker}: {rec.reassigning}"
            assert moving[0].partition == 0
            assert moving[0].adding_replicas == [target]
            assert moving[0].removing_replicas == []
            assert sorted(moving[0].replicas) == sorted([leader, target])
            assert rec.totals.reassigning_count >= 1
        rec = _sample(cluster, bystander)
        assert all(r.topic != topic for r in rec.reassigning)
        # The moving partition is still led by its old leader and reported with its traffic.
        assert any(r.topic == topic for r in _sample(cluster, leader).leaders)
    finally:
        # Either may have nothing to undo if the test failed before the move started.
        with contextlib.suppress(Exception):
            kadmin.alter_partition_reassignments({tp: None})
        with contextlib.suppress(Exception):
            _throttle(cadmin, topic, leader, target, AlterConfigOpType.DELETE)
        kadmin.delete_topics([topic])
        kadmin.close()
