"""A slow broker on the real cluster (issue 28, item 1): its JVM stopped for 300 ms of every
second, it stays registered and in the ISR while every request it serves waits. Its agent's
probes show it; the leading manager demotes it (leadership off, no data moved), and once the
duty cycle stops and it has recovered for ``recover_ms``, its share of leadership returns.
A partition only it holds stays led there, without a refusal. No alert is raised on the way,
and no replica set changes. (The shared cluster may hold other tests' topics: the demotion is
judged on this test's own topic.)"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import (
    active_alerts,
    create_placed_topic,
    kafka_conf,
    read_audit,
    scrape,
    wait_for,
)

from composition.pipeline import Pipeline
from kmedic.localcluster import LocalCluster, process

pytestmark = pytest.mark.integration

VICTIM = 3
# Stopped long enough to stand out from its peers on a loaded machine: a sample is slow only
# above 3x the other brokers' median, and under CI's second lane their probes' p90 reached
# 100-150 ms, over a third of a 0.3 s stop (never scored slow in 120 s, CI).
STOPPED_S, PERIOD_S = 0.6, 1.2


@contextmanager
def duty_cycle(cluster: LocalCluster, broker: int) -> Iterator[None]:
    """SIGSTOP ``broker`` for STOPPED_S of every PERIOD_S until the block ends (then SIGCONT)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            cluster.pause(broker)
            try:
                stop.wait(STOPPED_S)
            finally:
                cluster.resume(broker)
            stop.wait(PERIOD_S - STOPPED_S)

    thread = threading.Thread(target=run, name="duty-cycle", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        cluster.resume(broker)


def placement(admin: AdminClient) -> dict[tuple[str, int], tuple[frozenset[int], int]]:
    """Every partition's replica set and leader."""
    meta = admin.list_topics(timeout=10)
    return {
        (name, p.id): (frozenset(p.replicas), p.leader)
        for name, t in meta.topics.items()
        for p in t.partitions.values()
    }


def led_by(admin: AdminClient, broker: int, topic: str | None = None) -> int:
    """Partitions ``broker`` leads (of ``topic``, or of every topic)."""
    return sum(
        leader == broker
        for (name, _), (_, leader) in placement(admin).items()
        if topic is None or name == topic
    )


def test_a_slow_broker_is_demoted_and_its_leadership_returns(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient(kafka_conf(bootstrap))
    name = f"slow-{uuid.uuid4().hex[:6]}"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    ids = list(cluster.broker_ids)
    # Each broker leads two partitions, each followed on the other rack.
    spread = [[b, c] for b in ids for c in ids if cluster.rack(b) != cluster.rack(c)]
    topic = f"{name}.spread"
    create_placed_topic(bootstrap, topic, spread)
    # And one partition only the victim holds: no follower can lead it, so it stays led there
    # (told, not refused) while the rest moves.
    create_placed_topic(bootstrap, f"{name}.single", [[VICTIM]])
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    try:
        # A sample every 2 s: about six probes each, so most of them catch a stop.
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        pipeline.start_manager(
            interval_s=2,
            topics=topics,
            policy={
                "min_valid_load_fraction": 0.0,  # no Spark job here
                "even_spread": False,
                "slow_brokers": {
                    "floor_ms": 80.0,  # a loaded test machine's healthy probes stay under it
                    "slow_score": 3.0,
                    "max_score": 3.0,  # back to 0 in six normal samples
                    "min_history": 3,
                    "recover_ms": 4000,
                },
            },
            http={"port": port},
        )
        wait_for(
            lambda: (
                pipeline.check_running()
                or all(
                    scrape(port, "kmedic_broker_slowness_score", broker=str(b)) == 0 for b in ids
                )
            ),
            timeout=90,
            what="the leading manager scoring every broker",
        )
        before = placement(admin)
        assert led_by(admin, VICTIM, topic) > 0
        started_ms = int(time.time() * 1000)
        with duty_cycle(cluster, VICTIM):
            # Every partition of the topic has an in-sync follower on the other rack. (What
            # earlier tests left on the shared cluster may not: an RF-1 topic stays led.)
            wait_for(
                lambda: pipeline.check_running() or led_by(admin, VICTIM, topic) == 0,
                timeout=120,
                interval=1,
                what=f"broker {VICTIM} demoted while it is slow",
            )
            assert scrape(port, "kmedic_slow_brokers", state="slow") == 1
        demoted = placement(admin)
        kept = led_by(admin, VICTIM)  # the leaderships no in-sync follower could take
        assert led_by(admin, VICTIM, f"{name}.single") == 1
        records = read_audit(bootstrap, topics["actions"])
        said = [r.summary for r in records if r.time_ms >= started_ms]
        assert any(s.startswith(f"broker {VICTIM} is slow (") for s in said), said
        assert any(f"demote slow brokers [{VICTIM}]" in s for s in said), said

        wait_for(
            lambda: pipeline.check_running() or led_by(admin, VICTIM) > kept,
            timeout=120,
            interval=1,
            what=f"broker {VICTIM}'s leadership back once it has recovered",
        )
        after = placement(admin)
        records = read_audit(bootstrap, topics["actions"])
        said = [r.summary for r in records if r.time_ms >= started_ms]
        assert any(f"broker {VICTIM} has recovered:" in s for s in said), said
        # No data moved: every partition kept its replica set, through both steps.
        for tp, (replicas, _) in before.items():
            assert demoted[tp][0] == replicas and after[tp][0] == replicas, tp
        assert len(before) == len(after)
        assert active_alerts(port) == {}
        assert scrape(port, "kmedic_cluster_slow") == 0
    finally:
        pipeline.stop()
