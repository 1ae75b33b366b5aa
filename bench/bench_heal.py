"""The heal race: seconds from a broker's SIGKILL to every partition fully replicated again,
on a real local cluster, and kmedic's plan beside the one Kafka's own
`kafka-reassign-partitions --generate` proposes for the same broker list.

Scenario: 6 brokers on 3 racks (2 per rack); one topic of 32 partitions at RF 3, one replica
per rack; ``--produce-mb`` of records produced before the race (512 MB by default: 1.5 GB on
the cluster's disks), and 2 MB/s of steady traffic throughout. kmedic runs as in production:
an agent per broker and the manager as processes (no Spark job: a heal does not wait for
loads), grace 15 s, kmedic's move limits (5 per broker, 10 in flight), kmedic's shipped
intervals and brokers at Kafka's defaults unless told otherwise (bench/as_shipped.py: every
departure named in the table's header), completions polled every 0.5 s. Each run kills
broker 6, times the kill to

- fenced: the broker gone from the metadata's broker list (the controller's session timeout);
- first move: the first ``action_started`` record in the audit log;
- fully replicated: every partition of every topic back to its replica count, all in sync,
  none on the dead broker;

then restarts the broker, puts every partition back where it was and waits until all are in
sync. Three runs without a replication throttle, three with 50 MB/s; medians reported.

Bytes moved are counted from the moves' replica lists and the partitions' sizes on disk (their
``.log`` segments, read before the kill); the lower bound is the dead broker's own replicas.
Prints the figures and replaces the ``## heal`` section of docs/bench.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import as_shipped
from bench_docs import write_section
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kafka.structs import TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from composition.pipeline import Pipeline
from kmedic.kafka_admin import describe_replica_sizes
from kmedic.localcluster import ClusterSpec, LocalCluster, process
from kmedic.paths import jvm_jars
from manager.audit.kafka_reader import read_records
from manager.audit.log import AuditRecord

TOPIC = "bench.heal"
PARTITIONS = 32
RF = 3
VICTIM = 6
RACKS = ("/r1", "/r2", "/r3")
GRACE_MS = 15_000
THROTTLE = 50_000_000
TRAFFIC_BYTES_PER_S = 2_000_000
RECORD = 10_000

T = TypeVar("T")
Placement = dict[tuple[str, int], list[int]]


def wait(check: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except KafkaException:  # a request that went to the broker just killed: ask again
            value = None
        if value:
            return value
        time.sleep(interval)
    raise SystemExit(f"bench_heal: timed out after {timeout:.0f}s waiting for {what}")


def scrape(port: int, name: str, **labels: str) -> float | None:
    import urllib.request

    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    except OSError:
        return None
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def _sized(snapshot: Path) -> bool:
    try:
        snap = json.loads(snapshot.read_text())
    except (OSError, ValueError):
        return False
    stats = all(b.get("last_stats_ms") for b in snap["brokers"])
    topic = next((t for t in snap.get("topics", []) if t["name"] == TOPIC), None)
    return stats and topic is not None and all(p.get("size_bytes") for p in topic["partitions"])


@dataclass
class Run:
    throttle: int | str | None
    fenced_s: float
    first_move_s: float
    replicated_s: float
    kmedic_bytes: int
    kmedic_topic_bytes: int
    lower_bound: int
    off_victim_moves: int
    rack_violations: int
    killed_at: float = 0.0  # wall clock (s)
    rate_records: list[str] = field(default_factory=list)  # the adaptive throttle's changes


def start_kmedic(
    pipeline: Pipeline,
    name: str,
    port: int,
    policy: dict[str, Any],
    throttle: int | str | None,
    capacity: dict[str, float] | None = None,
    executor: dict[str, Any] | None = None,
    agent_interval_s: float = as_shipped.AGENT_INTERVAL_S,
    manager_interval_s: float = as_shipped.MANAGER_INTERVAL_S,
) -> None:
    """Agents (every ``agent_interval_s``) and a manager (a cycle every
    ``manager_interval_s``; both as shipped by default; topics of the run's own, the executor
    polling every 0.5 s, ``executor`` settings besides) of one run, and the manager leading."""
    pipeline.start_agents(interval_s=agent_interval_s, topic=f"kmedic.brokerstats.{name}")
    pipeline.start_manager(
        interval_s=manager_interval_s,
        topics={
            "brokerstats": f"kmedic.brokerstats.{name}",
            "replica_loads": f"kmedic.replica-loads.{name}",
            "broker_loads": f"kmedic.broker-loads.{name}",
            "actions": f"kmedic.actions.{name}",
        },
        policy=policy,
        executor={"throttle_bytes_per_s": throttle, "poll_interval_s": 0.5} | (executor or {}),
        http={"port": port},
        capacity=capacity or {},
    )
    wait(lambda: scrape(port, "kmedic_is_leader") == 1, 120, "the manager to lead")


class Race:
    def __init__(
        self,
        workdir: Path,
        produce_mb: int,
        grace_ms: int = GRACE_MS,
        nic_mbps: int | None = None,
        broker_overrides: dict[str, str] | None = None,
        fill_batch_bytes: int = 1_000_000,
        controller_overrides: dict[str, str] | None = None,
        executor: dict[str, Any] | None = None,
        agent_interval_s: float = as_shipped.AGENT_INTERVAL_S,
        server_jvms: bool = False,
        manager_interval_s: float = as_shipped.MANAGER_INTERVAL_S,
        kafka_defaults: bool = True,
        admin_config: dict[str, str | int] | None = None,
    ) -> None:
        """With ``nic_mbps`` the cluster is network-bound (docs/local-cluster.md): this
        thread, its clients and the kmedic processes it starts run in the cluster's
        namespace until ``stop``. ``executor``: the manager's executor settings besides the
        bench's own (its defaults otherwise), in every run; ``agent_interval_s``: the agents'
        sampling interval (their busy interval, while their broker moves data, stays the
        shipped one where it is shorter); ``server_jvms``: the Kafka nodes' JVMs as Kafka's
        launcher starts them (ClusterSpec.server_jvms), where the clients' latency is measured;
        ``admin_config``: the bench's own admin client's settings besides its bootstrap."""
        self.workdir = workdir
        self.executor = executor or {}
        self.agent_interval_s = agent_interval_s
        self.manager_interval_s = manager_interval_s
        self.produce_mb = produce_mb
        self.grace_ms = grace_ms
        self.fill_batch_bytes = fill_batch_bytes
        spec = ClusterSpec(
            brokers=6,
            racks=RACKS,
            nic_mbps=nic_mbps,
            broker_overrides=broker_overrides or {},
            controller_overrides=controller_overrides or {},
            server_jvms=server_jvms,
            kafka_defaults=kafka_defaults,
        )
        self.cluster = LocalCluster.start(spec, workdir / "cluster")
        self._network = contextlib.ExitStack()
        self._network.enter_context(self.cluster.network())
        self.bootstrap = self.cluster.bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap, **(admin_config or {})})
        self.kadmin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        self.rack = {b: spec.rack_of(b) for b in spec.broker_ids}
        self.stop_traffic = threading.Event()

    # ---- cluster ------------------------------------------------------------------------

    def placement(self) -> Placement:
        meta = self.admin.list_topics(timeout=10)
        return {
            (name, p.id): list(p.replicas)
            for name, t in meta.topics.items()
            for p in t.partitions.values()
        }

    def in_sync(self, rf: dict[tuple[str, int], int], without: int | None) -> bool:
        meta = self.admin.list_topics(timeout=10)
        for name, t in meta.topics.items():
            for p in t.partitions.values():
                want = rf.get((name, p.id))
                if want is None:
                    continue
                if len(p.replicas) != want or sorted(p.isrs) != sorted(p.replicas):
                    return False
                if without is not None and without in p.replicas:
                    return False
        return True

    def leads(self, broker: int) -> set[tuple[str, int]]:
        """The partitions ``broker`` leads now."""
        meta = self.admin.list_topics(timeout=10)
        return {
            (name, p.id)
            for name, t in meta.topics.items()
            for p in t.partitions.values()
            if p.leader == broker
        }

    def fenced(self, broker: int) -> bool:
        return broker not in self.admin.list_topics(timeout=10).brokers

    def sizes(self) -> dict[tuple[str, int], int]:
        """Each partition's bytes, its largest replica's, as the live brokers report them
        (DescribeLogDirs, as kmedic reads them): a walk of the data directories failed when
        Kafka deleted a moved replica's directory under it."""
        out: dict[tuple[str, int], int] = {}
        for broker in self.cluster.broker_ids:
            if not self.cluster.is_alive(broker):
                continue
            for key, size in self.replica_sizes(broker).items():
                out[key] = max(out.get(key, 0), size)
        return out

    def replica_sizes(self, broker: int) -> dict[tuple[str, int], int]:
        """``broker``'s replica sizes, read again until it answers: a broker restarted by the
        last put-back runs before the admin client's metadata names it (a run crashed on
        ``UnknownBrokerIdError: 6``), and a read asks for that metadata again."""

        def read() -> tuple[dict[tuple[str, int], int]] | None:
            try:
                return (describe_replica_sizes(self.kadmin, broker),)
            except KafkaError:
                self.kadmin._manager.cluster.request_update()
                return None

        answer = wait(read, 60, f"broker {broker}'s replica sizes", interval=0.5)
        assert answer is not None  # wait returns an answer or exits
        return answer[0]

    def answered(self, call: Callable[[], T], what: str) -> T:
        """``call`` on the admin client, asked again until it answers: the broker restarted
        by a put-back may be the one the client's metadata names as the controller before
        that metadata names its address (a run at Kafka's defaults crashed on
        ``UnknownBrokerIdError: 6`` in the put-back's reassignment)."""

        def asked() -> tuple[T] | None:
            try:
                return (call(),)
            except KafkaError:
                self.kadmin._manager.cluster.request_update()
                return None

        answer = wait(asked, 60, what, interval=0.5)
        assert answer is not None  # wait returns an answer or exits
        return answer[0]

    def put_back(self, initial: Placement) -> None:
        now = self.placement()
        moved = {k: v for k, v in initial.items() if now.get(k) not in (None, v)}
        if moved:
            wanted = {TopicPartition(t, p): r for (t, p), r in moved.items()}
            self.answered(
                lambda: self.kadmin.alter_partition_reassignments(wanted), "the put-back's start"
            )
            wait(
                lambda: (
                    not self.answered(
                        self.kadmin.list_partition_reassignments, "the reassignments listed"
                    )
                ),
                600,
                "the put-back",
            )
        rf = {k: len(v) for k, v in initial.items()}
        wait(lambda: self.in_sync(rf, None), 300, "every partition in sync after the put-back")
        # Each partition led by its preferred replica again, now, and waited for: left to
        # Kafka's own periodic rebalance the leaders would move at a time of its own, possibly
        # inside the next run's baseline.
        self.answered(
            lambda: self.kadmin.elect_leaders(0, None, timeout_ms=60_000), "the elections"
        )
        wait(self.preferred_lead, 120, "every partition led by its preferred replica")

    def preferred_lead(self) -> bool:
        meta = self.admin.list_topics(timeout=10)
        return all(
            p.leader == p.replicas[0]
            for t in meta.topics.values()
            for p in t.partitions.values()
            if p.replicas
        )

    # ---- data ---------------------------------------------------------------------------

    def fill(self) -> None:
        topic = NewTopic(TOPIC, PARTITIONS, RF, config={"segment.bytes": str(64 * 1024 * 1024)})
        for future in self.admin.create_topics([topic]).values():
            future.result(timeout=60)
        wait(lambda: TOPIC in self.admin.list_topics(timeout=10).topics, 60, "the topic")
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 50}
            | {"batch.size": self.fill_batch_bytes, "compression.type": "none"}
        )
        value = b"x" * RECORD
        for n in range(self.produce_mb * 1024 * 1024 // RECORD):
            while True:
                try:
                    producer.produce(TOPIC, value, partition=n % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.1)
        if producer.flush(300) != 0:
            raise SystemExit("bench_heal: records left unsent after 300 s")

    def traffic(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "1", "log_level": 0}
            | {"message.timeout.ms": 30000}
        )
        value = b"t" * 1000
        per_tick = TRAFFIC_BYTES_PER_S // 10 // len(value)
        n = 0
        while not self.stop_traffic.is_set():
            for _ in range(per_tick):
                n += 1
                try:
                    producer.produce(TOPIC, value, partition=n % PARTITIONS)
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            time.sleep(0.1)
        producer.flush(30)

    # ---- kmedic -------------------------------------------------------------------------

    def race(
        self,
        run: int,
        throttle: int | str | None,
        initial: Placement,
        capacity: dict[str, float] | None = None,
        settle_s: float = 0.0,
        put_back: bool = True,
        after_s: float = 0.0,
    ) -> Run:
        name = f"race{run}"
        actions = f"kmedic.actions.{name}"
        port = process.free_ports(1)[0]
        pipeline = Pipeline(self.cluster, self.workdir / name, cluster_name=name)
        sizes = self.sizes()
        rf = {k: len(v) for k, v in initial.items()}
        try:
            start_kmedic(
                pipeline,
                name,
                port,
                policy={
                    "dead_grace_ms": self.grace_ms,
                    "even_spread": False,
                    "max_dead_brokers": 1,
                    "max_moves_per_cycle": 10_000,
                    "max_moves_per_hour": 100_000,
                },
                throttle=throttle,  # kmedic's limits on moves: its defaults (5 per broker, 10)
                capacity=capacity or {},
                executor=self.executor,
                agent_interval_s=self.agent_interval_s,
                manager_interval_s=self.manager_interval_s,
            )
            # The manager's snapshot holds every broker's stats and the topic's sizes.
            snapshot = self.workdir / name / "snapshot.json"
            wait(lambda: _sized(snapshot), 120, "the sizes in the manager's snapshot", 1)
            held = {k: v for k, v in initial.items() if VICTIM in v}
            time.sleep(settle_s)  # a steady state before the kill, for those who measure it
            killed = time.time()
            self.cluster.kill(VICTIM)
            wait(lambda: self.fenced(VICTIM), 60, f"broker {VICTIM} fenced")
            fenced = time.time()
            wait(lambda: self.in_sync(rf, VICTIM), 900, "every partition fully replicated")
            replicated = time.time()
            time.sleep(after_s)  # the healed cluster's steady state, for those who measure it
            records = self.audit(actions, lambda rs: any(r.kind == "action_completed" for r in rs))
        finally:
            pipeline.stop()
        started = [r for r in records if r.kind == "action_started"]
        if not started:
            raise SystemExit("bench_heal: the heal left no action_started record")
        moved_bytes = topic_bytes = off_victim = 0
        for r in started:
            topic, _, number = r.partitions[0].rpartition(":")
            before = set((r.before or {})["replicas"])
            after = set((r.after or {})["replicas"])
            size = sizes.get((topic, int(number)), 0)
            moved_bytes += size * len(after - before)
            topic_bytes += size * len(after - before) if topic == TOPIC else 0
            off_victim += len(before - after - {VICTIM})
        after_placement = self.placement()
        violations = sum(
            1
            for (t, _), replicas in after_placement.items()
            if t == TOPIC and len({self.rack[b] for b in replicas}) < len(replicas)
        )
        result = Run(
            throttle=throttle,
            fenced_s=fenced - killed,
            first_move_s=min(r.time_ms for r in started) / 1000 - killed,
            replicated_s=replicated - killed,
            kmedic_bytes=moved_bytes,
            kmedic_topic_bytes=topic_bytes,
            lower_bound=sum(sizes.get(k, 0) for k in held),
            off_victim_moves=off_victim,
            rack_violations=violations,
            killed_at=killed,
            rate_records=[r.summary for r in records if "throttle rates set" in r.summary],
        )
        print(
            f"run {run} (throttle {throttle or 'none'}): fenced {result.fenced_s:.1f} s, "
            f"first move {result.first_move_s:.1f} s, fully replicated "
            f"{result.replicated_s:.1f} s; {moved_bytes / 1e6:.0f} MB moved against a lower "
            f"bound of {result.lower_bound / 1e6:.0f} MB; {off_victim} replicas moved that were "
            f"not on broker {VICTIM}; {violations} rack violations",
            flush=True,
        )
        if put_back:  # for the next run (the last one leaves the cluster as it is)
            self.cluster.restart(VICTIM)
            self.put_back(initial)
        return result

    def audit(self, topic: str, done: Callable[[list[AuditRecord]], bool]) -> list[AuditRecord]:
        def read() -> list[AuditRecord]:
            records = list(read_records(self.bootstrap, topic, timeout_s=10))
            return records if done(records) else []

        return wait(read, 60, "the moves in the audit log", interval=1)

    # ---- Kafka's own plan ---------------------------------------------------------------

    def kafka_generate(self, initial: Placement) -> dict[str, Any]:
        """`kafka-reassign-partitions --generate` for the topic onto every broker but the
        victim: its bytes moved, moves off other brokers and rack violations."""
        topics = self.workdir / "topics.json"
        topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
        brokers = ",".join(str(b) for b in self.cluster.broker_ids if b != VICTIM)
        cmd = process.java_command(
            classpath=jvm_jars("kafka-tools"),
            main_class="org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            args=[
                "--bootstrap-server",
                self.bootstrap,
                "--topics-to-move-json-file",
                str(topics),
                "--broker-list",
                brokers,
                "--generate",
            ],
            heap_mb=256,
            system_properties={},
        )
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        marker = "Proposed partition reassignment configuration"
        if done.returncode != 0 or marker not in done.stdout:
            raise SystemExit(f"bench_heal: --generate failed: {done.stderr or done.stdout}")
        proposed = json.loads(done.stdout.split(marker, 1)[1].strip().splitlines()[0])
        sizes = self.sizes()
        bound = sum(sizes.get(k, 0) for k, v in initial.items() if VICTIM in v and k[0] == TOPIC)
        moved = off_victim = violations = 0
        for entry in proposed["partitions"]:
            key = (entry["topic"], entry["partition"])
            before, after = set(initial[key]), set(entry["replicas"])
            moved += sizes.get(key, 0) * len(after - before)
            off_victim += len(before - after - {VICTIM})
            violations += len({self.rack[b] for b in after}) < len(after)
        return {"bytes": moved, "bound": bound, "off_victim": off_victim, "violations": violations}

    def stop(self) -> None:
        self.stop_traffic.set()
        self.kadmin.close()
        self.cluster.stop()
        self._network.close()


