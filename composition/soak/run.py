"""One soak run: a real cluster (6 brokers on 3 racks, three KRaft controllers, ZooKeeper), the
agents, the Spark job, two managers, a Prometheus scraping them with the shipped rules, Kafka's
verifiable producer and consumer on every soak topic, and the seeded
schedule's episodes one after the other (composition.soak.schedule). Then the producers stop,
the consumers read to the end, and the invariants are checked (composition.soak.invariants)
into a report (composition.soak.report). Every process started here is stopped here."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from composition.pipeline import Pipeline
from composition.prometheus import PrometheusServer
from composition.soak import network, probes
from composition.soak.appended import create_audit_topic
from composition.soak.cuts import Cut, cut_leader, lease_end
from composition.soak.invariants import Warranted
from composition.soak.schedule import Episode, Overlap, Schedule, peer_of
from composition.soak.verifiable import (
    ToolProcess,
    acked_count,
    consumed_count,
    start_consumer,
    start_producer,
)
from composition.tcp_proxy import TcpProxy
from kmedic.errors import KmedicError
from kmedic.localcluster import ClusterSpec, LocalCluster, process
from kmedic.logging import get_logger
from manager.coordination.placement_store import ZkConfigStore
from manager.model.placement_config import BrokerGroup, IsolationGroup
from manager.model.policy import Policy

log = get_logger(__name__)

MANAGERS = ("m1", "m2")
GRACE_S = 15.0
SESSION_TIMEOUT_S = 6.0  # broker.session.timeout.ms of the local cluster
MANAGER_SESSION_S = 6.0  # the managers' ZooKeeper session timeout
PARTITIONS = 6
ISOLATED_TOPIC = "soak.isolated"
ISOLATED_BROKERS = (3, 4, 5, 6)  # the isolated topic lives here (racks /r3, /r1, /r2, /r3)
# Data the heals must copy, in a topic of its own (the verifiable clients never read it), at a
# throttle that makes a heal outlast a manager's failover: the standby must finish the heal,
# not find it done. 8 MB a partition at 1 MB/s: a heal of one broker takes about 30 s.
BALLAST_TOPIC = "soak.ballast"
FAILED_DIR = 1  # which log directory a disk episode fails
AUDIT_TOPIC = "kmedic.actions"  # the managers' audit topic (their default)
BALLAST_RECORD_BYTES = 64 * 1024
THROTTLE_BYTES_PER_S = 1_000_000
# How long the Spark job may take to write valid loads (started, or started again after a
# kill): KmedicStaleLoadData's `for`, past which the loads' staleness pages anyway.
LOADS_TIMEOUT_S = 600
HOST = "127.0.0.1"  # where the roles serve their /metrics


@dataclass
class SoakSettings:
    seed: int
    length_s: float
    workdir: Path
    brokers: int = 6
    throughput: int = 200  # messages per second, per soak topic
    ballast_mb: int = 8  # per partition of the ballast topic
    audit_outage: bool = False  # end with every broker of the audit topic killed at once
    warranted_page: bool = False  # second, an episode whose page must fire
    leader_drop: bool = False  # in the second episode, the leader's ZooKeeper packets dropped
    stream: bool = True  # run the Spark job (the short variant in `make test` leaves it out)
    controllers: int = 3  # KRaft voters: three, so that one may die (and the leader)
    # Each broker's link in Mbit/s: the cluster runs in a network namespace of its own, and
    # the schedule draws the network's faults too (None: unshaped loopback, no network fault).
    nic_mbps: int | None = None
    # A time box: no episode starts once this many seconds of episodes have run (None: every
    # episode drawn runs, however long they take on this machine).
    stop_after_s: float | None = None


def cpu_pressure_us() -> int | None:
    """Microseconds some runnable task has waited for a CPU since boot (None: no PSI)."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return int(first.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class Timeline:
    """What happened when, in seconds from the start of the faults."""

    started: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)  # the same moment, for Prometheus
    # The machine's CPU pressure counter at the start (/proc/pressure/cpu, "some", µs).
    pressure_us: int | None = field(default_factory=lambda: cpu_pressure_us())
    events: list[tuple[float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def say(self, what: str) -> None:
        at = time.monotonic() - self.started
        with self.lock:
            self.events.append((round(at, 1), what))
        log.info("soak_event", at_s=round(at, 1), what=what)


@dataclass
class Rig:
    """Everything a run started, for the episodes to act on and for the end to stop."""

    settings: SoakSettings
    cluster: LocalCluster
    pipeline: Pipeline
    ports: dict[str, int]
    topics: list[str]
    tools: list[ToolProcess] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)
    # Scrapes every kmedic process and evaluates the shipped rules: the pages, as on-call
    # would get them (None until started).
    prometheus: PrometheusServer | None = None
    # Processes started during the run are started from this one thread, which lives until
    # the run stops: a child dies with the *thread* that started it (kmedic.localcluster.
    # process), and a fault's own thread ends with the fault.
    launcher: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="soak-launcher")
    )

    # Each manager's own relay to ZooKeeper (a leader_cut blocks one), and the cuts made.
    proxies: dict[str, TcpProxy] = field(default_factory=dict)
    cuts: list[Cut] = field(default_factory=list)
    # How long the episodes took (set when the schedule ends).
    episodes_s: float = 0.0
    # The episodes whose faults must page, with when they ran.
    warranted: list[Warranted] = field(default_factory=list)

    # Set once the episode's fault is over (a heal done): a fault timed "mid-heal" that is
    # still waiting for moves gives up instead of waiting for moves that will never run.
    episode_over: threading.Event = field(default_factory=threading.Event)

    # A shaped cluster's namespace, entered by this (the main) thread until ``stop``; and the
    # brokers cut off from the controllers now (fenced, they answer with stale metadata: the
    # run's own questions go to the others).
    network: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    cut_off: set[int] = field(default_factory=set)

    def launch(self, start: Callable[[], None]) -> None:
        """Run ``start`` (which starts a process) on the launcher thread; wait for it."""
        self.launcher.submit(start).result(timeout=120)

    @property
    def bootstrap(self) -> str:
        """The brokers to ask: every one but those cut off from the controllers."""
        if not self.cut_off:
            return self.cluster.bootstrap_servers
        return ",".join(
            f"{self.cluster.broker(b).host}:{self.cluster.broker(b).port}"
            for b in self.cluster.broker_ids
            if b not in self.cut_off
        )

    def start_overlaps(
        self, overlaps: tuple[Overlap, ...], anchor: float | None
    ) -> list[threading.Thread]:
        return _overlaps(self, overlaps, anchor)

    def join(self, threads: list[threading.Thread]) -> None:
        _join(threads)

    def manager_settings(self, name: str) -> dict[str, Any]:
        return {
            "instance_id": name,
            "interval_s": 3,
            "zookeeper": {
                "zk_connect": self.proxies[name].address,
                "session_timeout_s": MANAGER_SESSION_S,
            },
            "policy": {
                "dead_grace_ms": int(GRACE_S * 1000),
                "max_dead_brokers": 1,
                "even_spread": False,  # the soak proves heals and drains, not balancing
                "max_moves_per_cycle": 10_000,
                "max_moves_per_hour": 100_000,
            },
            "executor": {"throttle_bytes_per_s": THROTTLE_BYTES_PER_S, "max_moves_in_flight": 12},
            "http": {"port": self.ports[name]},
            "snapshot_path": str(self.pipeline.workdir / f"{name}-snapshot.json"),
            "audit": {"spool_dir": str(self.spool(name))},
        }

    def spool(self, name: str) -> Path:
        return self.pipeline.workdir / f"{name}-spool"

    def start_manager(self, name: str) -> None:
        # On a shaped cluster each manager's connections can be cut (an audit_cut).
        shaped = self.cluster.namespace is not None
        enter = self.cluster.client_group(f"manager-{name}") if shaped else None
        self.pipeline.start_manager(name, enter=enter, **self.manager_settings(name))

    def leader(self) -> str | None:
        for name in MANAGERS:
            if probes.metric(self.ports[name], "kmedic_is_leader") == 1:
                return name
        return None

    def loads_valid(self) -> bool:
        """The leading manager plans from fresh loads: as large a share of partitions with a
        valid load window as its gates need (a fill or a rebalance may go on)."""
        leading = self.leader()
        share = (
            probes.metric(self.ports[leading], "kmedic_load_data_valid_fraction")
            if leading
            else None
        )
        return share is not None and share >= Policy().min_valid_load_fraction

    def stream_wrote(self) -> bool:
        """The Spark job running now has completed a micro-batch (its counters start at 0)."""
        done = probes.metric(self.pipeline.stream_metrics_port, "kmedic_stream_batches_total")
        return done is not None and done > 0

    def whole(self) -> bool:
        return not probes.under_replicated(self.bootstrap) and not probes.reassigning(
            self.bootstrap
        )


