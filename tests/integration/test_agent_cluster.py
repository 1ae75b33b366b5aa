"""The agent against the real local cluster: accuracy of the traffic estimate, roles as the
Admin API sees them, failure records while a broker is SIGKILLed (and none from the agents of
the brokers still up), recovery after restart."""

from __future__ import annotations

import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from helpers import create_placed_topic, kafka_conf, wait_for
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition

from agent.config import AgentConfig
from agent.loop import Agent
from agent.sampler import Sampler
from kmedic import brokerstats as bs

pytestmark = pytest.mark.integration

INTERVAL_S = 2.0


def agent_config(cluster: Any, broker_id: int, **overrides: Any) -> AgentConfig:
    settings: dict[str, Any] = {
        "broker_id": broker_id,
        "bootstrap": cluster.bootstrap_servers,
        "exporter_url": cluster.exporter_url(broker_id),
        "cluster": "test",
        "interval_s": INTERVAL_S,
        "request_timeout_s": 3.0,
        "max_backoff_s": 4.0,
        "metrics_port": None,
        "topic_settings": {"partitions": 4, "replication_factor": 3},
        **overrides,
    }
    return AgentConfig.model_validate(settings)


class RunningAgent:
    """An Agent on its own thread, collecting every record it publishes."""

    def __init__(self, config: AgentConfig) -> None:
        self.records: list[tuple[float, bs.BrokerStats]] = []
        self._lock = threading.Lock()
        self.agent = Agent(config, on_record=self._keep)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.agent.run, args=(self._stop,), daemon=True)
        self._thread.start()

    def _keep(self, stats: bs.BrokerStats) -> None:
        with self._lock:
            self.records.append((time.monotonic(), stats))

    def since(self, t: float) -> list[bs.BrokerStats]:
        with self._lock:
            return [r for at, r in self.records if at >= t]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "agent thread did not stop"


@pytest.fixture
def run_agent() -> Iterator[Any]:
    started: list[RunningAgent] = []

    def start(config: AgentConfig) -> RunningAgent:
        agent = RunningAgent(config)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.stop()


class PacedProducer:
    """Produces to each partition at its own steady byte rate (1 KB messages)."""

    MESSAGE = 1000

    def __init__(self, cluster: Any, topic: str, rates: dict[int, float]) -> None:
        self.topic, self.rates = topic, rates
        self._producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "acks": 1}
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        start = time.monotonic()
        sent = dict.fromkeys(self.rates, 0)
        payload = b"x" * self.MESSAGE
        while not self._stop.is_set():
            elapsed = time.monotonic() - start
            for p, rate in self.rates.items():
                # Catch up to the schedule: the cumulative bytes follow the rate exactly.
                while sent[p] + self.MESSAGE <= rate * elapsed:
                    self._producer.produce(self.topic, payload, partition=p)
                    sent[p] += self.MESSAGE
            self._producer.poll(0)
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.flush(10)


def _appended(cluster: Any, topic: str, partitions: list[int]) -> dict[int, list[int]]:
    """Each partition's records as its broker appended them: the LogAppendTime (Unix ms) of
    every record, read back from the start to the end of the log."""
    consumer = Consumer(
        kafka_conf(
            cluster.bootstrap_servers,
            {"group.id": f"test-{uuid.uuid4().hex}", "enable.auto.commit": False},
        )
    )
    out: dict[int, list[int]] = {p: [] for p in partitions}
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        deadline = time.monotonic() + 60
        while any(len(out[p]) < ends[p] for p in partitions):
            assert time.monotonic() < deadline, (
                f"read back {[len(out[p]) for p in partitions]} of {ends} records"
            )
            for msg in consumer.consume(500, timeout=1.0):
                if msg.error() is None:
                    kind, ts = msg.timestamp()
                    assert kind == TIMESTAMP_LOG_APPEND_TIME
                    out[msg.partition()].append(ts)
    finally:
        consumer.close()
    return out


