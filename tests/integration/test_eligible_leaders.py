"""Issue 39.6 on the real cluster (Kafka 4.1, KIP-966 on by default): a partition at
min.insync.replicas 2 loses two of its three replicas. The second one fenced leaves the ISR
below min.insync.replicas, so Kafka keeps it as an eligible leader replica; `kmedic snapshot`
reads it (DescribeTopicPartitions, only for such topics) into the partition's
``eligible_leaders``. The first one, removed while the ISR was still at two, is not eligible."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import create_placed_topic, wait_for
from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from kmedic.kafka_admin import describe_eligible_leaders

pytestmark = pytest.mark.integration

FIRST, SECOND, LAST = 2, 3, 4


def test_the_snapshot_carries_kafkas_eligible_leader_replicas(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    topic = f"elr-{uuid.uuid4().hex[:6]}"
    create_placed_topic(bootstrap, topic, [[LAST, FIRST, SECOND]], {"min.insync.replicas": "2"})
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
        cluster.kill(FIRST)
        wait_for(lambda: _isr(admin, topic) == [LAST, SECOND], timeout=60, what="ISR [4, 3]")
        cluster.kill(SECOND)
        wait_for(lambda: _isr(admin, topic) == [LAST], timeout=60, what="ISR [4]")
        found = wait_for(
            eligible,
            timeout=30,
            what="an eligible leader replica",
        )
        assert found == {(topic, 0): (SECOND,)}
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
    args = ["snapshot", "--config", str(config), "--out", str(out), "--wait", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "composition.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [mine] = [t for t in json.loads(out.read_text())["topics"] if t["name"] == topic]
    assert mine["min_insync_replicas"] == 2
    assert mine["partitions"][0]["eligible_leaders"] == [SECOND]


def _isr(admin: KafkaAdminClient, topic: str) -> list[int]:
    [described] = admin.describe_topics([topic])
    return list(described["partitions"][0]["isr_nodes"])
