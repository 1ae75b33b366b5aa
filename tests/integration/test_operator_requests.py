"""Operator requests carried out on the real cluster by a manager process: `kmedic demote`
moves leadership off a broker, `kmedic drain --wait` empties it, `kmedic fill --wait` brings
load back onto it; each request ends `done`, in the audit log and in `requests list`."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import kafka_conf, read_audit, scrape, wait_for

from composition.pipeline import Pipeline
from kmedic.localcluster import process

pytestmark = pytest.mark.integration

TARGET = 4


def kmedic(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "composition.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def on_target(admin: AdminClient) -> tuple[int, int]:
    """(replicas on TARGET, partitions it leads), over every topic."""
    meta = admin.list_topics(timeout=10)
    parts = [p for t in meta.topics.values() for p in t.partitions.values()]
    return sum(TARGET in p.replicas for p in parts), sum(p.leader == TARGET for p in parts)


def test_demote_drain_and_fill_a_broker(healthy_cluster: Any, tmp_path: Path) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient(kafka_conf(bootstrap))
    name = f"requests-{uuid.uuid4().hex[:6]}"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    where = ["--zk", cluster.zk_connect, "--cluster", name]
    try:
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        pipeline.start_manager(
            interval_s=2,
            topics=topics,
            # No Spark job: a fill needs loads to pass its gate, and none are measured here.
            policy={"min_valid_load_fraction": 0.0, "even_spread": False},
            executor={"max_moves_per_broker": 10, "max_moves_in_flight": 30},
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_is_leader") == 1,
            timeout=60,
            what="the manager to lead",
        )
        held, led = on_target(admin)
        assert held and led, f"broker {TARGET} holds {held} replicas and leads {led}"

        done = kmedic("demote", str(TARGET), "--wait", "120", *where)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "is done" in done.stdout.splitlines()[-1], done.stdout
        assert on_target(admin)[1] == 0

        done = kmedic("drain", str(TARGET), "--wait", "240", *where)
        assert done.returncode == 0, done.stdout + done.stderr
        assert on_target(admin)[0] == 0

        done = kmedic("fill", str(TARGET), "--wait", "240", *where)
        assert done.returncode == 0, done.stdout + done.stderr
        assert on_target(admin)[0] > 0

        listed = kmedic("requests", "list", *where)
        states = [line.rsplit(" is ", 1)[1].split(":")[0] for line in listed.stdout.splitlines()]
        assert states == ["done", "done", "done"], listed.stdout
        told = [r.summary for r in read_audit(bootstrap, topics["actions"])]
        for kind in ("demote", "drain", "fill"):
            assert any(f"({kind} brokers {TARGET}) is running" in s for s in told), told
            assert any(f"({kind} brokers {TARGET}) is done" in s for s in told), told
    finally:
        pipeline.stop()