def test_per_partition_bytes_in_within_20_percent(healthy_cluster: Any, run_agent: Any) -> None:
    """The agent's per-partition bytes in and messages in, against what the broker appended in
    the same span (each record's LogAppendTime: Kafka's witness, not the producer's schedule,
    which on a loaded machine delivers in bunches late by seconds)."""
    cluster = healthy_cluster
    broker = cluster.broker_ids[0]
    topic = f"accuracy-{uuid.uuid4().hex[:8]}"
    create_placed_topic(
        cluster.bootstrap_servers,
        topic,
        [[broker], [broker], [broker]],
        configs={"message.timestamp.type": "LogAppendTime"},
    )
    rates = {0: 20_000.0, 1: 40_000.0, 2: 80_000.0}  # bytes/s of payload, 1:2:4
    producer = PacedProducer(cluster, topic, rates)
    try:
        agent = run_agent(agent_config(cluster, broker))
        warm = time.monotonic() + 2 * INTERVAL_S  # the first windows straddle the start
        wait_for(
            lambda: len([r for r in agent.since(warm) if r.rate_window_s]) >= 4,
            timeout=60,
            what="four samples with rates after warm-up",
        )
    finally:
        producer.stop()
    samples = [r for r in agent.since(warm) if r.rate_window_s][:4]
    appended_at = _appended(cluster, topic, list(rates))
    # The four windows are consecutive: from the first one's start to the last one's sample.
    assert samples[0].rate_window_s is not None
    span_from = samples[0].timestamp_ms - samples[0].rate_window_s * 1000
    span_to = samples[-1].timestamp_ms
    window_s = 0.0
    reported: dict[int, float] = dict.fromkeys(rates, 0.0)
    messages: dict[int, float] = dict.fromkeys(rates, 0.0)
    for rec in samples:
        assert rec.failure is None
        mine = {r.partition: r for r in rec.leaders if r.topic == topic}
        assert set(mine) == {0, 1, 2}
        assert rec.rate_window_s is not None
        window_s += rec.rate_window_s
        for p in rates:
            assert mine[p].estimate == "size_delta"
            reported[p] += mine[p].bytes_in_per_s * rec.rate_window_s
            messages[p] += mine[p].messages_in_per_s * rec.rate_window_s
    errors = []
    for p in rates:
        count = sum(1 for ts in appended_at[p] if span_from < ts <= span_to)
        assert count > 0, f"partition {p}: nothing appended in the samples' span"
        truth = count * PacedProducer.MESSAGE
        errors.append((reported[p] - truth) / truth)
        assert abs(reported[p] - truth) <= 0.2 * truth, (
            f"partition {p}: reported {reported[p] / window_s:.0f} B/s over {window_s:.2f} s, "
            f"the broker appended {truth / window_s:.0f} B/s of payload in that span "
            f"({count} records; the producer's schedule {rates[p]:.0f} B/s)"
        )
        assert abs(messages[p] - count) <= 0.2 * count, (
            f"partition {p}: reported {messages[p]:.0f} messages, the broker appended {count}"
        )
    print(f"bytes-in error per partition: {[f'{e:+.1%}' for e in errors]}")


def _admin_roles(cluster: Any, broker: int, topic: str) -> tuple[set[Any], set[Any], int]:
    """Leaders, followers (with leader and ISR membership) and under-replicated leaders of
    ``topic``, as confluent-kafka's metadata (a different client from the agent's) reports
    them."""
    md = AdminClient(kafka_conf(cluster.bootstrap_servers)).list_topics(topic, timeout=10)
    leaders, followers, under = set(), set(), 0
    for t in md.topics.values():
        for p in t.partitions.values():
            if p.leader == broker:
                leaders.add((t.topic, p.id))
                under += len(p.isrs) < len(p.replicas)
            elif broker in p.replicas:
                followers.add((t.topic, p.id, p.leader, broker in p.isrs))
    return leaders, followers, under


def _roles_match(
    sampler: Sampler, cluster: Any, broker: int, topic: str, *, with_isr: bool
) -> tuple[Any, Any] | None:
    """A sample and the Admin API's roles of ``topic``, if they match (a follower's ISR
    membership only ``with_isr``: between two Metadata reads the agent reports the last
    read's). The cluster is shared: other tests' topics may be anywhere in a move."""
    rec = sampler.sample()
    assert rec.failure is None, rec.failure
    leaders, followers, _ = _admin_roles(cluster, broker, topic)
    got_followers = {
        (r.topic, r.partition, r.leader_id, r.in_isr) for r in rec.followers if r.topic == topic
    }
    if not with_isr:
        followers = {f[:3] for f in followers}
        got_followers = {f[:3] for f in got_followers}
    expected = (leaders, followers)
    got = ({(r.topic, r.partition) for r in rec.leaders if r.topic == topic}, got_followers)
    return (rec, expected) if got == expected else None


