"""`kmedic demo`: the story on the embedded default, told as it happens.

A real local cluster comes up, traffic flows, a broker is SIGKILLed, the damage is visible
through the Admin API, the broker comes back and the cluster recovers. Everything it starts is
stopped before it exits, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kmedic.brokerstats import BrokerStats, from_json, summarize
from kmedic.errors import KmedicError
from kmedic.localcluster import ClusterSpec, LocalCluster
from kmedic.pipeline import Pipeline
from kmedic.traffic import PartitionRate, TrafficGenerator
from manager.feeds import LatestByKey

VICTIM = 3
AGENT_INTERVAL_S = 2.0
T = TypeVar("T")


@dataclass(frozen=True)
class DemoTopic:
    name: str
    partitions: int
    replication: int
    bytes_per_s: float


TOPICS = (
    DemoTopic("demo.orders", 6, 3, 60_000),
    DemoTopic("demo.clicks", 4, 2, 20_000),
)


class Story:
    """Prints numbered steps and events with the seconds since the demo began."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._step = 0

    def step(self, text: str) -> None:
        self._step += 1
        print(f"\n[{self._elapsed()}] Step {self._step}: {text}", flush=True)

    def say(self, text: str) -> None:
        print(f"[{self._elapsed()}]   {text}", flush=True)

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self._t0:6.1f}s"


def register(sub: Any) -> None:
    parser = sub.add_parser("demo", help="the whole story on a local cluster, told live")
    parser.add_argument(
        "--dir", type=Path, default=None, help="work directory (default: a new temporary one)"
    )
    parser.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="kmedic-demo-"))
    # The story is the output; component logs below WARNING would drown it.
    if args.log_level.upper() == "INFO":
        logging.getLogger().setLevel(logging.WARNING)
    story = Story()
    story.step(
        f"start a real cluster: ZooKeeper, a KRaft controller, 4 brokers on 2 racks ({workdir})"
    )
    cluster = LocalCluster.start(ClusterSpec(brokers=4, racks=("/r1", "/r2")), workdir / "cluster")
    pipeline = Pipeline(cluster, workdir / "roles", cluster_name="demo")
    try:
        for broker_id in cluster.broker_ids:
            story.say(f"broker {broker_id} up on rack {cluster.rack(broker_id)}")
        run_story(cluster, story, pipeline)
    finally:
        story.step("stop everything")
        pipeline.stop()
        cluster.stop()
        story.say("cluster stopped; no process left behind")
    return 0


def run_story(cluster: LocalCluster, story: Story, pipeline: Pipeline) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    story.step("create topics and start steady traffic")
    create_topics(admin, TOPICS)
    rates = [
        PartitionRate(t.name, p, t.bytes_per_s / t.partitions)
        for t in TOPICS
        for p in range(t.partitions)
    ]
    for t in TOPICS:
        story.say(
            f"{t.name}: {t.partitions} partitions, RF {t.replication}, "
            f"{t.bytes_per_s / 1000:.0f} kB/s"
        )
    with TrafficGenerator(cluster.bootstrap_servers, rates) as traffic:
        wait(lambda: traffic.sent_records > 200, 30, "traffic to flow")
        story.say(f"traffic flowing ({traffic.sent_records} records so far)")
        show_agents(cluster, story, pipeline)
        show_loads(cluster, story, pipeline)

        hosted = partitions_on(admin, VICTIM)
        story.step(f"SIGKILL broker {VICTIM} (it hosts {len(hosted)} replicas)")
        cluster.kill(VICTIM)
        urps = wait(lambda: under_replicated(admin), 60, "under-replicated partitions")
        story.say(f"the Admin API reports {len(urps)} under-replicated partitions:")
        for line in urps:
            story.say(f"  {line}")

        story.step(f"restart broker {VICTIM} with its data")
        cluster.restart(VICTIM)
        wait(lambda: not under_replicated(admin), 120, "every ISR to be full again")
        story.say("every partition is fully replicated again")
        story.say(f"traffic: {traffic.sent_records} records sent, {traffic.failed_records} failed")


