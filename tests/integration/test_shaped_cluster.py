"""The shaped local cluster (kmedic/localcluster/netns.py): a network-bound cluster inside a
namespace of its own, each broker's link held to its rate, its agents reporting that rate as
their brokers' NIC speed, and nothing left behind: no namespace, no process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from helpers import kafka_conf, kmedic_process, wait_for
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from required_tools import skip_missing

from agent.config import AgentConfig
from agent.sampler import Sampler
from composition.pipeline import Pipeline
from kmedic.kafka_admin import (
    ReplicationTiming,
    describe_replica_sizes,
    describe_replication_timings,
)
from kmedic.localcluster import ClusterSpec, LocalCluster, netns

pytestmark = pytest.mark.integration

MBPS = 80  # 10 MB/s each way
LINK_BYTES_PER_S = MBPS * 1_000_000 / 8
MEGABYTES = 30


def needs_root_and_iproute2() -> None:
    if os.geteuid() != 0:
        skip_missing("the shaped cluster needs root (network namespaces, tc, iptables)")
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            skip_missing(f"the shaped cluster needs `{tool}` ({package})")


@pytest.fixture
def shaped(tmp_path: Path) -> Iterator[LocalCluster]:
    needs_root_and_iproute2()
    cluster = LocalCluster.start(
        ClusterSpec(brokers=2, racks=("/a", "/b"), nic_mbps=MBPS), tmp_path / "cluster"
    )
    yield cluster
    cluster.stop()  # again, if the test failed before its own


def test_a_copy_between_two_brokers_is_held_near_the_shaped_rate(
    shaped: LocalCluster, tmp_path: Path
) -> None:
    cluster = shaped
    namespace = cluster.namespace
    assert namespace is not None and namespace.name in netns.leftovers()
    try:
        with cluster.network():
            assert cluster.bootstrap_servers == "127.0.1.1:9092,127.0.1.2:9092"
            # Its agent reports the shaped rate as the broker's link speed.
            config = AgentConfig.model_validate(Pipeline(cluster, tmp_path).agent_config(2, 2.0))
            sampler = Sampler(config)
            try:
                nic = sampler.sample().nic
            finally:
                sampler.close()
            assert nic is not None and nic.speed_bytes_per_s == LINK_BYTES_PER_S, nic
            # Its brokers measure replication throttles over 1 s and retry a refused replica
            # fetch after 100 ms, as kmedic asks of operators.
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
            try:
                assert describe_replication_timings(admin, [1, 2]) == {
                    b: ReplicationTiming(
                        quota_window_s=1.0, fetch_backoff_ms=100, fetch_wait_ms=100
                    )
                    for b in (1, 2)
                }
            finally:
                admin.close()

            shaped_hosts = [cluster.broker(b).host for b in cluster.broker_ids]
            # What a broker serves its own host (the exporter page its agent scrapes) is not
            # on its link: on a real host it crosses loopback, not the NIC.
            quiet = namespace.link_bytes(shaped_hosts)["127.0.1.1"]
            page_bytes = sum(
                len(urllib.request.urlopen(cluster.exporter_url(1), timeout=10).read())
                for _ in range(5)
            )
            scraped = namespace.link_bytes(shaped_hosts)["127.0.1.1"]
            assert scraped[0] - quiet[0] < page_bytes / 4, (quiet, scraped, page_bytes)
            copied, seconds, before = _copy_seconds(
                cluster.bootstrap_servers, lambda: namespace.link_bytes(shaped_hosts)
            )
            after = namespace.link_bytes(shaped_hosts)
    finally:
        cluster.stop()
    # Each direction of each connection crosses the link of the broker that sends it and of
    # the one that receives it, never another: the producer's writes are broker 1's ingress
    # (not its egress, where the kernel's own choice of source address would put them), and
    # the copy broker 2 fetches is broker 1's egress and broker 2's ingress (not broker 1's
    # ingress, where the fetch connection broker 2 opens would otherwise be counted).
    size = MEGABYTES * 1024 * 1024
    (sent_1, received_1), (sent_2, received_2) = before["127.0.1.1"], before["127.0.1.2"]
    assert received_1 >= size and sent_1 < size / 10 and sent_2 + received_2 < size / 10, before
    copy = {a: (after[a][0] - before[a][0], after[a][1] - before[a][1]) for a in after}
    assert copy["127.0.1.1"][0] >= copied and copy["127.0.1.2"][1] >= copied, copy
    assert copy["127.0.1.1"][1] < copied / 10 and copy["127.0.1.2"][0] < copied / 10, copy
    rate = copied / seconds
    # Unshaped, this copy runs at hundreds of MB/s over loopback; shaped, near the link's rate
    # (the start of the move, and the fetch protocol's own pauses, take some of it).
    assert 0.5 * LINK_BYTES_PER_S <= rate <= 1.15 * LINK_BYTES_PER_S, (
        f"{copied / 1e6:.1f} MB copied in {seconds:.1f} s: {rate / 1e6:.1f} MB/s over a "
        f"{LINK_BYTES_PER_S / 1e6:.0f} MB/s link"
    )
    assert namespace.name not in netns.leftovers()
    assert not any(node["running"] for node in cluster.status())


def _copy_seconds(
    bootstrap: str, link_bytes: Callable[[], dict[str, tuple[int, int]]]
) -> tuple[int, float, dict[str, tuple[int, int]]]:
    """Bytes copied by adding a replica on broker 2 to a partition broker 1 holds alone, how
    long the reassignment took, and the brokers' link bytes before it (``link_bytes``)."""
    topic = "shaped.copy"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [1]})])
        producer = Producer(kafka_conf(bootstrap, {"acks": "1", "linger.ms": 20}))
        payload = b"x" * 1024
        for i in range(MEGABYTES * 1024):
            producer.produce(topic, value=payload, partition=0)
            if i % 1000 == 0:
                producer.poll(0)
        assert producer.flush(120) == 0
        size = describe_replica_sizes(admin, 1)[(topic, 0)]
        before = link_bytes()
        started = time.monotonic()
        admin.alter_partition_reassignments({TopicPartition(topic, 0): [1, 2]})
        wait_for(
            lambda: not admin.list_partition_reassignments(),
            timeout=120,
            interval=0.1,
            what="the copy to broker 2 to finish",
        )
        seconds = time.monotonic() - started
        assert describe_replica_sizes(admin, 2)[(topic, 0)] == size
        return size, seconds, before
    finally:
        admin.close()