def cluster_spec(settings: SoakSettings) -> ClusterSpec:
    return ClusterSpec(
        brokers=settings.brokers,
        racks=("/r1", "/r2", "/r3"),
        broker_heap_mb=320,
        controllers=settings.controllers,
        log_dirs=2,  # JBOD: a disk episode fails one directory, the broker stays up
        nic_mbps=settings.nic_mbps,
        # As docs/alerts.md asks of operators: topics created without a setting of their own
        # (the internal ones) lose no acknowledged write to one broker's loss. Left at Kafka's
        # 1 (on the brokers, then on the controllers, whose value is the one topics get),
        # KmedicUnsafeTopic rightly warned of them in the shaped runs.
        min_insync_replicas=2,
        # And as docs/executor.md asks of them: the replication settings kmedic's throttled
        # copies are measured at. Left at Kafka's defaults, KmedicBrokerReplicationSettingOff
        # (a warning after 10 minutes) rightly stood through any run longer than that.
        broker_overrides={
            "transaction.state.log.min.isr": "2",
            "replication.quota.window.num": "1",
            "replica.fetch.backoff.ms": "100",
            "replica.fetch.wait.max.ms": "100",
        },
        request_log=True,  # the brokers' witness of each manager's writes
    )


def start(settings: SoakSettings) -> Rig:
    """The cluster, the roles and the verifiable clients, writing and reading; on a failure
    on the way, whatever was started is stopped before the error goes on."""
    cluster = LocalCluster.start(cluster_spec(settings), settings.workdir / "cluster")
    name = f"soak-{uuid.uuid4().hex[:6]}"
    chosen = role_ports(cluster.broker_ids)
    pipeline = Pipeline(
        cluster,
        settings.workdir / "roles",
        cluster_name=name,
        stream_metrics_port=chosen["stream"],
        manager_port=chosen["pipeline"],  # its own manager page: unused here
    )
    rig = Rig(settings, cluster, pipeline, chosen, ["soak.rf3", ISOLATED_TOPIC])
    try:
        # Everything from here on (roles, clients, Prometheus, the run's own questions) runs
        # in a shaped cluster's namespace; an unshaped cluster's is this machine's.
        rig.network.enter_context(cluster.network())
        rig.proxies = {m: TcpProxy(cluster.zk_connect).start() for m in MANAGERS}
        _start_roles(rig)
    except BaseException:
        for tool in rig.tools:
            tool.stop()
        if rig.prometheus is not None:
            rig.prometheus.stop()
        pipeline.stop()
        for proxy in rig.proxies.values():
            proxy.stop()
        cluster.stop()
        rig.network.close()
        raise
    return rig


