"""`kmedic demo`: the whole story on the embedded default, told as it happens.

A real local cluster comes up with traffic; an agent beside each broker publishes its stats;
the Spark job turns them into loads; the manager watches. A broker is SIGKILLed; the manager
waits out its grace period, heals onto the live brokers across racks, and every step lands in
the audit log, printed at the end. Everything it started is stopped before it exits, also on
failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from composition.demo_views import (
    AuditFollower,
    Story,
    describe,
    partitions_on,
    placement,
    topic_view,
    under_replicated,
    wait,
)
from composition.pipeline import Pipeline
from kmedic.brokerstats import BrokerStats, from_json, summarize
from kmedic.errors import KmedicError
from kmedic.exits import Exit
from kmedic.kafka_client import confluent_conf
from kmedic.localcluster import ClusterSpec, LocalCluster
from kmedic.traffic import PartitionRate, TrafficGenerator
from manager.audit.log import AuditRecord

VICTIM = 3
AGENT_INTERVAL_S = 2.0
GRACE_S = 15
CYCLE_S = 3


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
TOPIC_NAMES = {t.name for t in TOPICS}


def register(sub: Any) -> None:
    parser = sub.add_parser("demo", help="the whole story on a local cluster, told live")
    parser.add_argument(
        "--dir", type=Path, default=None, help="work directory (default: a new temporary one)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="after the story, leave the cluster, the agents, the Spark job and the manager "
        "running until Ctrl-C (then stop everything), to look at the status page and the "
        "metrics, or run kmedic's commands against it",
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
        paged = run_story(cluster, story, pipeline)
        if args.keep:
            keep_running(story, cluster, pipeline)
    finally:
        story.step("stop everything")
        pipeline.stop()
        cluster.stop()
        story.say(f"all processes stopped; logs stay in {workdir}")
    return demo_exit_code(paged)


def keep_running(story: Story, cluster: LocalCluster, pipeline: Pipeline) -> None:
    """Everything stays up until Ctrl-C or SIGTERM, with where to look said once more. Both
    signals are taken here (a shell that starts the demo in the background leaves SIGINT
    ignored), and the caller stops everything after."""
    stop = threading.Event()
    heard: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        heard.append(signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        story.step("keep everything running (--keep): Ctrl-C stops it")
        for line in addresses(cluster, pipeline):
            story.say(line)
        while not stop.wait(1.0):
            pipeline.check_running()
        story.say(f"{heard[0]}: stopping")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def addresses(cluster: LocalCluster, pipeline: Pipeline) -> list[str]:
    """Where a newcomer looks while the demo runs: the manager's page, API and metrics, kmedic's
    own commands against this cluster, Kafka's address."""
    port = pipeline.manager_port
    zk = f"--zk {cluster.zk_connect} --cluster {pipeline.cluster_name}"
    return [
        f"status page: http://127.0.0.1:{port}/status  (metrics: http://127.0.0.1:{port}/metrics)",
        f"HTTP API: http://127.0.0.1:{port}/api/v1/status  (its document: /api/v1/openapi.json)",
        f"from ZooKeeper: kmedic status {zk}",
        f"the audit log: kmedic actions tail --bootstrap {cluster.bootstrap_servers}",
    ]


# The demo's point is a heal that pages nobody: a page is its failure, not a line to skim.
PAGED_EXIT = Exit.NOT_DONE


def demo_exit_code(paged: list[AuditRecord]) -> int:
    """0 when nothing paged from the kill to the end, else ``PAGED_EXIT``."""
    return PAGED_EXIT if paged else 0