def test_roles_equal_the_admin_api(healthy_cluster: Any) -> None:
    """The roles a sample reports equal the Admin API's: read with the cluster's Metadata
    every sample, and from the broker's gauges alone (the Metadata read once, at the start).
    Retried while they differ: metadata moves between the two reads, and a new follower's
    fetch-lag gauge (which names its leader) appears with its fetcher's first answer."""
    cluster = healthy_cluster
    topic = f"roles-{uuid.uuid4().hex[:8]}"
    create_placed_topic(
        cluster.bootstrap_servers, topic, [[1, 2, 3], [2, 3, 4], [3, 4, 1], [4, 1, 2]]
    )
    for broker in cluster.broker_ids:
        for check_s, read in ((0.0, "metadata every sample"), (3600.0, "the gauges")):
            sampler = Sampler(agent_config(cluster, broker, metadata_check_s=check_s))
            try:
                sampler.sample()  # the first sample reads the metadata whatever the period
                rec, expected = wait_for(
                    lambda: _roles_match(sampler, cluster, broker, topic, with_isr=check_s == 0.0),  # noqa: B023
                    timeout=20,
                    what=f"broker {broker}'s roles by {read}",
                )
            finally:
                sampler.close()
        assert expected[0] and expected[1], "the test topic gives every broker both roles"
        assert rec.rack == cluster.rack(broker)
        assert rec.totals.leader_count >= len(expected[0])
        assert rec.log_dirs and all(d.total_bytes and d.free_bytes for d in rec.log_dirs)
        # The local brokers listen on loopback: no link speed, and the agent says why.
        assert rec.nic is not None and rec.nic.interface == "lo", rec.nic
        assert rec.nic.speed_bytes_per_s is None
        assert rec.nic.note == "the broker listens on loopback"


def _published(cluster: Any, topic: str, broker: int, since_ms: int) -> list[bs.BrokerStats]:
    consumer = Consumer(
        kafka_conf(
            cluster.bootstrap_servers,
            {
                "group.id": f"test-{uuid.uuid4().hex}",
                "auto.offset.reset": "earliest",
            },
        )
    )
    consumer.subscribe([topic])
    out: list[bs.BrokerStats] = []
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                if out:
                    break
                continue
            if msg.error() or msg.key() != str(broker).encode() or bs.is_heartbeat(msg.value()):
                continue  # a heartbeat (a slow sample's gap) is no sample
            rec = bs.from_json(msg.value())
            if rec.timestamp_ms >= since_ms:
                out.append(rec)
    finally:
        consumer.close()
    return out


