"""High availability on real processes: two `kmedic manager` instances beside agents and the
Spark job, on a cluster of their own.

- The leader is SIGKILLed in the middle of a heal slowed on purpose (a low replication
  throttle): the standby takes over, adopts the stored plan and the running reassignments, and
  finishes the heal; nothing is issued twice, epochs increase at the handover, no throttle is
  left.
- ZooKeeper is paused (SIGSTOP) past the session timeout while a broker is dead: nobody acts
  during the pause; afterwards exactly one instance leads, says in the audit log why nothing
  happened, and heals.
- The leader's own link to ZooKeeper is cut (each instance reaches ZooKeeper through a TCP
  proxy of its own) until its session expires: the standby takes over and heals, the cut-off
  instance starts nothing and comes back as a standby; alone, it leads again; under the
  ``shutdown`` policy it exits non-zero saying why.
- A rolling restart of every broker, each down past the two minutes of the page alerts, under
  one manager with the shipped defaults and the shipped rules in a real Prometheus: nothing
  moves, nothing pages, the audit log tells each wait.

An Admin API sampler watches every reassignment Kafka runs for the whole module.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from e2e_support import (
    Placement,
    audit_records,
    live_brokers,
    metric,
    partitions,
    placement,
    put_back,
    reassignments,
    under_replicated,
)
from helpers import kafka_conf, wait_for, wait_until_usable
from kazoo.client import KazooClient
from prometheus_support import PrometheusServer
from zk_support import TcpProxy

from composition.pipeline import Pipeline
from composition.soak.appended import create_audit_topic, read_appended
from composition.soak.cuts import Cut, lease_end
from composition.soak.invariants import quiet_as_kafka_saw
from kmedic.localcluster import ClusterSpec, LocalCluster, process
from kmedic.traffic import PartitionRate, TrafficGenerator
from manager.audit.log import AuditRecord
from manager.monitor.feeds import LatestByKey

pytestmark = pytest.mark.e2e

GRACE_S = 10
CYCLE_S = 3
ZK_SESSION_S = 6
TOPIC = "ha.slow"
PARTITIONS = 6
# 6 MB a partition copied at 250 kB/s: each move takes tens of seconds, for the test that kills
# the leader mid-move; the tests that only need a heal to happen copy at 20 MB/s.
MB_PER_PARTITION = 6
SLOW_THROTTLE_BYTES_PER_S = 250_000
FAST_THROTTLE_BYTES_PER_S = 20_000_000
AUDIT_TOPIC = "kmedic.actions"  # the managers' default
MANAGERS = ("manager-a", "manager-b")

Sample = tuple[float, dict[tuple[str, int], tuple[int, ...]]]


class Sampler:
    """Every reassignment Kafka runs, sampled twice a second from the Admin API."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                seen = reassignments(self.bootstrap)
            except Exception:  # a broker is down; the next sample tells
                continue
            self.samples.append((time.time(), seen))

    def between(self, start_s: float, end_s: float) -> list[Sample]:
        return [s for s in self.samples if start_s <= s[0] <= end_s]

    def issued_twice(self, since_s: float) -> dict[str, str]:
        """Partitions whose reassignment went to more than one target, or ended and ran
        again, since ``since_s``: what a second issue of a move would look like from Kafka's
        side."""
        found: dict[str, str] = {}
        samples = self.between(since_s, time.time())
        tps = {tp for _, seen in samples for tp in seen}
        for tp in sorted(tps):
            targets = {seen[tp] for _, seen in samples if tp in seen}
            running = [tp in seen for _, seen in samples]
            first, last = running.index(True), len(running) - 1 - running[::-1].index(True)
            if len(targets) > 1:
                found[f"{tp[0]}:{tp[1]}"] = f"targets {sorted(targets)}"
            elif not all(running[first : last + 1]):
                found[f"{tp[0]}:{tp[1]}"] = "ran, ended and ran again"
        return found


