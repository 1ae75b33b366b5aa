"""Helpers for the streaming integration tests: topics, producing, reading compacted output."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers import kafka_conf, wait_until_usable
from required_tools import skip_missing
from spark_helpers import connector_missing, shared_spark

from streaming import job, topics
from streaming.config import SparkConfig, StreamConfig, TopicsConfig, ValidationConfig


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The run's one local[2] SparkSession, with the Kafka connector."""
    if (missing := connector_missing()) is not None:
        skip_missing(f"Spark Kafka connector not bootstrapped: {missing}")
    yield shared_spark()
    # Stopped by whichever fixture module finishes last (stop is idempotent).


def unique(prefix: str) -> str:
    return f"{prefix}.{uuid.uuid4().hex[:8]}"


def stream_config(bootstrap: str, source: str, checkpoint: Path, **overrides: Any) -> StreamConfig:
    """A short-window config whose output topics are unique to one test."""
    tag = source.rsplit(".", 1)[-1]
    settings: dict[str, Any] = {
        "bootstrap": bootstrap,
        "topics": TopicsConfig(
            brokerstats=source,
            replica_loads=f"it.replica-loads.{tag}",
            broker_loads=f"it.broker-loads.{tag}",
            dlq=f"it.brokerstats.dlq.{tag}",
            partitions=3,
            replication_factor=2,
        ),
        "window": "30s",
        "slide": "10s",
        "watermark": "1m",
        "statistic": "max",
        "trigger_interval": "5s",
        "checkpoint_location": checkpoint,
        "validation": ValidationConfig(max_future_skew="10m"),
        "spark": SparkConfig(master="local[2]", shuffle_partitions=2, driver_memory="1g"),
        "metrics_port": None,
    }
    settings.update(overrides)
    return StreamConfig(**settings)


def ticks_start_ms(ticks: int) -> int:
    """The start of ``ticks`` 10-second ticks that end at the last whole 10 s before now."""
    return (int(time.time() * 1000) // 10_000) * 10_000 - ticks * 10_000


def run_in_process(spark_session: Any, cfg: StreamConfig) -> None:
    """The job in this process's Spark session, to the end of its input (``available_now``)."""
    topics.ensure_output_topics(cfg)
    job.await_queries(job.start_queries(spark_session, cfg))


def committed_batches(checkpoint: Path) -> int:
    """Micro-batches the loads query has committed in ``checkpoint``."""
    commits = checkpoint / job.CHECKPOINT_DIR / "commits"
    return len(list(commits.glob("[0-9]*"))) if commits.is_dir() else 0


def create_topic(bootstrap: str, topic: str, partitions: int = 3, replication: int = 2) -> None:
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(kafka_conf(bootstrap))
    futures = admin.create_topics([NewTopic(topic, partitions, replication)])
    futures[topic].result(timeout=30)
    wait_until_usable(bootstrap, [topic])


def produce(bootstrap: str, topic: str, pairs: Iterable[tuple[bytes | None, bytes | None]]) -> int:
    producer = Producer(kafka_conf(bootstrap, {"acks": "all", "linger.ms": 5}))
    count = 0
    for key, value in pairs:
        producer.produce(topic, key=key, value=value)
        count += 1
    assert producer.flush(30) == 0, f"records to {topic} not delivered"
    return count


def read_all(bootstrap: str, topic: str) -> list[Any]:
    """Every record of a topic, from the beginning up to its current end."""
    consumer = Consumer(
        kafka_conf(
            bootstrap,
            {
                "group.id": unique("it-reader"),
                "enable.auto.commit": False,
            },
        )
    )
    try:
        meta = consumer.list_topics(topic, timeout=15).topics[topic]
        ends: dict[int, int] = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        out: list[Any] = []
        done: set[int] = set()
        idle = 0
        while len(done) < len(ends) and idle < 20:
            msg = consumer.poll(0.5)
            if msg is None:
                idle += 1
                continue
            if msg.error():
                continue
            out.append(msg)
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        assert len(done) == len(ends), f"could not read {topic} to its end"
        return out
    finally:
        consumer.close()


def latest_per_key(bootstrap: str, topic: str) -> dict[str, dict[str, Any]]:
    """What a compacted topic converges to: the last value per key."""
    latest: dict[str, dict[str, Any]] = {}
    for msg in sorted(read_all(bootstrap, topic), key=lambda m: (m.partition(), m.offset())):
        latest[msg.key().decode()] = json.loads(msg.value())
    return latest


def topic_config(bootstrap: str, topic: str, name: str) -> str:
    from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]

    admin = AdminClient(kafka_conf(bootstrap))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    return str(entries[name].value)