def role_ports(brokers: list[int]) -> dict[str, int]:
    """Every port the run's roles serve on (the managers, each agent, the Spark job, and the
    pipeline's own manager page, unused here), chosen in one call: a port is free only until
    something binds it, so ports chosen apart may be one (an agent took a manager's, and the
    manager could not start)."""
    roles = [*MANAGERS, *(f"agent-{b}" for b in brokers), "stream", "pipeline"]
    return dict(zip(roles, process.free_ports(len(roles)), strict=True))


def _start_roles(rig: Rig) -> None:
    _create_topics(rig)
    agents = {b: rig.ports[f"agent-{b}"] for b in rig.cluster.broker_ids}
    for broker_id, port in agents.items():
        rig.pipeline.start_agent(broker_id, interval_s=2, metrics_port=port, metrics_host=HOST)
    if rig.settings.stream:
        rig.pipeline.start_stream()
    for manager in MANAGERS:
        rig.start_manager(manager)
        if manager == MANAGERS[0]:
            probes.wait(lambda: rig.leader() == "m1", 90, "m1 to lead")
    if rig.settings.stream:
        # The episodes begin from a working pipeline: a fill refused while the Spark job
        # still starts is the machine's slowness, not a fault the schedule drew.
        probes.wait(rig.loads_valid, LOADS_TIMEOUT_S, "the Spark job's first loads, valid")
    jobs = {"kmedic-agent": {"static_configs": [{"targets": [_at(p) for p in agents.values()]}]}}
    if rig.settings.stream:
        jobs["kmedic-stream"] = {
            "static_configs": [{"targets": [_at(rig.pipeline.stream_metrics_port)]}]
        }
    managers = [_at(rig.ports[m]) for m in MANAGERS]
    rig.prometheus = PrometheusServer(rig.settings.workdir / "prometheus", managers, jobs=jobs)
    rig.prometheus.start()
    tools = rig.settings.workdir / "tools"
    for topic in rig.topics:
        rig.tools.append(start_consumer(rig.bootstrap, topic, tools))
        rig.tools.append(
            start_producer(rig.bootstrap, topic, tools, throughput=rig.settings.throughput)
        )
    for topic in rig.topics:
        producer, consumer = tools / f"{topic}.producer.jsonl", tools / f"{topic}.consumer.jsonl"

        def both(producer: Path = producer, consumer: Path = consumer) -> bool:
            return acked_count(producer) > 0 and consumed_count(consumer) > 0

        # Four JVMs start at once beside the cluster; on a loaded machine the consumer's group
        # took past 90 s to join and read (the clean-clone run of a2e0a8c: its first records
        # consumed seconds after that wait gave up).
        probes.wait(
            both, 180, f"{topic}'s verifiable producer and consumer to write and read ({tools})"
        )