@dataclass
class Fleet:
    cluster: LocalCluster
    pipeline: Pipeline
    ports: dict[str, int]
    sampler: Sampler
    proxies: dict[str, TcpProxy]
    settings: dict[str, dict[str, object]] = field(default_factory=dict)
    # Where every partition was once the fleet was up (put back before the rolling restart).
    initial: Placement = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def partitions(self) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
        return partitions(self.bootstrap, [TOPIC])

    def records(self, since_ms: int) -> list[AuditRecord]:
        return audit_records(self.bootstrap, since_ms)

    def leading(self) -> list[str]:
        return [m for m in MANAGERS if metric(self.ports[m], "kmedic_is_leader") == 1]

    def start_manager(self, name: str) -> None:
        self.pipeline.start_manager(name, **self.settings[name])

    def wait_for_takeover(self, standby: str, since: float, cause: str) -> None:
        """Wait until ``standby`` alone leads, and print how long it took since ``since``
        (``time.monotonic()``): the old leader's session expires after the session timeout,
        ZooKeeper checks every 2 s tick, and the standby's watch fires at once; a cycle of
        slack on top."""
        wait_for(
            lambda: self.leading() == [standby],
            timeout=ZK_SESSION_S + 2 + CYCLE_S + 15,
            interval=0.5,
            what=f"{standby} to take over after {cause}",
        )
        print(f"{standby} led {time.monotonic() - since:.1f}s after {cause}")

    def one_leader(self) -> list[str]:
        now = self.leading()
        return now if len(now) == 1 else []

    def leader_znode_held(self) -> bool:
        """Whether anyone holds the leader znode, asked of ZooKeeper directly."""
        zk = KazooClient(hosts=self.cluster.zk_connect)
        zk.start(timeout=15)
        try:
            path = f"/kmedic/{self.pipeline.cluster_name}/manager/leader"
            return zk.exists(path) is not None
        finally:
            zk.stop()
            zk.close()

    def moves_left(self) -> int:
        """Moves the stored plan still lists (running or queued), read from ZooKeeper: a heal
        is over, and its throttles due to go, when none is left."""
        zk = KazooClient(hosts=self.cluster.zk_connect)
        zk.start(timeout=15)
        try:
            path = f"/kmedic/{self.pipeline.cluster_name}/manager/plan"
            if zk.exists(path) is None:
                return 0
            data, _ = zk.get(path)
        finally:
            zk.stop()
            zk.close()
        return len(json.loads(data)["plan"].get("moves", []))

    def log_events(self, name: str) -> list[str]:
        return [
            line
            for line in self.pipeline.roles[name].log_file.read_text().splitlines()
            if '"event"' in line
        ]

    def most_loaded_broker(self) -> int:
        counts = Counter(b for r, _ in self.partitions().values() for b in r)
        return max(sorted(counts), key=lambda b: counts[b])

    def healed_without(self, broker: int) -> bool:
        return all(
            broker not in r and len(isr) == len(r) == 2 for r, isr in self.partitions().values()
        )

    def throttles(self) -> dict[str, dict[str, str]]:
        admin = AdminClient(kafka_conf(self.bootstrap))
        resources = [ConfigResource(ResourceType.TOPIC, TOPIC)] + [
            ConfigResource(ResourceType.BROKER, str(b))
            for b in self.cluster.broker_ids
            if self.cluster.is_alive(b)
        ]
        found = {}
        for res in resources:  # one broker resource per call, as the Admin API wants
            entries = admin.describe_configs([res])[res].result(timeout=30)
            values = {k: v.value for k, v in entries.items() if "throttled" in k and v.value}
            if values:
                found[f"{res.restype} {res.name}"] = values
        return found

    def use_throttle(self, bytes_per_s: int) -> None:
        """Both managers running with this replication throttle: restarted with it unless
        they already use it."""
        wanted = {"throttle_bytes_per_s": bytes_per_s}
        if all(self.settings[m]["executor"] == wanted for m in MANAGERS):
            return
        for name in MANAGERS:
            self.pipeline.stop_role(name)
            self.settings[name]["executor"] = wanted
        self.restore()

    def restore(self) -> None:
        """Every broker and both managers running, every partition fully replicated, no
        reassignment running."""
        dead = [b for b in self.cluster.broker_ids if not self.cluster.is_alive(b)]
        if dead:
            self.cluster.restart_many(dead)
        for name in MANAGERS:
            if not self.pipeline.roles[name].running():
                self.start_manager(name)
        wait_for(
            lambda: (
                under_replicated(self.bootstrap) == []
                and not reassignments(self.bootstrap)
                and self.moves_left() == 0
            ),
            timeout=180,
            what="every partition fully replicated, no move running or queued",
        )

        def both_up() -> bool:
            self.pipeline.check_running()
            connected = [metric(self.ports[m], "kmedic_zookeeper_connected") for m in MANAGERS]
            return connected == [1, 1] and len(self.leading()) == 1

        wait_for(both_up, timeout=60, what="both managers connected, one leading")


