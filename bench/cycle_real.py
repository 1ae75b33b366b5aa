"""The whole cycle on the real local cluster, for bench/bench_cycle.py ``--real``.

Six KRaft brokers on three racks (one controller), topics of the fleet's mix of sizes
(bench/fleet.py) at RF 3 until there are ``partitions`` of them, placed by Kafka itself; then
one broker is SIGKILLed and, once the controller has fenced it, the manager's cycle runs
against the cluster's real Admin port exactly as against the fake one (bench_cycle.run_cycles,
in a child process so its peak RSS is the manager's own). The topics hold no data: the sizes
and loads the feeds would hold are made in memory, as in the fleet runs.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from fleet import MB, RACKS, TOPIC_SIZES, Fleet, Part

from kmedic.kafka_admin import connect_admin, describe_partitions
from kmedic.localcluster import ClusterSpec, LocalCluster
from kmedic.metadata import parse_nodes

BROKERS = 6
VICTIM = BROKERS
# Ten thousand replicas per broker: more heap than the tests' 384 MB, and a controller that
# holds the metadata of every partition.
SPEC = ClusterSpec(
    brokers=BROKERS,
    racks=RACKS,
    broker_heap_mb=1024,
    controller_heap_mb=512,
    broker_overrides={"log.segment.bytes": str(1024 * 1024)},
)
CREATE_BATCH = 50  # topics per CreateTopics request
READY_TIMEOUT_S = 600.0


def topic_sizes(partitions: int, seed: int = 29) -> list[int]:
    """Partition counts of the fleet's mix (bench/fleet.py) adding up to ``partitions``."""
    rng = random.Random(seed)
    pool = [n for n, weight in TOPIC_SIZES for _ in range(weight)]
    sizes: list[int] = []
    while sum(sizes) < partitions:
        sizes.append(min(rng.choice(pool), partitions - sum(sizes)))
    return sizes


class RealCluster:
    """The local cluster with the benchmark's topics, one broker killed."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.workdir = Path(tempfile.mkdtemp(prefix="kmedic-bench-cycle-"))
        self.cluster: LocalCluster | None = None
        self.setup_s: dict[str, float] = {}

    def __enter__(self) -> RealCluster:
        t0 = time.perf_counter()
        self.cluster = LocalCluster.start(SPEC, self.workdir / "cluster")
        t1 = time.perf_counter()
        self._create_topics()
        t2 = time.perf_counter()
        self._wait_until(lambda: self._led() >= self.partitions, "every partition led")
        t3 = time.perf_counter()
        self.cluster.kill(VICTIM)
        self._wait_until(lambda: VICTIM not in self._live(), f"broker {VICTIM} fenced")
        t4 = time.perf_counter()
        self.setup_s = {"start": t1 - t0, "create": t2 - t1, "led": t3 - t2, "fenced": t4 - t3}
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    @property
    def bootstrap(self) -> str:
        assert self.cluster is not None
        return self.cluster.bootstrap_servers

    def _create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        sizes = topic_sizes(self.partitions)
        topics = [NewTopic(f"svc-{t:05d}.events", n, 3) for t, n in enumerate(sizes)]
        for i in range(0, len(topics), CREATE_BATCH):
            for future in admin.create_topics(topics[i : i + CREATE_BATCH]).values():
                future.result(timeout=120)

    def _admin(self) -> Any:
        return connect_admin(self.bootstrap, client_id="kmedic-bench", timeout_ms=60_000)

    def _led(self) -> int:
        client = self._admin()
        try:
            parts = describe_partitions(client)
        finally:
            client.close()
        return sum(1 for p in parts if p.topic.startswith("svc-") and p.leader >= 0)

    def _live(self) -> set[int]:
        client = self._admin()
        try:
            return {b for b, n in parse_nodes(client.describe_cluster()).items() if not n.fenced}
        finally:
            client.close()

    def _wait_until(self, done: Any, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._ask(done):
            if time.monotonic() > deadline:
                raise TimeoutError(f"bench_cycle --real: not {what} in {READY_TIMEOUT_S:.0f} s")
            time.sleep(2)

    @staticmethod
    def _ask(done: Any) -> bool:
        """A check that could not ask (its client picked the killed broker) is not done yet."""
        try:
            return bool(done())
        except Exception:  # kafka-python raises several unrelated types
            return False


def fleet_of(bootstrap: str, seed: int = 29) -> Fleet:
    """The cluster as it is, as a Fleet: its brokers, racks and partitions (sizes made up)."""
    rng = random.Random(seed)
    client = connect_admin(bootstrap, client_id="kmedic-bench", timeout_ms=60_000)
    try:
        parts = describe_partitions(client)
    finally:
        client.close()
    brokers = tuple(range(1, BROKERS + 1))
    return Fleet(
        brokers=brokers,
        rack={b: SPEC.rack_of(b) for b in brokers},
        dead=VICTIM,
        parts=tuple(
            Part(p.topic, p.partition, p.replicas, p.isr, p.leader, rng.randint(1, 400) * MB)
            for p in parts
            if p.leader >= 0
        ),
        reassigning=(),
    )