def end_on_sigterm() -> None:
    """SIGTERM (a `timeout`, a runner giving up) ends a bench as Ctrl-C does: through the
    ``finally`` that stops the cluster and removes a shaped cluster's namespace (killed
    outright, Python runs none, and the namespace stayed)."""

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)


JVM_WORDS = {
    "light": "the Kafka nodes' JVMs light, as the tests start them (C1, the serial collector)",
    "server": "the Kafka nodes' JVMs as Kafka's launcher starts them (`--jvm server`: G1, C2)",
}


def add_jvm_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """``--jvm light|server``: the Kafka nodes' JVMs (ClusterSpec.server_jvms)."""
    parser.add_argument(
        "--jvm",
        choices=tuple(JVM_WORDS),
        default=default,
        help="the Kafka nodes' JVMs: light, as the tests start them (C1, the serial collector); "
        "server, as Kafka's launcher starts them (G1 with a 20 ms pause goal, C2: on two "
        "shared cores no shorter pauses, and a first run's baseline disturbed by the "
        f"compiler's warm-up; docs/bench.md); default {default}",
    )


def warm_up(args: argparse.Namespace) -> bool:
    """One unthrottled heal before the counted runs, on server JVMs: C2 compiles the copy's
    path during the first heal, which took 31.5 s against 23.5 s after it (2026-12-04)."""
    return args.jvm == "server" and not args.quick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    end_on_sigterm()
    parser.add_argument("--runs", type=int, default=3, help="runs per throttle setting")
    parser.add_argument("--produce-mb", type=int, default=512, help="MB produced at RF 3")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke size: one unthrottled run, 4 MB, a 5 s grace, light JVMs unless told "
        "otherwise, docs untouched",
    )
    add_jvm_argument(parser, default="server")
    parser.set_defaults(jvm=None)  # a smoke run's default is light: it proves the path only
    as_shipped.add_arguments(parser)
    args = parser.parse_args()
    if args.jvm is None:
        args.jvm = "light" if args.quick else "server"
    throttles: list[int | None] = [None] * args.runs + [THROTTLE] * args.runs
    grace_ms = GRACE_MS
    if args.quick:
        args.produce_mb, args.runs, args.no_write = 4, 1, True
        throttles, grace_ms = [None], 5_000
        as_shipped.smoke(args)
    with tempfile.TemporaryDirectory(prefix="bench-heal-") as tmp:
        race = Race(
            Path(tmp),
            args.produce_mb,
            grace_ms,
            server_jvms=args.jvm == "server",
            agent_interval_s=args.agent_interval,
            manager_interval_s=args.manager_interval,
            kafka_defaults=not args.bench_brokers,
        )
        try:
            t = time.monotonic()
            race.fill()
            print(f"produced {args.produce_mb} MB in {time.monotonic() - t:.0f} s", flush=True)
            initial = race.placement()
            on_disk = sum(race.sizes()[k] * len(v) for k, v in initial.items() if k[0] == TOPIC)
            kafka = race.kafka_generate(initial)
            traffic = threading.Thread(target=race.traffic, daemon=True)
            traffic.start()
            if warm_up(args):
                warm = race.race(len(throttles), None, initial)
                print(f"warm-up heal, not counted: fully replicated {warm.replicated_s:.1f} s")
            runs = [
                race.race(n, throttle, initial, put_back=n < len(throttles) - 1)
                for n, throttle in enumerate(throttles)
            ]
        finally:
            race.stop()
    text = report(args, on_disk, runs, kafka, grace_ms)
    print(text)
    if not args.no_write:
        write_section("heal", text)