def kmedic(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return kmedic_process(*args, timeout=180, cwd=cwd)


REACH = "import socket; socket.create_connection(('127.0.1.1', 9092), timeout=2).close()"


def test_the_cli_starts_a_shaped_cluster_reached_only_through_exec(tmp_path: Path) -> None:
    needs_root_and_iproute2()
    workdir = tmp_path / "cli-shaped"
    at = ("cluster", "--dir", str(workdir))
    bad = kmedic(*at, "up", "--nic-mbps", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "--nic-mbps: must be at least 10; 0 is not" in bad.stderr
    up = kmedic(*at, "up", "--broker-count", "1", "--racks", "/a", "--nic-mbps", "40", cwd=tmp_path)
    name = netns.name_for(workdir)
    try:
        assert up.returncode == 0, up.stderr
        assert "40 Mbit/s per broker link" in up.stdout and name in up.stdout
        assert "127.0.1.1:9092" in up.stdout
        inside = kmedic(*at, "exec", "--", sys.executable, "-c", REACH, cwd=tmp_path)
        assert inside.returncode == 0, inside.stderr
        outside = subprocess.run([sys.executable, "-c", REACH], capture_output=True, text=True)
        assert outside.returncode != 0  # this machine's loopback has no broker there
        empty = kmedic(*at, "exec", cwd=tmp_path)
        assert empty.returncode == 1 and "needs a command" in empty.stderr
    finally:
        down = kmedic(*at, "down", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert name not in netns.leftovers()