def fill(bootstrap: str) -> None:
    producer = Producer(kafka_conf(bootstrap, {"acks": "all", "linger.ms": 20}))
    payload = b"x" * 1024
    for p in range(PARTITIONS):
        for i in range(MB_PER_PARTITION * 1024):
            producer.produce(TOPIC, value=payload, partition=p)
            if i % 1000 == 0:
                producer.poll(0)
    assert producer.flush(120) == 0


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    cluster = LocalCluster.start(
        ClusterSpec(brokers=4, racks=("/r1", "/r2")), tmp_path_factory.mktemp("ha-cluster")
    )
    pipeline: Pipeline | None = None
    proxies: dict[str, TcpProxy] = {}
    sampler: Sampler | None = None
    traffic: TrafficGenerator | None = None
    loads: LatestByKey[bytes] | None = None
    try:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient(kafka_conf(bootstrap))
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 2)])[TOPIC].result(timeout=30)
        wait_until_usable(bootstrap, [TOPIC])
        # Before any manager creates it: each audit record stamped by the broker that appended
        # it, so a cut leader's writes are judged by Kafka's clock (composition.soak.appended).
        create_audit_topic(bootstrap, AUDIT_TOPIC)
        fill(bootstrap)
        workdir: Path = tmp_path_factory.mktemp("ha")
        pipeline = Pipeline(cluster, workdir, cluster_name=f"ha-{uuid.uuid4().hex[:6]}")
        traffic = TrafficGenerator(
            bootstrap, [PartitionRate(TOPIC, p, 5_000) for p in range(PARTITIONS)]
        ).start()
        loads = LatestByKey(bootstrap, "kmedic.replica-loads", lambda raw: raw).start()
        pipeline.start_agents(interval_s=2)
        pipeline.start_stream()
        ports = dict(zip(MANAGERS, process.free_ports(len(MANAGERS)), strict=True))
        proxies = {m: TcpProxy(cluster.zk_connect).start() for m in MANAGERS}
        fleet = Fleet(cluster, pipeline, ports, Sampler(bootstrap).start(), proxies)
        sampler = fleet.sampler
        for name in MANAGERS:
            fleet.settings[name] = {
                "instance_id": name,
                "interval_s": CYCLE_S,
                "zookeeper": {
                    "zk_connect": proxies[name].address,
                    "session_timeout_s": ZK_SESSION_S,
                },
                # Even spread off: a broker back from a heal test is emptier, and filling it
                # would put moves into the next test's counts (the shipped-defaults test keeps it).
                "policy": {
                    "dead_grace_ms": GRACE_S * 1000,
                    "max_dead_brokers": 1,
                    "even_spread": False,
                },
                "executor": {"throttle_bytes_per_s": SLOW_THROTTLE_BYTES_PER_S},
                "http": {"port": ports[name]},
                "snapshot_path": str(workdir / f"{name}-snapshot.json"),
                "audit": {"spool_dir": str(workdir / f"{name}-spool")},
            }
            fleet.start_manager(name)
            if name == MANAGERS[0]:
                wait_for(
                    lambda: (
                        pipeline is not None
                        and (pipeline.check_running() or fleet.leading() == [MANAGERS[0]])
                    ),
                    timeout=60,
                    what=f"{MANAGERS[0]} to lead",
                )
        wanted = {f"{TOPIC}:{p}".encode() for p in range(PARTITIONS)}

        def loads_ready() -> bool:
            assert pipeline is not None and loads is not None
            pipeline.check_running()
            return wanted <= set(loads.values())

        wait_for(loads_ready, timeout=420, interval=2, what="replica loads of every partition")
        fleet.initial = placement(bootstrap)
        wait_for(
            lambda: metric(ports[MANAGERS[1]], "kmedic_is_leader") == 0,
            timeout=30,
            what=f"{MANAGERS[1]} to run as a standby",
        )
        yield fleet
    finally:
        for stoppable in (sampler, loads, traffic, pipeline, *proxies.values()):
            if stoppable is not None:
                stoppable.stop()
        cluster.resume_zookeeper()
        cluster.stop()