def run_story(cluster: LocalCluster, story: Story, pipeline: Pipeline) -> list[AuditRecord]:
    """The story; returns the alerts raised from the kill to the end (none, when it goes well)."""
    conf = confluent_conf(cluster.client, {"logger": logging.getLogger(f"{__name__}.rdkafka")})
    admin = AdminClient(conf)
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
    with TrafficGenerator(cluster.client, rates) as traffic:
        wait(lambda: traffic.sent_records > 200, 30, "traffic to flow")
        story.say(f"traffic flowing ({traffic.sent_records} records so far)")
        show_agents(cluster, story, pipeline)
        show_loads(cluster, story, pipeline)
        follower = start_manager(cluster, story, pipeline)
        killed_ms = heal(cluster, story, pipeline, admin, follower)
        paged = settle(story, pipeline, admin, follower, killed_ms)
        story.say(f"traffic: {traffic.sent_records} records sent, {traffic.failed_records} failed")
    story.step("the audit log (kmedic actions tail), decisions, actions and alerts in order")
    for kind, summary, repeats in collapse(follower.records):
        times = f"  (x{repeats}, one per cycle)" if repeats > 1 else ""
        story.say(f"  {kind:<17} {summary}{times}")
    if paged:
        story.say(f"the demo failed: {len(paged)} alerts raised after the kill (exit {PAGED_EXIT})")
    return paged


def show_agents(cluster: LocalCluster, story: Story, pipeline: Pipeline) -> None:
    story.step("start one collector agent beside each broker (kmedic agent, every 2 s)")
    pipeline.start_agents(interval_s=AGENT_INTERVAL_S)
    with topic_view(cluster, "kmedic.brokerstats", from_json) as stats:
        first_seen: dict[bytes, int] = {}

        def warmed_up() -> dict[bytes, BrokerStats]:
            pipeline.check_running()
            latest = stats.values()
            for key, sample in latest.items():
                first_seen.setdefault(key, sample.timestamp_ms)
            # A broker's rates are measured from its second sample on (the first has no
            # delta). Not "bytes in > 0": a broker that leads no partition with traffic
            # truly takes in nothing, and the demo once waited for it in vain.
            if len(latest) == len(cluster.broker_ids) and all(
                s.failure is None and s.timestamp_ms > first_seen[k] for k, s in latest.items()
            ):
                return latest
            return {}

        try:
            latest = wait(warmed_up, 90, "a sample with rates from every agent")
        except KmedicError as exc:
            bytes_in = {int(k): s.totals.bytes_in_per_s for k, s in stats.values().items()}
            raise KmedicError(
                f"{exc} ({describe(stats)}; bytes in/s by broker {bytes_in})"
            ) from exc
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

        try:
            latest = wait(every_broker, 300, "per-broker loads from the Spark job")
        except KmedicError as exc:
            raise KmedicError(f"{exc} ({describe(loads)})") from exc
        story.say("per-broker loads computed by the job (kmedic.broker-loads, 30 s window, max):")
        for key in sorted(latest, key=int):
            doc = latest[key]
            story.say(
                f"  broker {doc['broker_id']}: in {mb(doc['bytes_in_per_s'])} MB/s, "
                f"out {mb(doc['bytes_out_per_s'])} MB/s, "
                f"{doc['replicas_covered']} replicas covered"
            )


def start_manager(cluster: LocalCluster, story: Story, pipeline: Pipeline) -> AuditFollower:
    story.step(f"start the manager (kmedic manager: a cycle every {CYCLE_S} s, grace {GRACE_S} s)")
    follower = AuditFollower(cluster.client, int(time.time() * 1000))
    pipeline.start_manager(
        interval_s=CYCLE_S,
        policy={"dead_grace_ms": GRACE_S * 1000, "max_dead_brokers": 1},
        http={"port": pipeline.manager_port},
    )
    for line in addresses(cluster, pipeline):
        story.say(line)

    def confident() -> list[str]:
        pipeline.check_running()
        lines = follower.new_lines()
        for line in lines:
            story.say(f"  audit: {line}")
        return [r.summary for r in follower.records if r.summary.startswith("noop")]

    wait(confident, 180, "the manager to find the cluster healthy", interval=2)
    return follower


