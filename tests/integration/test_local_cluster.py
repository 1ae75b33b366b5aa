"""The local cluster is real: produce/consume, exporter metrics, broker death and recovery,
ZooKeeper, and a CLI-driven cluster that leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import tomllib
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import kafka_conf, kmedic_process, wait_for, wait_until_usable
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from kmedic.paths import CONFIGS

pytestmark = pytest.mark.integration


def create_topic(bootstrap: str, name: str, partitions: int, rf: int) -> None:
    admin = AdminClient(kafka_conf(bootstrap))
    futures = admin.create_topics([NewTopic(name, partitions, rf)])
    futures[name].result(timeout=30)
    wait_until_usable(bootstrap, [name])


def produce(bootstrap: str, topic: str, count: int, size: int = 1000) -> None:
    producer = Producer(kafka_conf(bootstrap, {"acks": "all", "linger.ms": 5}))
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=os.urandom(size))
        producer.poll(0)
    assert producer.flush(30) == 0, "messages left unacknowledged"


def partitions_of(bootstrap: str, topic: str) -> dict[int, tuple[list[int], list[int]]]:
    """partition -> (replicas, isr) from the Admin API's metadata."""
    admin = AdminClient(kafka_conf(bootstrap))
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    return {p.id: (list(p.replicas), list(p.isrs)) for p in meta.partitions.values()}


def topic_bytes_in(exporter_url: str, topic: str) -> float:
    text = urllib.request.urlopen(exporter_url, timeout=10).read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "kafka_server_brokertopicmetrics_bytesinpersec_total"
                and sample.labels.get("topic") == topic
            ):
                return float(sample.value)
    return 0.0


def test_produce_and_consume_on_rf3_topic(healthy_cluster: Any) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = f"rf3-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions=3, rf=3)
    produce(bootstrap, topic, 300)
    consumer = Consumer(
        kafka_conf(
            bootstrap,
            {
                "group.id": f"g-{topic}",
                "auto.offset.reset": "earliest",
            },
        )
    )
    consumer.subscribe([topic])
    seen: set[bytes] = set()
    try:

        def consumed_all() -> bool:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                seen.add(msg.key())
            return len(seen) == 300

        wait_for(consumed_all, timeout=60, interval=0, what="all 300 messages consumed")
    finally:
        consumer.close()
    for replicas, _ in partitions_of(bootstrap, topic).values():
        assert len(set(replicas)) == 3


def test_exporter_reports_per_topic_bytes_in(healthy_cluster: Any) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = f"metered-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions=4, rf=2)
    before = sum(topic_bytes_in(healthy_cluster.exporter_url(b), topic) for b in (1, 2, 3, 4))
    produce(bootstrap, topic, 200, size=2000)
    after = wait_for(
        lambda: (
            sum(topic_bytes_in(healthy_cluster.exporter_url(b), topic) for b in (1, 2, 3, 4))
            >= 200 * 2000
        ),
        timeout=30,
        what="per-topic bytes-in to count the produced bytes",
    )
    assert after
    assert before < 200 * 2000


def test_killed_broker_leaves_partitions_under_replicated_until_restarted(
    healthy_cluster: Any,
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = f"urp-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions=4, rf=3)
    produce(bootstrap, topic, 100)
    victim = 2
    hosted = [
        p for p, (replicas, _) in partitions_of(bootstrap, topic).items() if victim in replicas
    ]
    assert hosted, "RF 3 on 4 brokers puts some replica on every broker"

    healthy_cluster.kill(victim)
    assert not healthy_cluster.is_alive(victim)

    def under_replicated() -> bool:
        parts = partitions_of(bootstrap, topic)
        return all(victim not in parts[p][1] and len(parts[p][1]) < 3 for p in hosted)

    wait_for(under_replicated, timeout=30, what=f"partitions {hosted} under-replicated")

    healthy_cluster.restart(victim)

    def fully_replicated() -> bool:
        return all(len(isr) == 3 for _, isr in partitions_of(bootstrap, topic).values())

    wait_for(fully_replicated, timeout=90, what="every ISR full again after the restart")


def test_zookeeper_stores_and_returns_a_znode(healthy_cluster: Any) -> None:
    zk = KazooClient(hosts=healthy_cluster.zk_connect, timeout=10)
    zk.start(timeout=15)
    try:
        path = f"/kmedic-test/{uuid.uuid4().hex}"
        zk.create(path, b"hello", makepath=True)
        data, stat = zk.get(path)
        assert data == b"hello"
        assert stat.version == 0
        zk.delete(path)
    finally:
        zk.stop()
        zk.close()


def kmedic(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return kmedic_process(*args, timeout=180, cwd=cwd)


def processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in line and int(entry.name) != os.getpid():
            pids.append(int(entry.name))
    return pids


def test_cli_cluster_lifecycle_leaves_no_process(tmp_path: Path) -> None:
    workdir = tmp_path / "cli-cluster"
    up = kmedic(
        "cluster", "--dir", str(workdir), "up", "--broker-count", "1", "--racks", "/a", cwd=tmp_path
    )
    try:
        assert up.returncode == 0, up.stderr
        assert str(workdir) in up.stdout
        status = kmedic("cluster", "--dir", str(workdir), "status", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        assert status.stdout.count("running") == 3  # zookeeper, controller, broker 1
        bad = kmedic("cluster", "--dir", str(workdir), "kill", "7", cwd=tmp_path)
        assert bad.returncode == 1
        assert "no broker or controller 7" in bad.stderr
        assert "Traceback" not in bad.stderr
        assert processes_mentioning(str(workdir))
    finally:
        down = kmedic("cluster", "--dir", str(workdir), "down", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert processes_mentioning(str(workdir)) == []
    status = kmedic("cluster", "--dir", str(workdir), "status", cwd=tmp_path)
    assert status.stdout.count("stopped") == 3


def test_the_session_cluster_runs_the_newest_kafka_release(local_cluster: Any) -> None:
    """The default release is the [kafka] group of configs/jvm-artifacts.toml (4.4); the 4.1
    line runs in tests/integration/test_kafka_41.py."""
    groups = tomllib.loads((CONFIGS / "jvm-artifacts.toml").read_text())
    broker_jar = next(a for a in groups["kafka"]["artifacts"] if ":kafka_2.13:" in a)
    version = broker_jar.rsplit(":", 1)[1]
    assert version.startswith("4.4"), version
    log = (Path(local_cluster.brokers[0].directory) / "server.log").read_text()
    assert f"Kafka version: {version}" in log
