"""The streaming job on the real cluster fed by real agents: every live replica has a load
within three triggers, and known produce rates show in the loads within 20 %."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from helpers import kafka_conf, wait_for
from streaming_support import (
    create_topic,
    latest_per_key,
    read_all,
    spark,
    stream_config,
    topic_config,
    unique,
)

from agent.config import AgentConfig
from agent.loop import Agent
from kmedic.traffic import PartitionRate, TrafficGenerator
from streaming import job, topics

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the fixture, imported for pytest

AGENT_INTERVAL_S = 3.0
TRIGGER_S = 5
# Known, unequal produce rates (bytes/s) per partition of the traffic topic.
RATES = (20_000.0, 40_000.0, 60_000.0, 80_000.0)


@pytest.fixture
def agents(local_cluster: Any) -> Iterator[Any]:
    """Start one real agent per broker publishing to a given topic; stop them after."""
    running: list[tuple[threading.Event, threading.Thread]] = []

    def start(stats_topic: str) -> None:
        for broker_id in local_cluster.broker_ids:
            config = AgentConfig(
                broker_id=broker_id,
                bootstrap=local_cluster.bootstrap_servers,
                exporter_url=local_cluster.exporter_url(broker_id),
                cluster="it",
                interval_s=AGENT_INTERVAL_S,
                topic=stats_topic,
                metrics_port=None,
                request_timeout_s=5.0,
            )
            stop = threading.Event()
            thread = threading.Thread(target=Agent(config).run, args=(stop,), daemon=True)
            thread.start()
            running.append((stop, thread))

    yield start
    for stop, _ in running:
        stop.set()
    for _, thread in running:
        thread.join(timeout=30)


def _live_replicas(bootstrap: str, names: set[str]) -> set[tuple[str, int]]:
    """(topic:partition, broker id) for every replica of ``names`` on a live broker."""
    meta = AdminClient(kafka_conf(bootstrap)).list_topics(timeout=15)
    live = set(meta.brokers)
    return {
        (f"{name}:{pid}", broker)
        for name in names
        for pid, part in meta.topics[name].partitions.items()
        for broker in part.replicas
        if broker in live
    }


def _progress(query: Any) -> list[dict[str, Any]]:
    return [json.loads(p.json) if hasattr(p, "json") else dict(p) for p in query.recentProgress]


def _batch_of(write_ms: int, progress: list[dict[str, Any]]) -> int:
    """The micro-batch that was running when a record was written (progress timestamps are
    the batch start times)."""
    return max(int(p["batchId"]) for p in progress if _start_ms(p) <= write_ms)


def _start_ms(progress: dict[str, Any]) -> int:
    """When a micro-batch started, in epoch milliseconds."""
    started = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00"))
    return int(started.timestamp() * 1000)


def test_agents_to_loads_on_the_real_cluster(
    local_cluster: Any, spark: Any, agents: Any, tmp_path: Path
) -> None:
    bootstrap = local_cluster.bootstrap_servers
    traffic_topic = unique("it.traffic")
    create_topic(bootstrap, traffic_topic, partitions=len(RATES), replication=2)
    stats_topic = unique("it.brokerstats")
    create_topic(bootstrap, stats_topic, partitions=3, replication=2)
    rates = [PartitionRate(traffic_topic, p, r) for p, r in enumerate(RATES)]
    cfg = stream_config(
        bootstrap,
        stats_topic,
        tmp_path / "checkpoint",
        statistic="p50",
        trigger_interval=f"{TRIGGER_S}s",
        watermark="30s",
    )
    with TrafficGenerator(bootstrap, rates):
        agents(stats_topic)
        # Every agent has published before the job starts, so its first trigger has input.
        wait_for(
            lambda: (
                {m.key() for m in read_all(bootstrap, stats_topic)}
                >= {str(b).encode() for b in local_cluster.broker_ids}
            ),
            timeout=60,
            what="a record from every agent",
        )
        topics.ensure_output_topics(cfg)
        assert topic_config(bootstrap, cfg.topics.replica_loads, "cleanup.policy") == "compact"
        queries = job.start_queries(spark, cfg)
        try:
            loads_query = next(q for q in queries if q.name == job.LOADS_QUERY)
            _check_coverage(bootstrap, cfg, loads_query, traffic_topic)
            _check_rates(bootstrap, cfg, traffic_topic, local_cluster)
            assert all(q.isActive for q in queries), "a query stopped"
        finally:
            job.stop_queries(queries)
    assert read_all(bootstrap, cfg.topics.dlq) == [], "agents' records went to the DLQ"


def _check_coverage(bootstrap: str, cfg: Any, loads_query: Any, traffic_topic: str) -> None:
    """Every live replica has a load within the first three triggers that had input."""
    # Replicas of the topics the agents see: the traffic topic and the stats topic itself.
    names = {traffic_topic, cfg.topics.brokerstats}
    wanted = _live_replicas(bootstrap, names)

    def covered() -> set[tuple[str, int]]:
        got: set[tuple[str, int]] = set()
        for key, value in latest_per_key(bootstrap, cfg.topics.replica_loads).items():
            got |= {(key, r["broker_id"]) for r in value["replicas"]}
        return got

    wait_for(lambda: covered() >= wanted, timeout=180, what="a load for every live replica")
    first_write: dict[str, int] = {}
    for msg in read_all(bootstrap, cfg.topics.replica_loads):
        key = msg.key().decode()
        first_write[key] = min(first_write.get(key, msg.timestamp()[1]), msg.timestamp()[1])
    # A batch's progress is recorded after its sink wrote, so wait until a later batch has
    # started: then every batch that wrote these records is in the progress list.
    last_write = max(first_write.values())

    def progress_after_writes() -> list[dict[str, Any]] | None:
        progress = _progress(loads_query)
        return progress if any(_start_ms(p) > last_write for p in progress) else None

    progress = wait_for(
        progress_after_writes, timeout=60, what="progress of the batches that wrote the loads"
    )
    first_with_input = min(int(p["batchId"]) for p in progress if p["numInputRows"] > 0)
    needed = {key for key, _ in wanted}
    last_needed = max(_batch_of(first_write[k], progress) for k in needed)
    print(f"every live replica covered in batch {last_needed}, first input in {first_with_input}")
    assert last_needed - first_with_input <= 2, (
        f"all replicas covered only in batch {last_needed}, first input in {first_with_input}"
    )


def _check_rates(bootstrap: str, cfg: Any, traffic_topic: str, cluster: Any) -> None:
    """The median of per-interval rates over the window is within 20 % of the produce rate,
    for each partition (as leader) and summed per broker."""

    def errors() -> dict[str, float] | None:
        replica = latest_per_key(bootstrap, cfg.topics.replica_loads)
        out: dict[str, float] = {}
        for p, rate in enumerate(RATES):
            value = replica.get(f"{traffic_topic}:{p}")
            if value is None or value["samples"] < 3 or value["bytes_in_per_s"] is None:
                return None
            out[f"{traffic_topic}:{p}"] = value["bytes_in_per_s"] / rate - 1
        return out

    deadline = time.monotonic() + 120
    last: dict[str, float] = {}
    while True:
        last = errors() or {}
        if last and all(abs(e) <= 0.20 for e in last.values()):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"partition loads not within 20 % of {RATES}: relative errors {last}")
        time.sleep(2)
    print("partition rate errors (p50 over the window):", {k: f"{e:+.1%}" for k, e in last.items()})
    brokers = latest_per_key(bootstrap, cfg.topics.broker_loads)
    assert set(brokers) == {str(b) for b in cluster.broker_ids}
    for value in brokers.values():
        assert value["replicas_covered"] > 0
        assert value["failure_reason"] is None
        assert value["last_report_ms"] > 0