def report(
    args: argparse.Namespace,
    on_disk: int,
    runs: list[Run],
    kafka: dict[str, Any],
    grace_ms: int = GRACE_MS,
) -> str:
    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})"

    rows = []
    for throttle in (None, THROTTLE):
        mine = [r for r in runs if r.throttle == throttle]
        if not mine:
            continue
        label = "none" if throttle is None else f"{throttle / 1e6:.0f} MB/s"
        rows.append(
            f"| {label} | {med([r.fenced_s for r in mine])} | "
            f"{med([r.first_move_s for r in mine])} | {med([r.replicated_s for r in mine])} | "
            f"{statistics.median(r.kmedic_topic_bytes for r in mine) / 1e6:.0f} MB "
            f"({statistics.median(r.kmedic_bytes for r in mine) / 1e6:.0f} MB all topics) | "
            f"{statistics.median(r.lower_bound for r in mine) / 1e6:.0f} MB | "
            f"{max(r.off_victim_moves for r in mine)} | {max(r.rack_violations for r in mine)} |"
        )
    return "\n".join(
        [
            "## heal",
            "",
            as_shipped.header(args, {}),
            "",
            "`bench/bench_heal.py`: the heal race on the local cluster. 6 brokers on 3 racks, "
            f"{PARTITIONS} partitions at RF {RF} (one replica per rack), {args.produce_mb} MB "
            f"produced ({on_disk / 1e9:.2f} GB on disk), 2 MB/s of traffic throughout; agents "
            f"and the manager as processes, no Spark job; grace {grace_ms / 1000:.0f} s, "
            "kmedic's move limits (5 per broker, 10 in flight), a cycle every "
            f"{args.manager_interval:g} s, agents every {args.agent_interval:g} s, completions "
            f"polled every 0.5 s; {JVM_WORDS[args.jvm]}"
            f"{', after one warm-up heal not counted' if warm_up(args) else ''}. "
            "Broker 6 SIGKILLed, "
            f"{args.runs} runs per throttle setting; times from the kill, median (range).",
            "",
            "| throttle | fenced | first move | fully replicated | bytes moved (topic) "
            "| lower bound | replicas moved off other brokers | rack violations after |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            "Kafka's own `kafka-reassign-partitions --generate` for the same topic and the "
            f"five live brokers proposes {kafka['bytes'] / 1e6:.0f} MB of copies against a lower "
            f"bound of {kafka['bound'] / 1e6:.0f} MB at that moment, moves "
            f"{kafka['off_victim']} replicas off brokers that are alive, and leaves "
            f"{kafka['violations']} partitions with two replicas in one rack: it rebalances the "
            "whole topic over the broker list rather than replacing the dead broker's replicas.",
            "",
            "Where the time goes: the controller fences the broker about 6 s after the kill "
            "(`broker.session.timeout.ms` 6000 on the local cluster; Kafka's default is 9000); "
            "the manager's registration watch (four reads a second) sees it absent and counts "
            "the grace from that read; a cycle is held for the grace's end, and the first move "
            "starts 15-16 s after the fencing (the watch's read, then the cycle's own "
            "reads, plan write and audit record: a few hundred ms; the executor's first call "
            "after the death, often sent to the dead broker and refused, is retried on another "
            "at once: it waited a second before, 24.2 s median). Then the moves start five "
            "at a time, more at each completion poll (0.5 s): `max_moves_per_broker` counts "
            "every replica of a moving partition, and each partition here has one on three of "
            "the five live brokers (every lost replica goes to broker 3, the dead broker's "
            "rack-mate). At 2 per broker the copy took 4.3 s, bound by the fetches' round "
            "trips rather than by bytes; at 6, 1.6 s. The data grows by the traffic from run "
            "to run (the lower bound rises with it).",
            "",
        ]
    )


if __name__ == "__main__":
    main()
