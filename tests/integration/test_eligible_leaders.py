"""Issue 39.6 on the real cluster (Kafka 4.1, KIP-966 on by default): a partition at RF 3 and
min.insync.replicas 3 loses a replica. Fenced, it leaves the ISR below min.insync.replicas,
so Kafka keeps it as an eligible leader replica; the new read gives it, and `kmedic snapshot`
carries it (DescribeTopicPartitions, only for such topics) in the partition's
``eligible_leaders``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import create_placed_topic, kmedic_process, wait_for
from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from kmedic.kafka_admin import describe_eligible_leaders, describe_partitions

pytestmark = pytest.mark.integration

KILLED = 3


def test_the_snapshot_carries_kafkas_eligible_leader_replicas(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    topic = f"elr-{uuid.uuid4().hex[:6]}"
    create_placed_topic(bootstrap, topic, [[4, 2, KILLED]], {"min.insync.replicas": "3"})
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def eligible() -> dict[tuple[str, int], tuple[int, ...]] | None:
        """None while a broker resets the connection (seen once, right after the cluster's
        brokers were revived): asked again."""
        try:
            return describe_eligible_leaders(admin, [topic])
        except KafkaError:
            return None

    try:
        wait_for(lambda: eligible() == {}, timeout=30, what="no eligible leader replica yet")
        cluster.kill(KILLED)
        wait_for(lambda: _isr(admin, topic) == [4, 2], timeout=60, what="ISR [4, 2]")
        found = wait_for(
            eligible,
            timeout=30,
            what="an eligible leader replica",
        )
        assert found == {(topic, 0): (KILLED,)}
        _assert_decoded_as_kafka_python_decodes(admin)
    finally:
        admin.close()
    config = tmp_path / "manager.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cluster": f"elr-{uuid.uuid4().hex[:6]}",
                "bootstrap": bootstrap,
                "zookeeper": {"zk_connect": cluster.zk_connect},
            }
        )
    )
    out = tmp_path / "snap.json"
    done = kmedic_process(
        "snapshot", "--config", str(config), "--out", str(out), "--feeds-wait", "2", timeout=120
    )
    assert done.returncode == 0, done.stderr
    [mine] = [t for t in json.loads(out.read_text())["topics"] if t["name"] == topic]
    assert mine["min_insync_replicas"] == 3
    assert mine["partitions"][0]["eligible_leaders"] == [KILLED]
    # Gone, so that no later test on the shared cluster finds it under its min ISR.
    cleanup = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        cleanup.delete_topics([topic])
    finally:
        cleanup.close()


def _isr(admin: KafkaAdminClient, topic: str) -> list[int] | None:
    """None while a broker resets the connection (asked again)."""
    try:
        [described] = admin.describe_topics([topic])
    except KafkaError:
        return None
    return list(described["partitions"][0]["isr_nodes"])


def _assert_decoded_as_kafka_python_decodes(admin: KafkaAdminClient) -> None:
    """kmedic's own decoding of a real Metadata answer (a broker dead: shrunk ISRs, offline
    replicas) gives what kafka-python's gives, partition for partition; and a read naming
    topics (the executor's) gives those topics only."""
    ours = {(p.topic, p.partition): p for p in describe_partitions(admin)}
    theirs = {
        (t["name"], p["partition_index"]): (
            p["leader_id"],
            p["replica_nodes"],
            p["isr_nodes"],
            p["offline_replicas"],
        )
        for t in admin.describe_topics()
        for p in t["partitions"]
    }
    assert {
        k: (p.leader, list(p.replicas), list(p.isr), list(p.offline)) for k, p in ours.items()
    } == theirs
    assert any(p.offline for p in ours.values()), "no offline replica: the irregular shapes"
    one = sorted({t for t, _ in ours})[0]
    assert {p.topic for p in describe_partitions(admin, [one])} == {one}
