"""Observe mode entered in the middle of a heal, on a real cluster (issue 39.1): the move Kafka
runs is left to it and finishes, the plan's other moves are not started, the throttle kmedic
set stays until it acts again, and the cycles after the move judge the cluster as it is
(never "waiting for kmedic's own reassignments" for a move nothing steps). Back in act mode
the left move is adopted: its completion audited once, its throttle removed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]
from helpers import (
    create_placed_topic,
    kafka_conf,
    kmedic_process,
    read_audit,
    scrape,
    wait_for,
)

from composition.pipeline import Pipeline
from kmedic.localcluster import LocalCluster, process
from kmedic.localcluster.configs import ClusterSpec
from manager.audit.log import AuditRecord

pytestmark = pytest.mark.integration

VICTIM = 3
# The big partition's move takes ~25 s at this rate: room to switch the mode while it runs.
THROTTLE_BYTES_PER_S = 400_000
BIG_MB = 10
THROTTLED = "leader.replication.throttled.replicas"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    spec = ClusterSpec(brokers=4, racks=("/r1", "/r2"))
    started = LocalCluster.start(spec, Path(tmp_path_factory.mktemp("observe-mid-plan")))
    try:
        yield started
    finally:
        started.stop()


def fill(bootstrap: str, topic: str, megabytes: int) -> None:
    producer = Producer(kafka_conf(bootstrap, {"acks": "all", "linger.ms": 20}))
    payload = b"x" * 1024
    for i in range(megabytes * 1024):
        producer.produce(topic, value=payload)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def replicas_and_isr(bootstrap: str, topic: str) -> tuple[list[int], list[int]]:
    meta = AdminClient(kafka_conf(bootstrap)).list_topics(topic, timeout=10).topics[topic]
    p = meta.partitions[0]
    return list(p.replicas), list(p.isrs)


def throttled_replicas(bootstrap: str, topic: str) -> str:
    resource = ConfigResource("topic", topic)
    admin = AdminClient(kafka_conf(bootstrap))
    config = admin.describe_configs([resource])[resource].result(timeout=10)
    return str(config[THROTTLED].value or "")


def test_observe_mode_entered_mid_heal_leaves_the_move_to_kafka(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap_servers
    name = f"midplan-{uuid.uuid4().hex[:6]}"
    actions = f"kmedic.actions.{name}"
    big, small = f"{name}.big", f"{name}.small"
    create_placed_topic(bootstrap, big, [[VICTIM, 1]])
    create_placed_topic(bootstrap, small, [[VICTIM, 2]])
    fill(bootstrap, big, BIG_MB)
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    where = ["--zk", cluster.zk_connect, "--cluster", name]

    def records(kind: str) -> list[AuditRecord]:
        return [r for r in read_audit(bootstrap, actions) if r.kind == kind]

    def set_mode(mode: str) -> None:
        done = kmedic_process("mode", mode, "--why", "test", *where, timeout=60)
        assert done.returncode == 0, done.stderr

    try:
        pipeline.start_manager(
            interval_s=2,
            topics={"actions": actions},
            policy={
                "dead_grace_ms": 3000,
                "min_valid_load_fraction": 0.0,  # no Spark job here
                "even_spread": False,
            },
            # One move at a time, the largest first: the big partition runs, the rest wait.
            executor={
                "throttle_bytes_per_s": THROTTLE_BYTES_PER_S,
                "max_moves_in_flight": 1,
                "max_moves_per_broker": 1,
            },
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_is_leader") == 1,
            timeout=60,
            what="the manager to lead",
        )
        cluster.kill(VICTIM)
        started = wait_for(
            lambda: [r for r in records("action_started") if f"{big}:0" in r.partitions],
            timeout=90,
            interval=1,
            what=f"the heal to start moving {big}:0",
        )
        assert throttled_replicas(bootstrap, big), "the move runs throttled"
        set_mode("observe")
        left = wait_for(
            lambda: [r for r in records("decision") if "left to Kafka" in r.summary],
            timeout=30,
            interval=1,
            what="the manager to leave its running move to Kafka",
        )
        assert left[0].details["left_to_kafka"] == 1, left[0].summary
        assert left[0].partitions == (f"{big}:0",)
        assert replicas_and_isr(bootstrap, big)[0].count(VICTIM) == 1, "switched mid-move"

        def finished() -> bool:
            replicas, isr = replicas_and_isr(bootstrap, big)
            return VICTIM not in replicas and sorted(isr) == sorted(replicas)

        wait_for(finished, timeout=120, interval=1, what=f"Kafka to finish moving {big}:0")
        done_ms = max(r.time_ms for r in read_audit(bootstrap, actions))

        def decided_after() -> list[AuditRecord]:
            later = [r for r in records("decision") if r.time_ms > done_ms]
            later += [r for r in records("would_act") if r.time_ms > done_ms]
            return later if len(later) >= 3 else []

        later = wait_for(decided_after, timeout=60, interval=1, what="cycles after the move")
        stuck = [r.summary for r in later if "kmedic's own reassignments" in r.summary]
        assert not stuck, stuck
        # The small partition is still on the dead broker: decided, not carried out.
        assert any("would act (observe mode)" in r.summary for r in later), later
        assert [r for r in records("action_started") if r.time_ms > started[0].time_ms] == []
        assert VICTIM in replicas_and_isr(bootstrap, small)[0]
        assert throttled_replicas(bootstrap, big), "observe mode removed a throttle"

        set_mode("act")
        completed = wait_for(
            lambda: [r for r in records("action_completed") if f"{big}:0" in r.partitions],
            timeout=60,
            interval=1,
            what=f"the adopted move of {big}:0 audited as completed",
        )
        assert len(completed) == 1
        wait_for(
            lambda: not throttled_replicas(bootstrap, big),
            timeout=60,
            interval=1,
            what=f"the throttle on {big} removed once kmedic acts",
        )
        wait_for(
            lambda: (
                VICTIM not in replicas_and_isr(bootstrap, small)[0]
                and scrape(port, "kmedic_moves_in_flight") == 0
            ),
            timeout=120,
            interval=1,
            what="the rest of the heal, planned again",
        )
    finally:
        pipeline.stop()
