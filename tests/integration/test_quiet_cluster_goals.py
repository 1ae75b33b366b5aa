"""The goals of a quiet cluster on the real cluster, with no broker over any limit: a topic
placed with both replicas in one rack is repaired (``repair_placement`` on), and a broker that
holds far fewer replicas than the others (as a broker just added does) is filled under the
shipped even-spread settings - and once all is well, the manager leaves it alone (no churn)."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import create_placed_topic, kafka_conf, read_audit, scrape, wait_for
from kafka import KafkaAdminClient

from composition.pipeline import Pipeline
from kmedic.kafka_client import client_settings
from kmedic.localcluster import process
from manager.analyzer.spread import SLACK
from manager.audit.log import AuditRecord
from manager.model.policy import Policy

pytestmark = pytest.mark.integration

EMPTY = 4  # the broker that gets none of the crowded topic
THRESHOLD = Policy().even_spread_threshold  # the shipped default


def placement(admin: AdminClient) -> dict[tuple[str, int], list[int]]:
    meta = admin.list_topics(timeout=10)
    return {
        (t, p.id): list(p.replicas)
        for t, topic in meta.topics.items()
        for p in topic.partitions.values()
    }


def counts(where: dict[tuple[str, int], list[int]], brokers: list[int]) -> Counter[int]:
    c: Counter[int] = Counter(dict.fromkeys(brokers, 0))
    c.update(b for replicas in where.values() for b in replicas)
    return c


def band(c: Counter[int]) -> tuple[float, float]:
    average = sum(c.values()) / len(c)
    return average / THRESHOLD - SLACK["replicas"], average * THRESHOLD + SLACK["replicas"]


def reassigning(bootstrap: str) -> bool:
    client = KafkaAdminClient(**client_settings(bootstrap).kafka_python())
    try:
        return bool(client.list_partition_reassignments())
    finally:
        client.close()


def test_a_misplaced_topic_is_repaired_an_empty_broker_filled_and_then_all_left_alone(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient(kafka_conf(bootstrap))
    brokers = sorted(cluster.broker_ids)
    racks = {n.id: n.rack for n in admin.describe_cluster().result(timeout=10).nodes}
    # Rack-distinct pairs among the other brokers: the crowded topic never touches EMPTY.
    others = [b for b in brokers if b != EMPTY]
    pairs = [(a, b) for a in others for b in others if a != b and racks[a] != racks[b]]
    assert pairs, f"no rack-distinct pair without broker {EMPTY}: {racks}"
    now = counts(placement(admin), brokers)
    # Enough partitions that EMPTY ends well below the band (4 replicas of margin).
    total, mine = sum(now.values()), now[EMPTY]
    k = max(8, math.ceil((THRESHOLD * (mine + SLACK["replicas"] + 4) * len(brokers) - total) / 2))
    name = f"even-{uuid.uuid4().hex[:6]}"
    topic = f"{name}.crowded"
    assignment = [list(pairs[i % len(pairs)]) for i in range(k)]
    # And a topic with both replicas of each partition in one rack, off EMPTY too.
    same = [(a, b) for a in others for b in others if a < b and racks[a] == racks[b]]
    assert same, f"no two brokers share a rack outside broker {EMPTY}: {racks}"
    misplaced = f"{name}.one-rack"
    create_placed_topic(bootstrap, topic, assignment)
    create_placed_topic(bootstrap, misplaced, [list(same[0]), list(same[0])])
    before = counts(placement(admin), brokers)
    low, _ = band(before)
    assert before[EMPTY] < low, (before, low)

    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    try:
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        pipeline.start_manager(
            interval_s=2,
            topics=topics,
            # No Spark job here: replica counts need no traffic figures. Repairs on; every
            # other policy, even spread among them, as shipped.
            policy={"min_valid_load_fraction": 0.0, "repair_placement": True},
            http={"port": port},
        )

        def repaired() -> list[AuditRecord]:
            pipeline.check_running()
            return [
                r
                for r in read_audit(bootstrap, topics["actions"])
                if r.kind == "decision" and r.summary.startswith("act: repair placement")
            ]

        fixes = wait_for(repaired, timeout=90, interval=2, what="a placement repair")
        # The session's other tests may have left misplaced partitions too: the reasons name up
        # to five; the placement checked below is the proof for this test's own.
        told = [r for r in fixes[0].reasons if r.startswith("placement_repair:")]
        named = [r for r in told if " more partitions repaired" not in r]
        assert named and all("share a rack" in r or "isolation" in r for r in named), told

        def evened() -> list[AuditRecord]:
            pipeline.check_running()
            return [
                r
                for r in read_audit(bootstrap, topics["actions"])
                if r.kind == "decision" and r.summary.startswith("act: even out an uneven cluster")
            ]

        acts = wait_for(evened, timeout=90, interval=2, what="an even-spread decision")
        assert any(r.startswith(f"uneven_spread: broker {EMPTY} at") for r in acts[0].reasons), (
            acts[0].reasons
        )

        def settled() -> bool:
            pipeline.check_running()
            return (
                scrape(port, "kmedic_moves_in_flight") == 0
                and scrape(port, "kmedic_last_decision", outcome="noop") == 1
                and not reassigning(bootstrap)
            )

        wait_for(settled, timeout=180, interval=2, what="the moves done and a noop after them")
        after = placement(admin)
        filled = counts(after, brokers)
        low, high = band(filled)
        assert filled[EMPTY] > before[EMPTY], (before, filled)
        assert all(low <= filled[b] <= high for b in brokers), (filled, low, high)
        for key in [(topic, p) for p in range(k)] + [(misplaced, 0), (misplaced, 1)]:
            assert len({racks[b] for b in after[key]}) == 2, (key, after[key])
        assert scrape(port, "kmedic_placement_violations") is not None

        # No churn: three more cycles decide noop and move nothing.
        noops = scrape(port, "kmedic_decisions_total", outcome="noop") or 0.0
        wait_for(
            lambda: (scrape(port, "kmedic_decisions_total", outcome="noop") or 0.0) >= noops + 3,
            timeout=60,
            what="three more noop cycles",
        )
        later = placement(admin)
        assert {key: later[key] for key in after} == after
        assert len(evened()) == len(acts), [r.summary for r in evened()]
    finally:
        pipeline.stop()
        admin.delete_topics([topic, misplaced])