def _at(port: int) -> str:
    return f"{HOST}:{port}"


def _create_topics(rig: Rig) -> None:
    admin = AdminClient({"bootstrap.servers": rig.bootstrap})
    config = {"min.insync.replicas": "2"}
    topics = [*rig.topics, BALLAST_TOPIC]
    futures = admin.create_topics([NewTopic(t, PARTITIONS, 3, config=config) for t in topics])
    for future in futures.values():
        future.result(timeout=30)
    # Before any manager creates it: the brokers stamp each audit record (composition.soak.
    # appended), so the lease-loss invariant is judged by Kafka's clock too.
    create_audit_topic(rig.bootstrap, AUDIT_TOPIC)
    _fill_ballast(rig.bootstrap, rig.settings.ballast_mb)
    # The isolated topic may only live on its broker group: its heals stay inside it.
    with ZkConfigStore.connect(rig.cluster.zk_connect, rig.pipeline.cluster_name) as store:
        store.put(BrokerGroup(name="iso-brokers", brokers=ISOLATED_BROKERS), create=True)
        store.put(
            IsolationGroup(name="iso", topics=(ISOLATED_TOPIC,), primary="iso-brokers"),
            create=True,
        )
    _place_isolated(rig)


def _fill_ballast(bootstrap: str, mb_per_partition: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50})
    value = b"b" * BALLAST_RECORD_BYTES
    per_partition = mb_per_partition * 1024 * 1024 // BALLAST_RECORD_BYTES
    for _ in range(per_partition):
        for p in range(PARTITIONS):
            while True:
                try:
                    producer.produce(BALLAST_TOPIC, value=value, partition=p)
                    break
                except BufferError:  # the local queue is full: let it drain
                    producer.poll(0.5)
    if producer.flush(120) != 0:
        raise KmedicError(f"{BALLAST_TOPIC}: the ballast was not all acknowledged in 120 s")


