"""Issue 77 on the real cluster: a partition at RF 3 and min.insync.replicas 2 goes offline
with one out-of-sync replica standing (staged kills), and `kmedic recover` says what each way
out loses, refuses an act whose accepted loss is below its bound now, and elects the chosen
replica when the bound is typed back - auditing the intent before and the outcome after.

Kills three of the four shared brokers: the agents' and the audit's topics are placed on the
two that are alive at the end, so that they outlive the staging (the fixture revives the rest).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from helpers import create_placed_topic, kafka_conf, kmedic_process, read_audit, wait_for
from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from composition.pipeline import Pipeline
from kmedic.exits import Exit

pytestmark = pytest.mark.integration

LEADER, ELIGIBLE, STALE, SPARE = 1, 2, 3, 4
ACKED_ALL, BEHIND = 100, 150  # written while STALE followed; written after it stopped


def test_an_offline_partition_is_recovered_by_the_replica_typed_back(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    name = f"recover-{uuid.uuid4().hex[:6]}"
    topic = f"{name}.t"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    for kept in (topics["brokerstats"], topics["actions"]):
        create_placed_topic(bootstrap, kept, [[SPARE, STALE]], {"min.insync.replicas": "1"})
    create_placed_topic(bootstrap, topic, [[LEADER, ELIGIBLE, STALE]], {"min.insync.replicas": "2"})
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    config = tmp_path / "manager.yaml"
    config.write_text(yaml.safe_dump(pipeline.manager_config(topics=topics)))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        for broker in (LEADER, STALE):
            pipeline.start_agent(broker, interval_s=1, topic=topics["brokerstats"])
        _produce(bootstrap, topic, ACKED_ALL, acks="all")
        cluster.kill(STALE)
        wait_for(
            lambda: _isr(admin, topic) == [LEADER, ELIGIBLE], timeout=60, what="STALE out of sync"
        )
        cluster.kill(ELIGIBLE)
        wait_for(
            lambda: _isr(admin, topic) == [LEADER], timeout=60, what="the leader alone in sync"
        )
        _produce(bootstrap, topic, BEHIND, acks="1")
        written = ACKED_ALL + BEHIND
        wait_for(
            lambda: _sampled_end(bootstrap, topics["brokerstats"], topic, LEADER) == written,
            timeout=60,
            what=f"the leader's agent sampling its log end at {written}",
        )
        cluster.kill(LEADER)
        wait_for(lambda: _leader(admin, topic) == -1, timeout=60, what=f"{topic} offline")
        cluster.restart(STALE)
        wait_for(lambda: _leader(admin, topic) == -1, timeout=60, what=f"{topic} still offline")
        wait_for(
            lambda: _sampled_end(bootstrap, topics["brokerstats"], topic, STALE) == ACKED_ALL,
            timeout=60,
            what=f"broker {STALE}'s agent sampling its log end at {ACKED_ALL}",
        )

        dry = kmedic_process("recover", "--config", str(config), "--json", "--feeds-wait", "15")
        assert dry.returncode == 0, dry.stderr
        ways = json.loads(dry.stdout)[f"{topic}:0"]
        assert [w["way"] for w in ways] == [
            f"wait:{LEADER}",
            f"wait:{ELIGIBLE}",  # Kafka's eligible leader replica (KIP-966)
            f"elect:{STALE}",
            "recreate",
        ], ways
        bound = ways[2]["loses_at_most"]
        # STALE lacks the BEHIND records; the bound adds at most the leader's rate times the
        # second between its last sample and its death (never below the loss)
        assert BEHIND <= bound <= BEHIND + 1_000, ways[2]

        act = ["recover", "--config", str(config), "--partition", f"{topic}:0"]
        act += ["--way", f"elect:{STALE}", "--feeds-wait", "15"]
        short = kmedic_process(*act, "--accept-loss", str(BEHIND - 1))
        assert short.returncode == Exit.NOT_DONE, short
        assert "more than the 149 accepted" in short.stderr, short.stderr
        assert _leader(admin, topic) == -1  # refused: nothing elected

        done = kmedic_process(*act, "--accept-loss", str(bound + 1_000))
        assert done.returncode == 0, done.stderr
        assert f"is led by broker {STALE} after an unclean election" in done.stdout
        # measured by broker 3's agent: Kafka holds the high watermark back while the ISR (the
        # new leader alone) is under min.insync.replicas
        assert f"its log ends at offset {ACKED_ALL} (as broker {STALE}'s agent" in done.stdout
        assert _leader(admin, topic) == STALE
        said = [
            r
            for r in read_audit(bootstrap, topics["actions"])
            if r.instance.startswith("kmedic-recover:")
        ]
        assert [r.kind for r in said] == ["operator", "operator"], said
        assert "asked for the last resort" in said[0].summary
        assert said[0].details["estimate"]["way"] == f"elect:{STALE}"
        assert said[1].details["log_end"] == ACKED_ALL
    finally:
        pipeline.stop()
        admin.close()
    cluster.restart_many([b for b in (LEADER, ELIGIBLE) if not cluster.is_alive(b)])
    cleanup = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        cleanup.delete_topics([topic, topics["brokerstats"], topics["actions"]])
    finally:
        cleanup.close()


def _produce(bootstrap: str, topic: str, count: int, *, acks: str) -> None:
    producer = Producer(kafka_conf(bootstrap, {"acks": acks, "enable.idempotence": False}))
    failed: list[str] = []
    for n in range(count):
        producer.produce(
            topic,
            value=f"{acks}-{n}".encode(),
            partition=0,
            on_delivery=lambda err, _m: failed.append(str(err)) if err else None,
        )
    assert producer.flush(60) == 0 and not failed, failed[:3]


def _isr(admin: KafkaAdminClient, topic: str) -> list[int] | None:
    try:
        [described] = admin.describe_topics([topic])
    except KafkaError:
        return None
    return list(described["partitions"][0]["isr_nodes"])


def _leader(admin: KafkaAdminClient, topic: str) -> int | None:
    try:
        [described] = admin.describe_topics([topic])
    except KafkaError:
        return None
    return int(described["partitions"][0]["leader_id"])


def _sampled_end(bootstrap: str, stats_topic: str, topic: str, broker: int) -> int | None:
    """The newest log end ``broker``'s agent reported for ``topic``:0 (as leader or follower),
    read to the stats topic's end as it was when asked (its agents write on meanwhile)."""
    conf = {"group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    consumer = Consumer(kafka_conf(bootstrap, conf))
    newest: int | None = None
    try:
        parts = consumer.list_topics(stats_topic, timeout=10).topics[stats_topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(stats_topic, p), timeout=10)[1]
            for p in parts
        }
        consumer.assign([TopicPartition(stats_topic, p, OFFSET_BEGINNING) for p in parts])
        left = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + 30
        while left and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            if int(msg.offset() or 0) + 1 >= ends[int(msg.partition() or 0)]:
                left.discard(int(msg.partition() or 0))
            record = json.loads(msg.value() or b"{}")
            if record.get("broker_id") != broker:
                continue
            for entry in [*(record.get("leaders") or []), *(record.get("followers") or [])]:
                if entry["topic"] == topic and entry["partition"] == 0:
                    newest = int(entry["log_end_offset"])
    except KafkaException:
        return None
    finally:
        consumer.close()
    return newest
