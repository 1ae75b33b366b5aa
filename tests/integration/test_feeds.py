"""The manager's topic tails on the real cluster: when a feed counts as caught up (what a fresh
manager waits for before its first decision)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import create_placed_topic, kafka_conf, wait_for

from manager.monitor.feeds import LatestByKey

pytestmark = pytest.mark.integration


def test_a_feed_is_caught_up_once_it_read_every_partition_to_its_end(
    healthy_cluster: Any,
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = f"feed-{uuid.uuid4().hex[:8]}"
    create_placed_topic(bootstrap, topic, [[1, 2], [2, 3], [3, 4]])
    producer = Producer(kafka_conf(bootstrap, {"acks": "all"}))
    for n in range(3000):
        key = n % 500  # each key on one partition, as a keyed producer places it
        producer.produce(topic, json.dumps({"n": n}).encode(), key=b"k%d" % key, partition=key % 3)
    assert producer.flush(30) == 0
    tail = LatestByKey(bootstrap, topic, json.loads).start()
    try:
        status = wait_for(
            lambda: (s := tail.status()).caught_up and s, timeout=60, what="the feed to catch up"
        )
        # Caught up means everything produced before was read, not merely that reading began.
        assert (status.records, status.keys, status.bad_records) == (3000, 500, 0)
        assert tail.values()[b"k499"] == {"n": 2999}
    finally:
        tail.stop()


def test_a_topic_that_does_not_exist_leaves_nothing_to_catch_up_on(healthy_cluster: Any) -> None:
    topic = f"feed-missing-{uuid.uuid4().hex[:8]}"
    tail = LatestByKey(healthy_cluster.bootstrap_servers, topic, json.loads).start()
    try:
        wait_for(
            lambda: tail.status().caught_up, timeout=30, what="a missing topic to count as read"
        )
        assert tail.status().records == 0
        known = Producer(kafka_conf(healthy_cluster.bootstrap_servers)).list_topics(timeout=10)
        assert topic not in known.topics  # the tail did not create it
    finally:
        tail.stop()
