"""The manager's topic tails on the real cluster: when a feed counts as caught up (what a fresh
manager waits for before its first decision)."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from typing import Any

import numpy as np
import pytest
from confluent_kafka import Producer
from helpers import create_placed_topic, kafka_conf, wait_for

from kmedic.replica_columns import TOPIC_IDS, partition_keys
from manager.monitor import feed_process
from manager.monitor.feed_pair import FeedSpec
from manager.monitor.feed_process import ProcessFeeds
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


def _agent_record(broker: int, ts: int, topic: str) -> bytes:
    """A healthy agent record of ``broker`` leading ``topic``'s partition ``broker``."""
    leader = {
        "topic": topic,
        "partition": broker,
        "bytes_in_per_s": 1000.0 * broker,
        "bytes_out_per_s": 0.0,
        "messages_in_per_s": 0.0,
        "log_size_bytes": 10 * broker,
        "log_start_offset": 0,
        "log_end_offset": 0,
        "estimate": "size_delta",
    }
    totals = dict.fromkeys(("bytes_in_per_s", "bytes_out_per_s", "messages_in_per_s"), 0.0)
    counts = ("leader_count", "follower_count", "reassigning_count", "under_replicated_count")
    record = {
        "schema_version": 1,
        "sample_id": f"s{broker}-{ts}",
        "chunk_index": 0,
        "chunk_count": 1,
        "cluster": "c",
        "broker_id": broker,
        "host": "h",
        "rack": "/r1",
        "timestamp_ms": ts,
        "interval_s": 60.0,
        "rate_window_s": 60.0,
        "agent_version": "0.1.0",
        "kafka_version": "4.1",
        "failure": None,
        "leaders": [leader],
        "followers": [],
        "reassigning": [],
        "log_dirs": [],
        "totals": totals | dict.fromkeys(counts, 0) | {"log_size_bytes": 0},
    }
    return json.dumps(record).encode()


def test_the_feed_process_hands_both_feeds_over_in_the_managers_topic_ids_and_is_replaced(
    healthy_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feeds as shipped (``feed_process: true``): a child process decodes them and the
    manager's copy joins by the manager's own topic ids (the child numbers topics in the order
    it meets them; the manager has met others first). A child killed is replaced, and until
    the new one answers the last copy stands and the status says why the feeds are not
    caught up; stopping leaves no process behind."""
    bootstrap = healthy_cluster.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    stats_topic, loads_topic, data = f"stats-{suffix}", f"loads-{suffix}", f"data-{suffix}"
    for topic in (stats_topic, loads_topic):
        create_placed_topic(bootstrap, topic, [[1, 2], [2, 3]])
    TOPIC_IDS.of([f"met-first-{suffix}-{n}" for n in range(3)])  # the ids differ between the two
    now = int(time.time() * 1000)
    producer = Producer(kafka_conf(bootstrap, {"acks": "all"}))
    for broker in (1, 2, 3):
        producer.produce(stats_topic, _agent_record(broker, now, data), key=b"%d" % broker)
    for partition in range(4):
        load = {"bytes_in_per_s": 500.0 + partition, "last_report_ms": now, "samples": 3}
        producer.produce(loads_topic, json.dumps(load).encode(), key=f"{data}:{partition}".encode())
    assert producer.flush(30) == 0
    monkeypatch.setattr(feed_process, "RESPAWN_EVERY_S", 0.0)
    feeds = ProcessFeeds(FeedSpec(bootstrap, stats_topic, loads_topic, 600.0)).start()
    first = feeds.pid
    assert first is not None
    try:
        wait_for(
            lambda: all(s.caught_up for s in feeds.status()), timeout=60, what="both feeds read"
        )
        copy = feeds.take()
        assert sorted(copy.agents) == [1, 2, 3]
        # Every thread at the manager's CPU priority: a decoding thread lowered holds the
        # child's interpreter lock, which the thread answering the cycle waits for.
        niceness = _thread_niceness(first)
        assert set(niceness.values()) == {os.getpriority(os.PRIO_PROCESS, 0)}, niceness
        assert sum(name.startswith("feed-") for name in niceness) == 2, niceness
        keys = partition_keys([data], np.zeros(4, dtype=np.int32), np.arange(4, dtype=np.int32))
        found, fields = copy.loads.at(keys)
        assert found.all() and fields["bytes_in"].tolist() == [500.0, 501.0, 502.0, 503.0]
        assert copy.agents[2].replicas.leader_key.tolist() == [keys[2]]
        assert copy.agents[2].replicas.leader_bytes_in.tolist() == [2000.0]

        os.kill(first, signal.SIGKILL)
        wait_for(lambda: _exited(first), timeout=10, what=f"the feed process {first} to die")
        assert feeds.take() is copy  # the last copy stands while no child answers
        status = feeds.status()
        assert not any(s.caught_up for s in status), status
        assert all("exited" in (s.last_error or "") for s in status), status
        wait_for(
            lambda: feeds.pid not in (None, first) and all(s.caught_up for s in feeds.status()),
            timeout=60,
            what="a new feed process to read both feeds",
        )
        again = feeds.take()
        assert sorted(again.agents) == [1, 2, 3] and len(again.loads) == 4
    finally:
        second = feeds.pid
        feeds.stop()
    assert second is not None and _exited(second)


def test_the_feed_process_ends_when_the_manager_is_gone(healthy_cluster: Any) -> None:
    """However the manager ends (SIGKILL included), the child's stdin closes and it exits."""
    spec = FeedSpec(healthy_cluster.bootstrap_servers, "absent-a", "absent-b", 60.0)
    feeds = ProcessFeeds(spec).start()
    child = feeds._child
    assert child is not None and child.stdin is not None
    wait_for(lambda: all(s.caught_up for s in feeds.status()), timeout=60, what="a first answer")
    child.stdin.close()  # what the kernel does to the pipe when the manager's process dies
    assert child.wait(timeout=20) == 0
    feeds.stop()


def _niceness(pid: int) -> int:
    return _niceness_of(f"/proc/{pid}/stat")


def _thread_niceness(pid: int) -> dict[str, int]:
    """Each of the process's threads' niceness, by name."""
    found = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/comm") as comm:
            found[comm.read().strip()] = _niceness_of(f"/proc/{pid}/task/{task}/stat")
    return found


def _niceness_of(path: str) -> int:
    with open(path) as stat:
        return int(stat.read().split(") ")[-1].split()[16])


def _exited(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie not yet reaped has exited too
        return stat.read().split(") ")[-1].startswith("Z")