def _place_isolated(rig: Rig) -> None:
    """Move the isolated topic's replicas into its group (created anywhere by Kafka)."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition

    # On distinct racks: brokers 4 (/r1) and 5 (/r2) with 3 or 6 (/r3), leaders rotated.
    sets = ([3, 4, 5], [6, 4, 5])
    targets = {
        KpTopicPartition(ISOLATED_TOPIC, p): [sets[p % 2][(p // 2 + i) % 3] for i in range(3)]
        for p in range(PARTITIONS)
    }
    client = KafkaAdminClient(bootstrap_servers=rig.bootstrap)
    try:
        client.alter_partition_reassignments(targets)
    finally:
        client.close()
    probes.wait(rig.whole, 120, "the isolated topic placed in its group")


# ---- episodes ----------------------------------------------------------------------------


def run_episode(rig: Rig, number: int, episode: Episode) -> None:
    say = rig.timeline.say
    probes.wait(rig.whole, 300, "a whole cluster before the next episode", interval_s=2)
    rig.episode_over.clear()
    say(f"episode {number}: {episode.sentence()}")
    cluster, broker = rig.cluster, episode.broker
    if episode.kind == "heal":
        cluster.kill(broker)
        say(f"broker {broker} killed")
        # The overlaps are timed from the moment the heal's moves run: "mid-heal".
        threads = _overlaps(rig, episode.overlaps, None)

        def healed() -> bool:
            return not probes.replicas_on(rig.bootstrap, broker) and rig.whole()

        probes.wait(healed, 420, f"broker {broker}'s replicas healed", interval_s=2)
        rig.episode_over.set()
        say(f"broker {broker} healed: it holds no replica, every partition is whole")
        _join(threads)
        cluster.restart(broker)
        say(f"broker {broker} restarted (empty)")
    elif episode.kind == "bounce":
        back = f"broker {broker} restarted after {episode.hold_s:.0f} s, inside its grace"
        _down_for(rig, [broker], episode, f"broker {broker} killed", back)
    elif episode.kind in ("pause", "hang"):
        cluster.pause(broker)
        say(
            f"broker {broker} paused"
            + (" past its session timeout" if episode.kind == "hang" else "")
        )
        threads = _overlaps(rig, episode.overlaps, time.monotonic())
        time.sleep(episode.hold_s)
        cluster.resume(broker)
        say(f"broker {broker} resumed after {episode.hold_s:.0f} s")
        _join(threads)
    elif episode.kind == "disk":
        _disk(rig, broker, episode.overlaps)
    elif episode.kind == "audit_outage":
        holders = probes.replicas_of(rig.bootstrap, AUDIT_TOPIC)
        killed = f"brokers {holders}, every replica of {AUDIT_TOPIC}, killed"
        back = f"brokers {holders} restarted after {episode.hold_s:.0f} s"
        _down_for(rig, holders, episode, killed, back)
    elif episode.kind == "drain":
        threads = _overlaps(rig, episode.overlaps, time.monotonic())
        _drain(rig, broker)
        _join(threads)
    elif episode.kind == "isolate":
        network.isolate(rig, episode)
    elif episode.kind == "peer_cut":
        network.peer_cut(rig, episode)
    elif episode.kind == "slow_link":
        network.slow_link(rig, episode)
    elif episode.kind == "refused_heal":
        peer = peer_of(broker, len(cluster.broker_ids))
        began = time.time()
        killed = f"brokers {broker} and {peer} killed together (max_dead_brokers is 1)"
        back = f"brokers {broker} and {peer} restarted after {episode.hold_s:.0f} s"
        _down_for(rig, [broker, peer], episode, killed, back)
        warrant = Warranted(f"episode {number}", episode.warrants, began, time.time())
        rig.warranted.append(warrant)


def _down_for(rig: Rig, brokers: list[int], episode: Episode, killed: str, back: str) -> None:
    """SIGKILL ``brokers`` at once (saying ``killed``), run the episode's overlaps meanwhile,
    and start them again ``episode.hold_s`` later (saying ``back``)."""
    for b in brokers:
        rig.cluster.kill(b)
    rig.timeline.say(killed)
    threads = _overlaps(rig, episode.overlaps, time.monotonic())
    time.sleep(episode.hold_s)
    rig.cluster.restart_many(brokers)
    rig.timeline.say(back)
    _join(threads)


def partition_dirs(directory: Path) -> list[str]:
    """The partition directories a log directory holds (``topic-N``; KRaft's metadata log,
    ``__cluster_metadata-0``, is not a replica kmedic heals)."""
    if not directory.is_dir():
        return []
    return sorted(
        d.name
        for d in directory.iterdir()
        if d.is_dir()
        and d.name.rpartition("-")[2].isdigit()
        and not d.name.startswith("__cluster_metadata")
    )


def _disk(rig: Rig, broker: int, overlaps: tuple[Overlap, ...]) -> None:
    """Fail the broker's second log directory (the first holds its metadata log), wait for
    Kafka to take it offline and for kmedic to heal its replicas, then replace the disk."""
    say, cluster = rig.timeline.say, rig.cluster
    held = partition_dirs(cluster.log_dirs(broker)[FAILED_DIR])
    path = cluster.break_log_dir(broker, FAILED_DIR)
    say(f"broker {broker}: log directory {path.name} made unusable")
    threads = _overlaps(rig, overlaps, None)
    if not held:
        # Found by a 60-minute run: a broker emptied by an earlier heal holds nothing there,
        # so Kafka never touches the directory and never takes it offline: nothing to heal.
        say(f"broker {broker} held no replica in {path.name}: nothing goes offline")
        rig.episode_over.set()
        _join(threads)
        cluster.kill(broker)
        cluster.repair_log_dir(broker, FAILED_DIR)
        cluster.restart(broker)
        say(f"broker {broker} restarted with the disk replaced (empty)")
        return
    probes.wait(lambda: not rig.whole(), 120, f"broker {broker}'s failed directory seen offline")
    say(f"broker {broker}: its replicas in {path.name} are offline")
    probes.wait(rig.whole, 420, f"the replicas of broker {broker}'s failed disk healed", 2)
    rig.episode_over.set()
    say(f"broker {broker}'s failed disk healed: every partition is whole")
    _join(threads)
    cluster.kill(broker)
    cluster.repair_log_dir(broker, FAILED_DIR)
    cluster.restart(broker)
    say(f"broker {broker} restarted with the disk replaced (empty)")


def _drain(rig: Rig, broker: int) -> None:
    """An operator's maintenance: drain the broker, then fill it back. A done drain keeps its
    broker cordoned (manager.model.cordons) until a fill names it: without the fill, every
    drain of a run would take a broker out for good, until a heal found nowhere to go."""
    for verb in ("drain", "fill"):
        said = _request(rig, verb, broker)
        rig.timeline.say(f"{verb} of broker {broker}: {said}")


def _request(rig: Rig, verb: str, broker: int) -> str:
    where = ["--zk", rig.cluster.zk_connect, "--cluster", rig.pipeline.cluster_name]
    cmd = [sys.executable, "-m", "composition.cli", verb, str(broker), "--wait", "400"]
    done = subprocess.run([*cmd, *where], capture_output=True, text=True, timeout=460)
    return (done.stdout.strip().splitlines() or [done.stderr.strip()])[-1]


def _overlaps(
    rig: Rig, overlaps: tuple[Overlap, ...], anchor: float | None
) -> list[threading.Thread]:
    """Each overlap on its own thread, ``offset_s`` after ``anchor`` (None: after the moment
    the leading manager has moves in flight)."""
    threads = []
    for overlap in overlaps:
        thread = threading.Thread(target=_overlap_at, args=(rig, overlap, anchor), daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def _overlap_at(rig: Rig, overlap: Overlap, anchor: float | None) -> None:
    try:
        if anchor is None:
            probes.wait(
                lambda: _moving(rig) or rig.episode_over.is_set(),
                180,
                "the heal's moves to run",
                interval_s=0.5,
            )
            if not _moving(rig) and rig.episode_over.is_set():
                rig.timeline.say(f"{overlap.kind} not done: the heal was over before any move ran")
                return
            anchor = time.monotonic()
        time.sleep(max(0.0, anchor + overlap.offset_s - time.monotonic()))
        _overlap(rig, overlap)
    except Exception as exc:  # the run goes on; the report says the fault did not happen
        rig.timeline.say(f"{overlap.kind} not done: {exc}")


def _moving(rig: Rig) -> bool:
    leader = rig.leader()
    return (
        leader is not None and (probes.metric(rig.ports[leader], "kmedic_moves_in_flight") or 0) > 0
    )


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:  # a stream_kill waits up to LOADS_TIMEOUT_S for valid loads
        thread.join(timeout=LOADS_TIMEOUT_S + 120)


def _overlap(rig: Rig, overlap: Overlap) -> None:
    say = rig.timeline.say
    if overlap.kind == "manager_kill":
        leader = rig.leader()
        if leader is None:
            say("manager_kill: no manager leads at that moment; nothing killed")
            return
        rig.pipeline.stop_role(leader, signal.SIGKILL)
        say(f"leading manager {leader} killed (SIGKILL)")
        other = next(m for m in MANAGERS if m != leader)
        try:
            probes.wait(lambda: rig.leader() == other, 60, f"{other} to take over")
            say(f"{other} leads")
        finally:  # back as a standby whatever happened, so that the run goes on with two
            rig.launch(lambda: rig.start_manager(leader))
            say(f"{leader} started again, as a standby")
    elif overlap.kind in ("zookeeper_pause", "session_loss"):
        past = ", past the managers' session" if overlap.kind == "session_loss" else ""
        before = rig.leader()
        paused_ms = int(time.time() * 1000)
        rig.cluster.pause_zookeeper()
        say(f"ZooKeeper paused (SIGSTOP){past}; {before or 'no manager'} leads")
        try:
            time.sleep(overlap.hold_s)
        finally:
            rig.cluster.resume_zookeeper()
        say(f"ZooKeeper resumed after {overlap.hold_s:.0f} s")
        if overlap.kind == "session_loss" and before is not None:
            # Past its session the leader cannot prove its lease: judged like a cut leader.
            lost_ms = paused_ms + int(MANAGER_SESSION_S * 1000)
            ended = lease_end(paused_ms, MANAGER_SESSION_S)
            cut = Cut(before, lost_ms, int(time.time() * 1000), ended, "a session loss")
            rig.cuts.append(cut)
        if overlap.kind == "session_loss":
            probes.wait(lambda: rig.leader() is not None, 90, "a manager to lead again")
            say(f"{rig.leader()} leads after the session loss")
    elif overlap.kind in ("voter_kill", "quorum_leader_kill"):
        _controller_down(rig, overlap)
    elif overlap.kind in ("leader_cut", "leader_drop"):

        def ready() -> bool:  # one leads and the other runs (a kill's victim started again)
            running = all(m in rig.pipeline.roles and rig.pipeline.roles[m].running()
                          for m in MANAGERS)  # fmt: skip
            return running and rig.leader() is not None

        try:
            probes.wait(ready, 90, "a leading manager beside a running standby", interval_s=0.5)
        except KmedicError:
            say(f"{overlap.kind}: no manager led beside a running standby in 90 s; nothing cut")
            return
        leading = rig.leader()
        if leading is None:
            say(f"{overlap.kind}: no manager leads at that moment; nothing cut")
            return
        silent = overlap.kind == "leader_drop"
        cut = cut_leader(
            leading, rig.proxies, overlap.hold_s, rig.leader, say,
            session_s=MANAGER_SESSION_S, silent=silent,
        )  # fmt: skip
        rig.cuts.append(cut)
        probes.wait(lambda: rig.leader() is not None, 90, "a manager to lead after the cut")
        say(f"{rig.leader()} leads after the cut")
    elif overlap.kind == "audit_cut":
        network.audit_cut(rig, overlap, AUDIT_TOPIC)
    elif overlap.kind == "stream_kill":
        if "stream" not in rig.pipeline.roles:
            say("stream_kill: no Spark job runs in this variant; nothing killed")
            return
        rig.pipeline.stop_role("stream", signal.SIGKILL)
        say("the Spark job killed (SIGKILL)")
        time.sleep(20)
        rig.launch(rig.pipeline.start_stream)
        started = time.monotonic()
        say("the Spark job started again")
        # The episode is over once the job writes loads again (the next one may be a fill):
        # its first micro-batch, then the leading manager planning from valid loads (those
        # written before the kill stay valid a while, so the second alone proves nothing).
        probes.wait(rig.stream_wrote, LOADS_TIMEOUT_S, "the Spark job's first batch after the kill")
        probes.wait(rig.loads_valid, LOADS_TIMEOUT_S, "the loads valid after the kill")
        say(f"the Spark job wrote loads again {time.monotonic() - started:.0f} s after its restart")


def run_schedule(
    rig: Rig,
    schedule: Schedule,
    on_episode: Callable[[int], None],
    stop_after_s: float | None = None,
) -> int:
    """Run the episodes in order; how many ran. With ``stop_after_s``, an episode starts only
    while fewer seconds than that have passed since the first began (one under way finishes)."""
    rig.timeline = Timeline()
    ran = 0
    for number, episode in enumerate(schedule.episodes, start=1):
        if stop_after_s is not None and time.monotonic() - rig.timeline.started >= stop_after_s:
            rig.timeline.say(
                f"the time box of {stop_after_s / 60:g} minutes is over: "
                f"{ran} of {len(schedule.episodes)} episodes ran"
            )
            break
        run_episode(rig, number, episode)
        ran = number
        on_episode(number)
    rig.episodes_s = time.monotonic() - rig.timeline.started
    return ran


def _controller_down(rig: Rig, overlap: Overlap) -> None:
    """SIGKILL the quorum's leader (``quorum_leader_kill``) or a voter that does not lead it
    (``voter_kill``), and start it again ``hold_s`` later."""
    leader = probes.quorum_leader(rig.bootstrap)
    if overlap.kind == "quorum_leader_kill":
        victim, what = leader, f"the quorum's leader, controller {leader},"
    else:
        victim = next(c for c in rig.cluster.controller_ids if c != leader)
        what = f"controller {victim} (a voter; {leader} leads)"
    rig.cluster.kill_controller(victim)
    rig.timeline.say(f"{what} killed (SIGKILL)")
    try:
        time.sleep(overlap.hold_s)
    finally:
        rig.launch(lambda: rig.cluster.restart_controller(victim))
    rig.timeline.say(
        f"controller {victim} started again after {overlap.hold_s:.0f} s; "
        f"the quorum is led by {probes.quorum_leader(rig.bootstrap)}"
    )