def started_moves(records: list[AuditRecord]) -> Counter[str]:
    return Counter(p for r in records if r.kind == "action_started" for p in r.partitions)


def test_a_standby_finishes_the_heal_of_a_leader_killed_mid_move(fleet: Fleet) -> None:
    victim = 4
    fleet.use_throttle(SLOW_THROTTLE_BYTES_PER_S)
    [leader] = wait_for(fleet.one_leader, timeout=60, what="one leader")
    [standby] = [m for m in MANAGERS if m != leader]
    hosted = {f"{t}:{p}" for (t, p), (r, _) in fleet.partitions().items() if victim in r}
    assert hosted, f"broker {victim} hosts replicas of {TOPIC}"
    start_ms = int(time.time() * 1000)
    fleet.cluster.kill(victim)

    def moving() -> list[AuditRecord]:
        return [r for r in fleet.records(start_ms) if r.kind == "action_started" and r.epoch > 0]

    first = wait_for(moving, timeout=90, interval=1, what="the heal to start")
    assert {r.instance for r in first} == {leader}
    assert reassignments(fleet.bootstrap), "the heal is still copying when the leader dies"
    fleet.pipeline.stop_role(leader, signal.SIGKILL)
    fleet.wait_for_takeover(standby, time.monotonic(), f"{leader} was killed")
    assert reassignments(fleet.bootstrap), "taken over while the killed leader's moves still run"

    wait_for(
        lambda: fleet.healed_without(victim),
        timeout=300,
        interval=2,
        what=f"every partition fully replicated without broker {victim}",
    )

    def finished() -> list[AuditRecord]:
        records = fleet.records(start_ms)
        done = {p for r in records if r.kind == "action_completed" for p in r.partitions}
        return records if hosted <= done else []

    records = wait_for(finished, timeout=60, interval=2, what="every completion audited")
    by_standby = [r for r in records if r.instance == standby]
    adopted = [r for r in by_standby if r.summary.startswith("adopted the in-flight plan")]
    assert adopted, "the standby adopted the stored plan"
    assert f"by {leader}" in adopted[0].summary
    assert any(r.kind == "action_progress" and r.details.get("adopted") for r in by_standby), (
        "the standby adopted at least one running reassignment"
    )
    # Nothing issued twice: once per partition in the audit log, and Kafka never saw a
    # partition's reassignment change target or run again.
    assert [p for p, n in started_moves(records).items() if n > 1] == []
    assert hosted <= set(started_moves(records))  # with kmedic's own topics' replicas
    assert fleet.sampler.issued_twice(start_ms / 1000) == {}
    # The fencing epoch strictly increases at the handover and never goes back.
    epochs = [(r.time_ms, r.epoch, r.instance) for r in records]
    by_leader = [e for _, e, who in epochs if who == leader]
    assert by_leader and min(e for _, e, who in epochs if who == standby) > max(by_leader)
    ordered = [e for _, e, _ in sorted(epochs)]
    assert ordered == sorted(ordered)
    # The heal goes on with the replicas of kmedic's own topics the victim held; its
    # throttles go when its last move ends.
    wait_for(lambda: fleet.moves_left() == 0, timeout=180, interval=2, what="the heal to end")
    wait_for(lambda: fleet.throttles() == {}, timeout=30, what="every throttle removed")
    fleet.restore()
    assert fleet.throttles() == {}, "none either on the broker that was down"