def _metric(url: str, name: str) -> float:
    with urllib.request.urlopen(url, timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(name):
                return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in {url}")


def test_sigkill_gives_failure_records_and_restart_recovers(
    healthy_cluster: Any, run_agent: Any
) -> None:
    cluster = healthy_cluster
    broker = cluster.broker_ids[-1]
    topic = f"kmedic.brokerstats.test-{uuid.uuid4().hex[:6]}"
    agent = run_agent(agent_config(cluster, broker, topic=topic))
    # The agents of the other brokers: a dead broker is not theirs to report (issue 25: for
    # about 10 s after a broker died, live brokers' agents published failed samples).
    others = {
        b: run_agent(agent_config(cluster, b, topic=topic))
        for b in cluster.broker_ids
        if b != broker
    }
    server = agent.agent.metrics.serve("127.0.0.1", 0)
    metrics_url = f"http://127.0.0.1:{server.port}/metrics"
    try:
        wait_for(
            lambda: any(r.failure is None for r in agent.since(0)),
            timeout=30,
            what="a healthy record",
        )
        started_ms = int(time.time() * 1000)
        killed_at = time.monotonic()
        cluster.kill(broker)
        failed = wait_for(
            lambda: [r for r in agent.since(killed_at) if r.failure is not None],
            timeout=30,
            what="a failure record",
        )
        first = failed[0]
        assert first.failure is not None
        assert first.failure.reason == "broker_unreachable", first.failure
        delay_s = first.timestamp_ms / 1000 - started_ms / 1000
        assert delay_s <= 2 * INTERVAL_S, f"first failure record {delay_s:.1f}s after the kill"
        print(f"first failure record {delay_s:.2f}s after the kill: {first.failure.message}")
        assert first.rack == cluster.rack(broker)
        # The process as the agent saw it: gone, neither its listener nor its exporter
        # answering, dated from the first sample that found it so (agent.process).
        assert first.process is not None and first.process.state == "not_running", first.process
        assert first.process.listening is False and first.process.down_since_ms is not None
        healthy = [r for r in agent.since(0) if r.failure is None]
        assert healthy[0].process is not None and healthy[0].process.state == "running"
        time.sleep(2 * INTERVAL_S)  # it keeps reporting while the broker is down
        assert len([r for r in agent.since(killed_at) if r.failure is not None]) >= 2
        # Well past the controller's fencing of the dead broker (broker session timeout).
        wait_for(
            lambda: (
                time.monotonic() - killed_at > 15
                and all(a.since(killed_at + 12) for a in others.values())
            ),
            timeout=60,
            what="the other agents' records for 15 s after the kill",
        )
        failed_elsewhere = {
            b: [r.failure.message for r in a.since(killed_at) if r.failure is not None]
            for b, a in others.items()
        }
        assert not any(failed_elsewhere.values()), failed_elsewhere
        restarted_at = time.monotonic()
        cluster.restart(broker)
        back = wait_for(
            lambda: [r for r in agent.since(restarted_at) if r.failure is None and r.rate_window_s],
            timeout=90,
            what="normal records with rates after the restart",
        )
        # Back: running again, one restart in its window.
        assert back[0].process is not None and back[0].process.state == "running"
        assert back[0].process.restarts == 1 and back[0].process.down_since_ms is None
        reasons = {
            r.failure.reason for r in _published(cluster, topic, broker, started_ms) if r.failure
        }
        assert "broker_unreachable" in reasons, "failure records did not reach the topic"
        assert (
            _metric(
                metrics_url,
                f'kmedic_agent_failures_total{{broker="{broker}",reason="broker_unreachable"}}',
            )
            >= 2
        )
        assert (
            _metric(metrics_url, "kmedic_agent_last_success_timestamp_seconds") * 1000 > started_ms
        )
    finally:
        server.stop()


def test_a_leader_change_shows_without_a_metadata_read(healthy_cluster: Any) -> None:
    """The agent's broker loses a partition's leadership between two samples; the second
    sample reads no Metadata (metadata_check_s far away) and still reports it as a follower of
    the new leader: the roles come from the broker's own gauges."""
    cluster = healthy_cluster
    mine, other = cluster.broker_ids[0], cluster.broker_ids[1]
    topic = f"leader-move-{uuid.uuid4().hex[:8]}"
    create_placed_topic(cluster.bootstrap_servers, topic, [[mine, other]])
    sampler = Sampler(agent_config(cluster, mine, metadata_check_s=3600.0))
    reads: list[bool] = []
    read = sampler.admin.read

    def counted(node: Any, *, metadata: bool) -> Any:
        reads.append(metadata)
        return read(node, metadata=metadata)

    sampler.admin.read = counted  # type: ignore[method-assign]
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        first = sampler.sample()
        assert (topic, 0) in {(r.topic, r.partition) for r in first.leaders}
        tp = KpTopicPartition(topic, 0)
        kadmin.alter_partition_reassignments({tp: [other, mine]})
        wait_for(
            lambda: not kadmin.list_partition_reassignments(),
            timeout=30,
            what="the reordering to finish",
        )
        wait_for(
            lambda: _preferred_leads(kadmin, tp, other),
            timeout=30,
            what=f"broker {other} to lead {topic}-0",
        )
        # Until the new fetcher's first answer the follower's leader is not known (-1).
        later = wait_for(
            lambda: [
                (r.leader_id, r.in_isr)
                for r in sampler.sample().followers
                if (r.topic, r.partition, r.leader_id) == (topic, 0, other)
            ],
            timeout=30,
            what=f"the agent to report {topic}-0 as a follower of broker {other}",
        )
        assert later == [(other, True)]
        assert reads[0] and not any(reads[1:]), reads
    finally:
        kadmin.close()
        sampler.close()


def _preferred_leads(kadmin: Any, tp: Any, preferred: int) -> bool:
    """Whether ``preferred`` leads ``tp``; if not, a preferred-leader election is asked."""
    for topic in kadmin.describe_topics([tp.topic]):
        for p in topic["partitions"]:
            if p["partition_index"] == tp.partition and p["leader_id"] == preferred:
                return True
    kadmin.elect_leaders(0, {tp.topic: [tp.partition]}, raise_errors=False)
    return False