def heal(
    cluster: LocalCluster,
    story: Story,
    pipeline: Pipeline,
    admin: AdminClient,
    follower: AuditFollower,
) -> int:
    """Kill the victim and follow the heal of the demo topics; returns when it was killed."""
    hosted = partitions_on(admin, VICTIM, TOPIC_NAMES)
    story.step(f"SIGKILL broker {VICTIM}; it holds {len(hosted)} replicas of the demo topics")
    killed_ms = int(time.time() * 1000)
    cluster.kill(VICTIM)
    urps = wait(lambda: under_replicated(admin, TOPIC_NAMES), 60, "under-replicated partitions")
    story.say(f"the Admin API reports {len(urps)} under-replicated demo partitions")

    story.step("the manager waits out the grace period, then heals (following the audit log)")

    def healed() -> bool:
        pipeline.check_running()
        for line in follower.new_lines():
            story.say(f"  audit: {line}")
        return not partitions_on(admin, VICTIM, TOPIC_NAMES) and not under_replicated(
            admin, TOPIC_NAMES
        )

    wait(healed, 300, "the manager to heal every demo partition", interval=2)
    story.say(f"every demo partition is fully replicated on live brokers, none on broker {VICTIM}:")
    for line in placement(admin, TOPIC_NAMES):
        story.say(f"  {line}")
    return killed_ms


# Noop decisions after the last move before the story is over: the heal is really done.
QUIET_CYCLES = 2


def settle(
    story: Story,
    pipeline: Pipeline,
    admin: AdminClient,
    follower: AuditFollower,
    killed_ms: int,
) -> list[AuditRecord]:
    """Follow kmedic's whole plan - its own topics too - to its end, then quiet cycles, and
    say whether anything paged from the kill to the end (returned: the alerts raised)."""
    story.step(f"the rest of the plan (kmedic's own topics), then {QUIET_CYCLES} quiet cycles")

    def quiet() -> bool:
        pipeline.check_running()
        for line in follower.new_lines():
            story.say(f"  audit: {line}")
        return (
            plan_over(follower.records, QUIET_CYCLES)
            and not partitions_on(admin, VICTIM)
            and not under_replicated(admin)
        )

    wait(quiet, 300, f"every move done and {QUIET_CYCLES} quiet cycles", interval=CYCLE_S)
    moves = sum(1 for r in follower.records if r.kind == "action_completed")
    story.say(
        f"kmedic's plan is complete: {moves} moves, every partition of every topic fully "
        f"replicated, none on broker {VICTIM}; {QUIET_CYCLES} quiet cycles since"
    )
    raised = [r for r in follower.records if r.kind == "alert_raised" and r.time_ms >= killed_ms]
    if raised:
        story.say(
            f"PAGED: {len(raised)} alerts raised after the kill: "
            + "; ".join(r.summary for r in raised)
        )
    else:
        story.say("nothing paged: no alert was raised from the kill to the end")
    return raised


def plan_over(records: list[AuditRecord], quiet_cycles: int) -> bool:
    """Every move started has ended, and at least ``quiet_cycles`` noop decisions came after
    the last move's record."""
    started = sum(1 for r in records if r.kind == "action_started")
    ended = sum(1 for r in records if r.kind in ("action_completed", "action_failed"))
    moved = [i for i, r in enumerate(records) if r.kind.startswith("action_")]
    after = records[moved[-1] + 1 :] if moved else records
    noops = [r for r in after if r.kind == "decision" and r.summary.startswith("noop")]
    return started == ended and len(noops) >= quiet_cycles


def create_topics(admin: AdminClient, topics: tuple[DemoTopic, ...]) -> None:
    futures = admin.create_topics([NewTopic(t.name, t.partitions, t.replication) for t in topics])
    for name, future in futures.items():
        try:
            future.result(timeout=30)
        except Exception as exc:
            raise KmedicError(f"cannot create topic {name}: {exc}") from exc
    names = {t.name for t in topics}
    wait(lambda: names <= set(admin.list_topics(timeout=5).topics), 30, "topics in metadata")


def collapse(records: list[AuditRecord]) -> list[tuple[str, str, int]]:
    """Consecutive records with the same kind and summary as one line with a count."""
    out: list[tuple[str, str, int]] = []
    for r in records:
        if out and out[-1][:2] == (r.kind, r.summary):
            out[-1] = (r.kind, r.summary, out[-1][2] + 1)
        else:
            out.append((r.kind, r.summary, 1))
    return out


def mb(value: float | None) -> str:
    return "?" if value is None else f"{value / 1e6:.3f}"