def test_zookeeper_paused_past_the_session_timeout_while_a_broker_is_dead(fleet: Fleet) -> None:
    """A ZooKeeper pause is an outage nobody can prove leadership through: no instance acts,
    however long a dead broker has been dead; afterwards one does, and says what happened."""
    fleet.use_throttle(FAST_THROTTLE_BYTES_PER_S)
    [leader] = wait_for(fleet.one_leader, timeout=60, what="one leader")
    start_ms = int(time.time() * 1000)
    victim = fleet.most_loaded_broker()
    fleet.cluster.pause_zookeeper()
    paused_at = time.time()
    try:
        fleet.cluster.kill(victim)
        wait_for(
            lambda: victim not in live_brokers(fleet.bootstrap),
            timeout=30,
            what=f"broker {victim} fenced",
        )
        # Both instances cut off, for longer than the session timeout and the dead
        # broker's grace period together.
        deadline = time.monotonic() + GRACE_S + 2 * ZK_SESSION_S

        def cut_off_long_enough() -> bool:
            cut_off = all(
                metric(fleet.ports[m], "kmedic_zookeeper_connected") == 0 for m in MANAGERS
            )
            return cut_off and time.monotonic() > deadline

        wait_for(
            cut_off_long_enough,
            timeout=GRACE_S + 2 * ZK_SESSION_S + 30,
            what="both managers to lose ZooKeeper for longer than the session and the grace",
        )
    finally:
        fleet.cluster.resume_zookeeper()
    resumed_at = time.time()
    print(f"ZooKeeper paused {resumed_at - paused_at:.0f}s")

    [after] = wait_for(fleet.one_leader, timeout=60, what="exactly one leader after the pause")
    for _ in range(3):  # and it stays one, cycle after cycle
        time.sleep(CYCLE_S)
        assert fleet.leading() == [after]

    def healed() -> list[AuditRecord]:
        if not fleet.healed_without(victim):
            return []
        return fleet.records(start_ms)

    records = wait_for(healed, timeout=300, interval=2, what="the heal after the pause")
    during = [r for r in records if paused_at * 1000 <= r.time_ms <= resumed_at * 1000]
    assert [r for r in during if r.kind.startswith("action_")] == []
    assert [seen for _, seen in fleet.sampler.between(paused_at, resumed_at) if seen] == []
    why = [
        r
        for r in records
        if r.kind == "decision" and any(x.startswith("coordination_unreachable") for x in r.reasons)
    ]
    assert why and why[0].instance == after, "the leader after the pause audits why nothing moved"
    assert "while ZooKeeper was unreachable" in why[0].summary
    started = [r for r in records if r.kind == "action_started"]
    assert started and all(r.time_ms > resumed_at * 1000 for r in started)
    assert {r.instance for r in started} == {after}
    assert [p for p, n in started_moves(records).items() if n > 1] == []
    print(f"{leader} led before the pause, {after} after it")
    fleet.restore()


