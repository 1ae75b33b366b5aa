"""The KRaft controller quorum on a cluster of its own (three voters, four brokers on two racks),
watched by a manager and a real Prometheus with the shipped rules: one controller killed is a
voter down (its alert pending; promtool tests when it fires) and a dead broker is still healed;
a second controller killed leaves no leader, and the manager refuses every move, saying so."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import create_placed_topic, kafka_conf, read_audit, scrape, wait_for
from prometheus_support import PrometheusServer

from composition.pipeline import Pipeline
from kmedic.kafka_admin import connect_admin
from kmedic.localcluster import ClusterSpec, LocalCluster, process

pytestmark = pytest.mark.integration

VICTIM = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    spec = ClusterSpec(brokers=4, controllers=3, racks=("/r1", "/r2"))
    started = LocalCluster.start(spec, tmp_path_factory.mktemp("quorum"))
    yield started
    started.stop()


def quorum_leader(bootstrap: str) -> int:
    admin = connect_admin(bootstrap, client_id="test-quorum", timeout_ms=5000)
    try:
        doc = admin.describe_metadata_quorum()
    finally:
        admin.close()
    return int(doc["topics"][0]["partitions"][0]["leader_id"])


def start_stopped_controllers(cluster: LocalCluster) -> None:
    """Leave the module's cluster with its whole quorum, whatever a test's end was."""
    for node_id in cluster.controller_ids:
        if not cluster.controller_running(node_id):
            cluster.restart_controller(node_id)


def healed(bootstrap: str, topic: str) -> bool:
    meta = AdminClient(kafka_conf(bootstrap)).list_topics(topic, timeout=10).topics[topic]
    return all(
        VICTIM not in p.replicas and sorted(p.isrs) == sorted(p.replicas)
        for p in meta.partitions.values()
    )


def test_a_short_spell_without_a_quorum_leader_is_refused_and_pages_nobody(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """The active controller and one more voter killed and started again seconds later (an
    election that takes a while): each cycle meanwhile refuses, and no alert is raised (it
    waits for the blind bound, 60 s, as the Prometheus rule waits its minute)."""
    bootstrap = cluster.bootstrap_servers
    name = f"quorum-{uuid.uuid4().hex[:6]}"
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    port = process.free_ports(1)[0]
    try:
        pipeline.start_agents(interval_s=2)
        pipeline.start_manager(
            interval_s=1,
            policy={"min_valid_load_fraction": 0.0, "even_spread": False},
            readiness={"enabled": False},
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_quorum_has_leader") == 1,
            timeout=60,
            what="the manager to read a led quorum",
        )
        # The audit topic is created by the manager's first record; without a quorum leader
        # no topic can be created, and the refusals would wait in the spool.
        wait_for(
            lambda: any(r.cluster == name for r in read_audit(bootstrap, "kmedic.actions")),
            timeout=60,
            what="the manager's first record in the audit topic",
        )
        leader = quorum_leader(bootstrap)
        other = next(c for c in cluster.controller_ids if c != leader)
        since_ms = int(time.time() * 1000)
        cluster.kill_controller(leader)
        cluster.kill_controller(other)

        def refusals() -> int:
            return sum(
                1
                for r in read_audit(bootstrap, "kmedic.actions")
                if r.time_ms >= since_ms
                and any(x.startswith("quorum_without_leader: ") for x in r.reasons)
            )

        wait_for(lambda: refusals() >= 2, timeout=60, interval=1, what="two cycles refused")
        cluster.restart_controller(leader)
        cluster.restart_controller(other)
        wait_for(
            lambda: scrape(port, "kmedic_quorum_has_leader") == 1,
            timeout=60,
            what="the quorum led again",
        )
        seen_at = scrape(port, "kmedic_last_cycle_timestamp_seconds") or 0.0
        wait_for(
            lambda: (scrape(port, "kmedic_last_cycle_timestamp_seconds") or 0.0) > seen_at,
            timeout=30,
            what="a cycle with the quorum led",
        )
        raised = [
            r.summary
            for r in read_audit(bootstrap, "kmedic.actions")
            if r.time_ms >= since_ms and r.kind == "alert_raised"
        ]
        assert raised == []
    finally:
        pipeline.stop()
        start_stopped_controllers(cluster)


def test_a_voter_down_is_told_and_a_quorum_without_leader_holds_every_move(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap_servers
    name = f"quorum-{uuid.uuid4().hex[:6]}"
    topic = f"{name}.rf2"
    create_placed_topic(bootstrap, topic, [[1, VICTIM], [VICTIM, 3], [2, 3]])
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    prometheus = PrometheusServer(tmp_path / "prometheus", [f"127.0.0.1:{port}"])
    try:
        pipeline.start_agents(interval_s=2)
        pipeline.start_manager(
            interval_s=2,
            policy={
                "dead_grace_ms": 3000,
                "min_valid_load_fraction": 0.0,  # no Spark job here
                "even_spread": False,
            },
            readiness={"enabled": False},
            http={"port": port},
        )
        prometheus.start()
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_quorum_has_leader") == 1,
            timeout=60,
            what="the manager to read a led quorum",
        )
        assert scrape(port, "kmedic_quorum_voters", state="up") == 3

        # One voter down (not the leader: no election to wait for).
        leader = quorum_leader(bootstrap)
        first, second = [c for c in cluster.controller_ids if c != leader]
        cluster.kill_controller(first)
        wait_for(
            lambda: scrape(port, "kmedic_quorum_voters", state="down") == 1,
            timeout=60,
            what=f"controller {first} counted down",
        )
        wait_for(
            lambda: prometheus.active("KmedicQuorumVoterDown", cluster=name),
            timeout=30,
            what="the voter-down alert pending",
        )
        assert not prometheus.active("KmedicQuorumNoLeader", cluster=name)
        # Heals still work with two voters of three.
        cluster.kill(VICTIM)
        wait_for(
            lambda: pipeline.check_running() or healed(bootstrap, topic),
            timeout=120,
            interval=1,
            what=f"{topic} healed off broker {VICTIM} with one controller down",
        )

        wait_for(
            lambda: any(
                r.summary.startswith("plan done in ")
                for r in read_audit(bootstrap, "kmedic.actions")
            ),
            timeout=60,
            what="the heal's plan done",
        )
        done_at = scrape(port, "kmedic_last_cycle_timestamp_seconds") or 0.0
        wait_for(
            lambda: (scrape(port, "kmedic_last_cycle_timestamp_seconds") or 0.0) > done_at,
            timeout=30,
            what="a cycle after the plan's end (its throttles removed)",
        )

        # No majority left: every move is held, and the manager says why, each cycle.
        cluster.kill_controller(second)
        since_ms = int(time.time() * 1000)
        wait_for(
            lambda: scrape(port, "kmedic_quorum_has_leader") == 0,
            timeout=60,
            what="the quorum seen without a leader",
        )

        def held() -> list[Any]:
            return [
                r
                for r in read_audit(bootstrap, "kmedic.actions")
                if r.time_ms >= since_ms
                and r.kind == "decision"
                and any(x.startswith("quorum_without_leader: ") for x in r.reasons)
            ]

        refused = wait_for(held, timeout=60, interval=1, what="a cycle refused for the quorum")
        assert refused[0].summary.startswith("refuse"), refused[0].summary
        assert "nothing can be committed, so no move starts" in " ".join(refused[0].reasons)
        later = [
            r
            for r in read_audit(bootstrap, "kmedic.actions")
            if r.time_ms >= since_ms and r.kind == "action_started"
        ]
        assert later == []
        wait_for(
            lambda: prometheus.active("KmedicQuorumNoLeader", cluster=name),
            timeout=30,
            what="the no-leader alert pending",
        )
        # The cycles go on (the reassignments, which cannot change, as last listed): the
        # cluster is not called unobservable, and refusals keep coming, each within seconds.
        assert scrape(port, "kmedic_cluster_observable") == 1
        assert not prometheus.active("KmedicClusterUnobservable", cluster=name)
        assert len(wait_for(lambda: len(held()) >= 3 and held(), timeout=60, what="3 cycles")) >= 3
    finally:
        prometheus.stop()
        pipeline.stop()  # the module's cluster, dead nodes and all, stops after the test
