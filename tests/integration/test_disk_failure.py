"""A failed disk on a live broker, on a real JBOD cluster of its own: one of broker 1's two log
directories is made unusable (moved aside, a file in its place). Kafka takes the directory
offline and reports its replicas offline while the broker stays up; the manager explains the
under-replication by the failed directory, and heals exactly those replicas onto another
broker with a `log_dir_failed` reason, leaving the replicas in broker 1's healthy directory
where they are."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from helpers import create_placed_topic, kafka_conf, read_audit, scrape, wait_for
from kafka import KafkaAdminClient, TopicPartitionReplica

from composition.pipeline import Pipeline
from kmedic.localcluster import ClusterSpec, LocalCluster, process

pytestmark = pytest.mark.integration

PARTITIONS = 6
VICTIM = 1


@pytest.fixture
def jbod_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    # Four brokers: a partition of replication factor 3 that lost a copy on broker 1 has a
    # broker outside its replica set to go to (racks /r1: 1, 3; /r2: 2, 4).
    spec = ClusterSpec(brokers=4, racks=("/r1", "/r2"), log_dirs=2)
    cluster = LocalCluster.start(spec, tmp_path / "jbod")
    try:
        yield cluster
    finally:
        cluster.stop()


def describe(bootstrap: str, topic: str) -> dict[int, dict[str, list[int]]]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (t,) = admin.describe_topics([topic])
    finally:
        admin.close()
    return {
        p["partition_index"]: {
            "replicas": list(p["replica_nodes"]),
            "isr": list(p["isr_nodes"]),
            "offline": list(p.get("offline_replicas") or []),
        }
        for p in t["partitions"]
    }


def on_disk(log_dir: Path, topic: str) -> set[int]:
    """The partitions of ``topic`` whose replica lives in ``log_dir`` (a replica being moved
    there is not yet: its directory has a ``-future`` suffix)."""
    pattern = re.compile(rf"{re.escape(topic)}-(\d+)")
    return {int(m.group(1)) for e in log_dir.iterdir() if (m := pattern.fullmatch(e.name))}


def test_replicas_on_a_failed_log_directory_are_healed_to_another_broker(
    jbod_cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster = jbod_cluster
    bootstrap = cluster.bootstrap_servers
    name = f"disk-{uuid.uuid4().hex[:6]}"
    topic = f"{name}.data"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    # Every partition on brokers 1 and 2: Kafka spreads broker 1's copies over its two
    # directories, and broker 3 (broker 1's rack) is the one to take the lost ones.
    create_placed_topic(bootstrap, topic, [[2, VICTIM]] * PARTITIONS)
    producer = Producer(kafka_conf(bootstrap, {"acks": "all"}))
    for n in range(PARTITIONS * 50):
        producer.produce(topic, b"x" * 1000, partition=n % PARTITIONS)
    assert producer.flush(30) == 0
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path / "roles", cluster_name=name)
    try:
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        pipeline.start_manager(
            interval_s=2,
            topics=topics,
            policy={"even_spread": False},
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_is_leader") == 1,
            timeout=60,
            what="the manager to lead",
        )
        # Broker 1's odd partitions go to its second directory, which then fails. (Not the
        # first: it holds the cluster metadata log, and losing that stops the broker.)
        dirs = cluster.log_dirs(VICTIM)
        lost = {p for p in range(PARTITIONS) if p % 2}
        kept = set(range(PARTITIONS)) - lost
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.alter_replica_log_dirs(
                {
                    TopicPartitionReplica(topic, p, VICTIM): str(dirs[1 if p in lost else 0])
                    for p in range(PARTITIONS)
                }
            )
        finally:
            admin.close()
        wait_for(
            lambda: on_disk(dirs[1], topic) == lost and on_disk(dirs[0], topic) == kept,
            timeout=60,
            what=f"partitions {sorted(lost)} of broker 1 in {dirs[1]}",
        )
        cluster.break_log_dir(VICTIM, 1)
        # Writes make Kafka touch the directory; the failure takes it offline. The manager
        # heals at once (no grace for a failed disk), so the offline state may be short.
        for n in range(PARTITIONS * 10):
            producer.produce(topic, b"y" * 1000, partition=n % PARTITIONS)
        producer.flush(10)
        assert VICTIM in {b for s in describe(bootstrap, topic).values() for b in s["isr"]}

        def healed() -> bool:
            pipeline.check_running()
            now = describe(bootstrap, topic)
            return all(
                now[p]["replicas"] == [2, 3] or now[p]["replicas"] == [3, 2] for p in lost
            ) and all(sorted(s["isr"]) == sorted(s["replicas"]) for s in now.values())

        wait_for(healed, timeout=120, interval=1, what="the offline replicas healed onto 3")
        after = describe(bootstrap, topic)
        # The copies in broker 1's healthy directory stayed where they were.
        assert all(VICTIM in after[p]["replicas"] for p in kept), after
        records = wait_for(
            lambda: [
                r
                for r in read_audit(bootstrap, topics["actions"])
                if r.kind == "decision" and r.summary.startswith("act: heal")
            ],
            timeout=30,
            what="the heal in the audit log",
        )
        assert "failed log directories on brokers 1" in records[0].summary
        # Exactly the copies in the failed directory moved, none from the healthy one.
        moved = {int(n.rsplit(":", 1)[1]) for n in records[0].partitions if n.startswith(topic)}
        assert moved == lost, (moved, lost)
        assert any(r.startswith("log_dir_failed:") for r in records[0].reasons)
        assert not any(r.startswith("unexplained_under_replication") for r in records[0].reasons)
        # A failed disk that kmedic heals pages nobody: the cycle that first sees the offline
        # replicas reads again and heals; none refuses, and no alert is raised.
        audit = read_audit(bootstrap, topics["actions"])
        refusals = [
            r.summary for r in audit if r.kind == "decision" and r.summary.startswith("refuse")
        ]
        assert not refusals, refusals
        assert not [r.summary for r in audit if r.kind == "alert_raised"]
    finally:
        pipeline.stop()