def test_a_leader_cut_off_past_its_session_hands_over_and_comes_back_a_standby(
    fleet: Fleet,
) -> None:
    fleet.use_throttle(FAST_THROTTLE_BYTES_PER_S)
    [leader] = wait_for(fleet.one_leader, timeout=60, what="one leader")
    [standby] = [m for m in MANAGERS if m != leader]
    start_ms = int(time.time() * 1000)
    victim = fleet.most_loaded_broker()
    fleet.proxies[leader].block()
    cut_at = time.time()
    try:
        fleet.cluster.kill(victim)
        fleet.wait_for_takeover(standby, time.monotonic(), f"{leader} was cut off")
    finally:
        # Within the reconnect tries (max_reconnect_tries, about 40 s by default).
        fleet.proxies[leader].unblock()

    def back_as_standby() -> bool:
        fleet.pipeline.check_running()
        connected = metric(fleet.ports[leader], "kmedic_zookeeper_connected") == 1
        return connected and fleet.leading() == [standby]

    wait_for(back_as_standby, timeout=60, what=f"{leader} back, as a standby")
    wait_for(
        lambda: fleet.healed_without(victim),
        timeout=300,
        interval=2,
        what=f"{standby} to heal broker {victim}",
    )
    for _ in range(3):  # it stays one, cycle after cycle
        time.sleep(CYCLE_S)
        assert fleet.leading() == [standby]
    assert any("another instance took leadership" in e for e in fleet.log_events(leader))
    records = fleet.records(start_ms)
    started = [r for r in records if r.kind == "action_started"]
    assert started and {r.instance for r in started} == {standby}
    assert [p for p, n in started_moves(records).items() if n > 1] == []
    # Nothing acted on by the cut-off instance after the cut. A cycle it began before the cut
    # may still record its decision (cc21: its noop, written to the spool while the dead
    # broker held the audit partition, arrived 11 s later), but no act and no move.
    after_cut = [r for r in records if r.instance == leader and r.time_ms > cut_at * 1000]
    acted = [
        r
        for r in after_cut
        if r.kind.startswith("action_") or (r.kind == "decision" and r.summary.startswith("act"))
    ]
    assert acted == [], [(r.kind, r.summary) for r in after_cut]
    # From the brokers' side: nothing of it that acts was appended by Kafka after the cut.
    start_ms = int(cut_at * 1000)
    cut = Cut(leader, start_ms, int(time.time() * 1000), lease_end(start_ms, ZK_SESSION_S))
    kafka_saw = quiet_as_kafka_saw(read_appended(fleet.bootstrap, AUDIT_TOPIC), [cut])
    assert kafka_saw.held, kafka_saw.problems
    assert fleet.sampler.issued_twice(cut_at) == {}
    fleet.restore()


def test_a_leader_alone_cut_off_past_its_session_leads_again(fleet: Fleet) -> None:
    """Policy ``reconnect``: nobody took leadership during the outage, so the instance takes
    it back with a new epoch."""
    [leader] = wait_for(fleet.one_leader, timeout=60, what="one leader")
    [other] = [m for m in MANAGERS if m != leader]
    fleet.pipeline.stop_role(other)
    epoch = metric(fleet.ports[leader], "kmedic_fencing_epoch")
    assert epoch is not None and epoch > 0
    fleet.proxies[leader].block()
    try:
        wait_for(
            lambda: not fleet.leader_znode_held(),
            timeout=ZK_SESSION_S + 15,
            what=f"ZooKeeper to expire the session of {leader}",
        )
    finally:
        fleet.proxies[leader].unblock()
    wait_for(
        lambda: (
            fleet.leading() == [leader]
            and metric(fleet.ports[leader], "kmedic_fencing_epoch") == epoch + 1
        ),
        timeout=60,
        what=f"{leader} to lead again with epoch {epoch + 1:.0f}",
    )
    assert any("leadership_reacquiring" in e for e in fleet.log_events(leader))
    fleet.restore()