def create_topics(admin: AdminClient, topics: tuple[DemoTopic, ...]) -> None:
    futures = admin.create_topics([NewTopic(t.name, t.partitions, t.replication) for t in topics])
    for name, future in futures.items():
        try:
            future.result(timeout=30)
        except Exception as exc:
            raise KmedicError(f"cannot create topic {name}: {exc}") from exc
    names = {t.name for t in topics}
    wait(lambda: names <= set(admin.list_topics(timeout=5).topics), 30, "topics in metadata")


def partitions_on(admin: AdminClient, broker_id: int) -> list[str]:
    meta = admin.list_topics(timeout=10)
    return [
        f"{t}:{p.id}"
        for t, tm in meta.topics.items()
        for p in tm.partitions.values()
        if broker_id in p.replicas
    ]


def under_replicated(admin: AdminClient) -> list[str]:
    """One readable line per partition whose ISR is smaller than its replica set."""
    meta = admin.list_topics(timeout=10)
    lines = []
    for topic in sorted(meta.topics):
        for p in sorted(meta.topics[topic].partitions.values(), key=lambda p: p.id):
            if len(p.isrs) < len(p.replicas):
                lines.append(
                    f"{topic}:{p.id} replicas {list(p.replicas)} "
                    f"isr {list(p.isrs)} leader {p.leader}"
                )
    return lines


def wait(check: Callable[[], T], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    raise KmedicError(f"demo: timed out after {timeout:.0f}s waiting for {what}")


def show_agents(cluster: LocalCluster, story: Story, pipeline: Pipeline) -> None:
    story.step("start one collector agent beside each broker (kmedic agent, every 2 s)")
    pipeline.start_agents(interval_s=AGENT_INTERVAL_S)
    with topic_view(cluster, "kmedic.brokerstats", from_json) as stats:

        def warmed_up() -> dict[bytes, BrokerStats]:
            pipeline.check_running()
            latest = stats.values()
            # The second sample of each broker carries rates (the first has no delta).
            if len(latest) == len(cluster.broker_ids) and all(
                s.totals.bytes_in_per_s > 0 for s in latest.values()
            ):
                return latest
            return {}

        latest = wait(warmed_up, 90, "a sample with rates from every agent")
        story.say("what each agent publishes to kmedic.brokerstats:")
        for key in sorted(latest, key=int):
            story.say(f"  {summarize(latest[key])}")


def show_loads(cluster: LocalCluster, story: Story, pipeline: Pipeline) -> None:
    story.step("start the Spark Structured Streaming job (kmedic stream, local[2])")
    pipeline.start_stream()
    with topic_view(cluster, "kmedic.broker-loads", json.loads) as loads:

        def every_broker() -> dict[bytes, Any]:
            pipeline.check_running()
            latest = loads.values()
            return latest if len(latest) >= len(cluster.broker_ids) else {}

        latest = wait(every_broker, 240, "per-broker loads from the Spark job")
        story.say("per-broker loads computed by the job (kmedic.broker-loads, 30 s window, max):")
        for key in sorted(latest, key=int):
            doc = latest[key]
            story.say(
                f"  broker {doc['broker_id']}: in {mb(doc['bytes_in_per_s'])} MB/s, "
                f"out {mb(doc['bytes_out_per_s'])} MB/s, "
                f"{doc['replicas_covered']} replicas covered"
            )


def mb(value: float | None) -> str:
    return "?" if value is None else f"{value / 1e6:.3f}"


@contextmanager
def topic_view(
    cluster: LocalCluster, topic: str, decode: Callable[[bytes], T]
) -> Iterator[LatestByKey[T]]:
    view = LatestByKey(cluster.bootstrap_servers, topic, decode, client_id="kmedic-demo").start()
    try:
        yield view
    finally:
        view.stop()
