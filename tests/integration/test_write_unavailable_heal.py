"""Issue 39.6 on the real cluster: a broker dies holding a replica of a partition at
min.insync.replicas 2 and RF 2, so acks=all writes to it fail. With a broker grace of ten
minutes and a short grace of 5 s, the manager heals that partition within seconds (audited as
restoring writes), leaves the broker's other replicas to wait for its grace, pages nobody, and
acks=all writes are accepted again once the new replica is in sync."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import create_placed_topic, http_get, kafka_conf, read_audit, scrape, wait_for

from composition.pipeline import Pipeline
from kmedic.localcluster import process
from manager.audit.log import AuditRecord

pytestmark = pytest.mark.integration

VICTIM = 3
SHORT_GRACE_MS = 5_000


def replicas(bootstrap: str, topic: str) -> dict[int, tuple[list[int], list[int]]]:
    meta = AdminClient(kafka_conf(bootstrap)).list_topics(topic, timeout=10).topics[topic]
    return {p.id: (list(p.replicas), list(p.isrs)) for p in meta.partitions.values()}


def acks_all_errors(bootstrap: str, topic: str, partitions: int) -> list[str]:
    """Produce one acks=all record to each partition: the errors Kafka answers with."""
    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        kafka_conf(
            bootstrap,
            {"acks": "all", "message.timeout.ms": 10_000, "retries": 0, "linger.ms": 0},
        )
    )
    for p in range(partitions):
        producer.produce(topic, b"after the heal", partition=p, on_delivery=delivered)
    left = producer.flush(20)
    return errors + [f"{left} undelivered"] * bool(left)


def test_a_write_unavailable_partition_heals_within_its_short_grace(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    name = f"writes-{uuid.uuid4().hex[:6]}"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    strict, relaxed = f"{name}.strict", f"{name}.relaxed"
    create_placed_topic(bootstrap, strict, [[VICTIM, 1], [2, VICTIM]], {"min.insync.replicas": "2"})
    create_placed_topic(bootstrap, relaxed, [[VICTIM, 4]], {"min.insync.replicas": "1"})
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)

    def audit(kind: str) -> list[AuditRecord]:
        return [r for r in read_audit(bootstrap, topics["actions"]) if r.kind == kind]

    try:
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        pipeline.start_manager(
            "m",
            instance_id="m",
            interval_s=2,
            topics=topics,
            policy={
                "dead_grace_ms": 600_000,
                "write_unavailable_grace_ms": SHORT_GRACE_MS,
                "min_valid_load_fraction": 0.0,  # no Spark job here
                "even_spread": False,  # the shared cluster is not this test's to even out
                "max_moves_per_cycle": 10_000,
                "max_moves_per_hour": 100_000,
            },
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_is_leader") == 1,
            timeout=60,
            what="the manager to lead",
        )
        killed_ms = int(time.time() * 1000)
        cluster.kill(VICTIM)

        acted = wait_for(
            lambda: [r for r in audit("decision") if r.summary.startswith("act: ")],
            timeout=90,
            interval=2,
            what="the write-unavailable partitions healed before the broker's grace",
        )[0]
        # (Other tests' topics on the shared cluster may be under their min.insync.replicas
        # with broker 3 gone too: only this test's partitions are asserted.)
        assert acted.summary.startswith("act: restore writes: "), acted.summary
        assert {f"{strict}:0", f"{strict}:1"} <= set(acted.partitions), acted.partitions
        assert f"{relaxed}:0" not in acted.partitions
        assert any("writes_unavailable" in r for r in acted.reasons), acted.reasons
        # Within the short grace (and the cycles it takes to see the broker dead), not the
        # broker's ten minutes.
        assert acted.time_ms - killed_ms < SHORT_GRACE_MS + 40_000, acted.time_ms - killed_ms
        # The decision is audited before its moves start: their records follow.
        started = wait_for(
            lambda: (
                (s := {p for r in audit("action_started") for p in r.partitions})
                >= {f"{strict}:0", f"{strict}:1"}
                and s
            ),
            timeout=30,
            interval=1,
            what="the moves of the strict partitions started",
        )
        assert f"{relaxed}:0" not in started

        def healed() -> bool:
            pipeline.check_running()
            return all(
                VICTIM not in reps and sorted(isr) == sorted(reps)
                for reps, isr in replicas(bootstrap, strict).values()
            )

        wait_for(healed, timeout=120, interval=2, what=f"{strict} healed off broker {VICTIM}")
        assert acks_all_errors(bootstrap, strict, 2) == []
        # The broker's other replica waits for its grace: a wait, no page.
        assert VICTIM in replicas(bootstrap, relaxed)[0][0]
        waiting = wait_for(
            lambda: [
                r
                for r in audit("decision")
                if r.time_ms > acted.time_ms and r.summary.startswith("wait: ")
            ],
            timeout=60,
            interval=2,
            what="the rest to wait for the broker's grace",
        )
        assert "600 s grace period" in waiting[-1].summary, waiting[-1].summary
        status, _, body = http_get(f"http://127.0.0.1:{port}/status.json")
        assert status == 200 and json.loads(body)["active_alerts"] == {}
        assert scrape(port, "kmedic_refusing_to_heal") == 0
    finally:
        pipeline.stop()