def test_under_the_shutdown_policy_an_expired_session_ends_the_process(
    fleet: Fleet, tmp_path: Path
) -> None:
    """The only instance, under ``session_expired_policy: shutdown``: once its session expired
    it exits non-zero with one line saying why (a supervisor restarts it as a new instance)."""
    for name in MANAGERS:
        fleet.pipeline.stop_role(name)
    proxy = TcpProxy(fleet.cluster.zk_connect).start()
    port = process.free_ports(1)[0]
    config = tmp_path / "manager-c.yaml"
    settings = fleet.pipeline.manager_config(
        instance_id="manager-c",
        interval_s=CYCLE_S,
        zookeeper={
            "zk_connect": proxy.address,
            "session_timeout_s": ZK_SESSION_S,
            "session_expired_policy": "shutdown",
        },
        policy={"dead_grace_ms": GRACE_S * 1000, "even_spread": False},
        http={"port": port},
        snapshot_path=str(tmp_path / "snapshot.json"),
        audit={"spool_dir": str(tmp_path / "spool")},
    )
    config.write_text(yaml.safe_dump(settings))
    cmd = [sys.executable, "-m", "composition.cli", "manager", "--config", str(config)]
    with (tmp_path / "stderr").open("w+") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            wait_for(
                lambda: proc.poll() is None and metric(port, "kmedic_is_leader") == 1,
                timeout=60,
                what="manager-c to lead",
            )
            proxy.block()
            wait_for(
                lambda: not fleet.leader_znode_held(),
                timeout=ZK_SESSION_S + 15,
                what="ZooKeeper to expire the session of manager-c",
            )
            proxy.unblock()
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proxy.stop()
        stderr.seek(0)
        lines = stderr.read().splitlines()
    assert code != 0
    assert (
        "kmedic: error: manager manager-c stopped: "
        "ZooKeeper session lost and the policy is `shutdown`"
    ) in lines
    fleet.restore()


# The first broker stays down over a whole shipped 30 s cycle (one not woken by its leaving),
# far inside the shipped 10-minute grace; the others for a few reads, as a quick restart is. No
# page alert may even be pending (Prometheus evaluates every second), so staying down past a
# rule's `for:` proves nothing more: every rule's condition is checked at every evaluation.
LONG_DOWN_S = 40
DOWN_S = 8
WOKEN_WITHIN_S = 12  # a read a second, a cycle, a scrape a second: well under the 30 s cycle


@pytest.mark.timeout(LONG_DOWN_S + 3 * DOWN_S + 4 * 180 + 300)  # each broker down, then back
def test_a_rolling_restart_under_the_shipped_defaults_moves_nothing_and_pages_nobody(
    fleet: Fleet, tmp_path: Path
) -> None:
    """Every broker stopped in turn (a controlled shutdown), the first for over two minutes,
    under one manager with the shipped defaults and a real Prometheus evaluating the shipped
    rules every second: no data moves, no page-severity alert is ever active (not even
    pending), and the audit log tells each wait."""
    with shipped_manager(fleet, tmp_path) as (port, prometheus):
        started = time.time()
        seen_after: list[float] = []  # seconds from each stop to the manager's wait
        for turn, broker in enumerate(fleet.cluster.broker_ids):
            fleet.cluster.stop_broker(broker)
            down_at = time.monotonic()
            down_s = LONG_DOWN_S if turn == 0 else DOWN_S

            def waited_long_enough(
                down_at: float = down_at, down_s: float = down_s, turn: int = turn
            ) -> bool:
                fleet.pipeline.check_running()
                waiting = metric(port, "kmedic_waiting_brokers") == 1
                if waiting and len(seen_after) == turn:
                    seen_after.append(time.monotonic() - down_at)
                return waiting and time.monotonic() - down_at > down_s

            wait_for(
                waited_long_enough,
                timeout=down_s + 60,
                interval=1,
                what=f"the manager to wait for broker {broker} for {down_s}s",
            )
            fleet.cluster.restart(broker)
            wait_for(
                lambda: (
                    all(len(isr) == len(r) for r, isr in fleet.partitions().values())
                    and metric(port, "kmedic_waiting_brokers") == 0
                ),
                timeout=120,
                what=f"broker {broker} back in every ISR, the wait over",
            )
        # The registration watch wakes the manager when a broker leaves: with 30 s cycles the
        # wait starts within seconds of each stop, not up to a cycle later.
        assert max(seen_after) < WOKEN_WITHIN_S, seen_after
        window = f"{int(time.time() - started)}s"
        # Prometheus saw the waits (so the rules had something to fire on), and nothing paged.
        waited = prometheus.query(f"max_over_time(kmedic_waiting_brokers[{window}])")
        assert [float(w["value"][1]) for w in waited] == [1.0]
        paged = prometheus.query(f'count_over_time(ALERTS{{severity="page"}}[{window}])')
        assert paged == [], f"page alerts were active: {[p['metric'] for p in paged]}"
        ended = {f"wait over: broker {b} is back" for b in fleet.cluster.broker_ids}

        def every_wait_over_audited() -> list[AuditRecord]:
            # The gauge drops in the cycle that writes "wait over"; the record may land in the
            # audit topic a moment after the gauge is scraped.
            records = fleet.records(int(started * 1000))
            told = {r.summary for r in records if r.kind == "decision"}
            return records if ended <= told else []

        records = wait_for(
            every_wait_over_audited, timeout=60, interval=2, what="every wait's end audited"
        )
        assert [r.summary for r in records if r.kind.startswith("action_")] == []
        assert [seen for _, seen in fleet.sampler.between(started, time.time()) if seen] == []
        summaries = [r.summary for r in records if r.kind == "decision"]
        for broker in fleet.cluster.broker_ids:
            assert any(
                s.startswith("wait") and not s.startswith("wait over") and f"broker {broker} " in s
                for s in summaries
            ), f"the wait for broker {broker} is not audited: {summaries}"
    fleet.restore()


@contextmanager
def shipped_manager(
    fleet: Fleet, tmp_path: Path, **departures: Any
) -> Iterator[tuple[int, PrometheusServer]]:
    """One manager with the shipped defaults but ``departures`` (the cluster's two stopped)
    and a real Prometheus evaluating the shipped rules every second, from an even, settled
    cluster: once it leads, is scraped, finds nothing to do and no page alert is active or
    pending."""
    for name in MANAGERS:
        fleet.pipeline.stop_role(name)
    # The heal tests before left the brokers they killed emptier, and the shipped defaults
    # even a cluster out: start from an even, settled cluster.
    put_back(fleet.bootstrap, fleet.initial)
    port = process.free_ports(1)[0]
    shipped = {  # only what names this cluster and this machine; every policy as shipped
        "cluster": fleet.pipeline.cluster_name,
        "bootstrap": fleet.bootstrap,
        "zookeeper": {"zk_connect": fleet.cluster.zk_connect},
        "instance_id": "manager-shipped",
        "http": {"port": port},
        "audit": {"spool_dir": str(tmp_path / "spool")},
        **departures,
    }
    fleet.pipeline.start_role("manager-shipped", "manager", shipped)
    prometheus = PrometheusServer(tmp_path / "prometheus", [f"127.0.0.1:{port}"]).start()
    try:
        # The window opens once the start is over: before the first scrape the manager is
        # missing, and before it leads there is no leader. Neither is part of the test.
        wait_for(
            lambda: (
                prometheus.query("kmedic_is_leader == 1")
                and not prometheus.query('ALERTS{severity="page"}')
                and metric(port, "kmedic_last_decision", outcome="noop") == 1
            ),
            timeout=90,
            what="the shipped manager to lead, scraped, find nothing to do, and no page alert "
            "active or pending",
        )
        yield port, prometheus
    finally:
        prometheus.stop()
        fleet.pipeline.stop_role("manager-shipped")
