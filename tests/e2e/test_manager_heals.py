"""End to end on the real cluster: agents, the Spark job and the manager as processes.

One pipeline serves the module; the tests run in order from the gentlest (refusals, which must
move nothing) to the heal, and each leaves every broker running for the next.
"""

from __future__ import annotations

import json
import re
import signal
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from e2e_support import (
    Placement,
    ask,
    audit_records,
    live_brokers,
    metric,
    partitions,
    placement,
    put_back,
    reassignments,
    under_replicated,
)
from helpers import kafka_conf, kmedic_process, wait_for, wait_until_usable
from kazoo.client import KazooClient
from prometheus_support import PrometheusServer

from composition.pipeline import Pipeline
from kmedic.localcluster import ClusterSpec, LocalCluster, process
from kmedic.traffic import PartitionRate, TrafficGenerator
from manager.audit.log import AuditRecord
from manager.monitor.feeds import LatestByKey

pytestmark = pytest.mark.e2e

GRACE_S = 10
SESSION_S = 40
CYCLE_S = 3
T = TypeVar("T")
TOPICS = {"e2e.rf3": 3, "e2e.rf2": 2}
PARTITIONS = 4


class Harness:
    def __init__(
        self, cluster: LocalCluster, pipeline: Pipeline, metrics_port: int, initial: Placement
    ) -> None:
        self.cluster = cluster
        self.pipeline = pipeline
        self.metrics_port = metrics_port
        self.initial = initial  # every partition's replicas before the first test

    def records(self, since_ms: int) -> list[AuditRecord]:
        return audit_records(self.cluster.bootstrap_servers, since_ms)

    def leader_of(self, topic: str, partition: int) -> int:
        return self._ask(
            lambda a: int(
                a.list_topics(topic, timeout=5).topics[topic].partitions[partition].leader
            )
        )

    def _ask(self, question: Callable[[AdminClient], T]) -> T:
        return ask(self.cluster.bootstrap_servers, question)

    def partitions(self) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
        return partitions(self.cluster.bootstrap_servers, TOPICS)

    def live_brokers(self) -> set[int]:
        return live_brokers(self.cluster.bootstrap_servers)

    def metric(self, name: str, **labels: str) -> float:
        value = metric(self.metrics_port, name, **labels)
        assert value is not None, f"the manager serves no /metrics on {self.metrics_port}"
        return value

    def restore(self) -> None:
        """Every broker running again (restarted together: while only some are back, the
        manager may rightly heal the others), every partition of every topic fully
        replicated: the audit topic's too, or the next test that kills a broker may take
        its last in-sync replica."""
        dead = [b for b in self.cluster.broker_ids if not self.cluster.is_alive(b)]
        for b in self.cluster.broker_ids:
            if b not in dead:
                self.cluster.resume(b)
        if dead:
            self.cluster.restart_many(dead)
        wait_for(
            lambda: under_replicated(self.cluster.bootstrap_servers) == [],
            timeout=120,
            what="every partition fully replicated",
        )
        # Brokers restarted together still register one after the other: in between, the
        # manager may rightly heal the one still down (the only dead broker, past its grace),
        # and the next test would find it empty. Once the manager sees every broker and such
        # a heal has run to its end, every partition goes back where it was.
        wait_for(
            lambda: metric(self.metrics_port, "kmedic_dead_brokers") in (None, 0.0),
            timeout=60,
            what="the manager to see every broker alive",  # None: no manager runs to heal
        )
        if metric(self.metrics_port, "kmedic_moves_in_flight") is not None:
            self.quiesce()
        if put_back(self.cluster.bootstrap_servers, self.initial):
            wait_for(
                lambda: under_replicated(self.cluster.bootstrap_servers) == [],
                timeout=120,
                what="every partition fully replicated where it was",
            )

    def quiesce(self) -> None:
        """Wait until kmedic runs no move and Kafka no reassignment, for two cycles running."""

        def quiet() -> bool:
            return (
                self.metric("kmedic_moves_in_flight") == 0 and reassignments_in_progress(self) == 0
            )

        for _ in range(2):
            wait_for(quiet, timeout=180, interval=1, what="no move in flight")
            time.sleep(CYCLE_S)


@pytest.fixture(scope="module")
def e2e_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of its own: the controller waits SESSION_S (40 s) before fencing a silent
    broker, far longer than a follower may lag (10 s, and up to 5 s more before the leader
    checks), so a paused broker drops out of ISRs while registered and stays so for several
    of the manager's cycles, each of which may wait out a request to the hung broker. Every
    SIGKILL waits for it too: longer buys the hung broker nothing more and costs each kill."""
    spec = ClusterSpec(
        brokers=4,
        racks=("/r1", "/r2"),
        controller_overrides={"broker.session.timeout.ms": str(SESSION_S * 1000)},
    )
    cluster = LocalCluster.start(spec, tmp_path_factory.mktemp("e2e-cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def harness(
    e2e_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Harness]:
    cluster = e2e_cluster
    workdir: Path = tmp_path_factory.mktemp("e2e")
    admin = AdminClient(kafka_conf(cluster.bootstrap_servers))
    futures = admin.create_topics([NewTopic(t, PARTITIONS, rf) for t, rf in TOPICS.items()])
    for f in futures.values():
        f.result(timeout=30)
    wait_until_usable(cluster.bootstrap_servers, list(TOPICS))
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    pipeline = Pipeline(cluster, workdir, cluster_name=name)
    metrics_port = process.free_ports(1)[0]
    rates = [PartitionRate(t, p, 20_000) for t in TOPICS for p in range(PARTITIONS)]
    traffic = TrafficGenerator(cluster.bootstrap_servers, rates).start()
    loads: LatestByKey[bytes] = LatestByKey(
        cluster.bootstrap_servers, "kmedic.replica-loads", lambda raw: raw
    ).start()
    leave_throttles_behind(admin, cluster.zk_connect, name)
    try:
        pipeline.start_agents(interval_s=2)
        pipeline.start_stream()
        pipeline.start_manager(**manager_settings(metrics_port))
        wanted = {f"{t}:{p}".encode() for t in TOPICS for p in range(PARTITIONS)}

        def loads_ready() -> bool:
            pipeline.check_running()
            return wanted <= set(loads.values())

        wait_for(loads_ready, timeout=420, interval=2, what="replica loads of every test partition")
        yield Harness(cluster, pipeline, metrics_port, placement(cluster.bootstrap_servers))
    finally:
        loads.stop()
        traffic.stop()
        pipeline.stop()


@pytest.fixture(scope="module")
def prometheus(
    harness: Harness, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusServer]:
    """A real Prometheus scraping the manager and the Spark job every second, with the
    shipped alert rules."""
    pipeline = harness.pipeline
    targets = [f"127.0.0.1:{harness.metrics_port}", f"127.0.0.1:{pipeline.stream_metrics_port}"]
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"), targets).start()
    try:
        wait_for(lambda: server.query("kmedic_is_leader == 1"), timeout=30, what="a scraped leader")
        # The Spark job is scraped too, its query running, under the cluster's name.
        cluster = pipeline.cluster_name
        wait_for(
            lambda: server.query(f'kmedic_stream_queries_active{{cluster="{cluster}"}} == 1'),
            timeout=30,
            what="the stream's metrics scraped",
        )
        assert not alert_states(server, "KmedicStreamStalled", cluster)
        yield server
    finally:
        server.stop()


def alert_states(server: PrometheusServer, name: str, cluster: str) -> set[str]:
    """The states (pending, firing) of one alert for one cluster, as Prometheus evaluates it."""
    return {a["state"] for a in server.active(name, cluster=cluster)}


def manager_settings(metrics_port: int) -> dict[str, Any]:
    return {
        "interval_s": CYCLE_S,
        # A refusal's alert record at once (held 2 minutes as shipped: tests/unit's to prove).
        "refusal_alert_after_s": 0,
        # Even spread off: a broker back from a heal test is emptier; filling it is not what
        # these tests count.
        "policy": {"dead_grace_ms": GRACE_S * 1000, "max_dead_brokers": 1, "even_spread": False},
        "http": {"port": metrics_port},
    }


THROTTLE_TOPIC = "e2e.rf2"
# Set by a leader that crashed mid-move, and recorded in its plan as kmedic's.
CRASHED_LEADERS = {
    "topic": {"leader.replication.throttled.replicas": "0:1,0:2"},
    "broker": {"leader.replication.throttled.rate": "1000"},
}
# Set by an operator on the same topic and broker: never kmedic's to remove.
OPERATORS = {
    "topic": {"follower.replication.throttled.replicas": "1:3"},
    "broker": {"follower.replication.throttled.rate": "5000000"},
}


def leave_throttles_behind(admin: AdminClient, zk_connect: str, cluster: str) -> None:
    """What a leader that crashed after its moves ended leaves: throttles it set, and a plan
    with no move left that records them; beside them, an operator's own throttles."""
    set_ = AlterConfigOpType.SET
    both = {kind: {**CRASHED_LEADERS[kind], **OPERATORS[kind]} for kind in ("topic", "broker")}
    resources = [
        ConfigResource(
            ResourceType.TOPIC,
            THROTTLE_TOPIC,
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=set_) for k, v in both["topic"].items()
            ],
        ),
        ConfigResource(
            ResourceType.BROKER,
            "1",
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=set_) for k, v in both["broker"].items()
            ],
        ),
    ]
    for f in admin.incremental_alter_configs(resources).values():
        f.result(timeout=30)
    record = {
        "replicas": [
            {
                "topic": THROTTLE_TOPIC,
                "config": "leader.replication.throttled.replicas",
                "entries": ["0:1", "0:2"],
            }
        ],
        "rates": [{"broker": 1, "config": "leader.replication.throttled.rate", "value": "1000"}],
    }
    plan = {"decision": "heal", "kind": "heal", "epoch": 1, "moves": [], "throttles": record}
    doc = {"epoch": 1, "instance": "crashed", "written_at": time.time(), "plan": plan}
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)
    try:
        zk.create(f"/kmedic/{cluster}/manager/plan", json.dumps(doc).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()


def throttle_configs(admin: AdminClient) -> dict[str, str]:
    found = {}
    for res in (
        ConfigResource(ResourceType.TOPIC, THROTTLE_TOPIC),
        ConfigResource(ResourceType.BROKER, "1"),
    ):
        entries = admin.describe_configs([res])[res].result(timeout=30)
        found.update(
            {
                k: v.value
                for k, v in entries.items()
                if "throttled" in k and v.value not in (None, "")
            }
        )
    return found


def test_throttles_a_crashed_leader_recorded_are_removed_and_an_operators_kept(
    harness: Harness,
) -> None:
    wait_for(
        lambda: harness._ask(throttle_configs) == {**OPERATORS["topic"], **OPERATORS["broker"]},
        timeout=30,
        what="only the operator's throttles left",
    )


def test_snapshots_replay_through_plan(harness: Harness, tmp_path: Path) -> None:
    """`kmedic snapshot` saves what the manager sees; `kmedic plan` replays it. The daemon's
    own per-cycle snapshot replays the same way."""
    config = tmp_path / "manager.yaml"
    # The running manager's own settings (its policy above all): a replay under other
    # settings may rightly decide otherwise, e.g. even out the cluster.
    settings = manager_settings(0)
    config.write_text(yaml.safe_dump(harness.pipeline.manager_config(**settings)))
    saved = tmp_path / "snap.json"
    done = kmedic_process(
        "snapshot", "--config", str(config), "--out", str(saved), "--feeds-wait", "15"
    )
    assert done.returncode == 0, done.stderr
    assert "4 brokers" in done.stdout
    for path in (saved, harness.pipeline.workdir / "snapshot.json"):
        plan = kmedic_process("plan", "--snapshot", str(path), "--json")
        assert plan.returncode in (0, 2), plan.stderr
        decision = json.loads(plan.stdout)
        assert decision["outcome"] in ("noop", "refuse")
        # Kafka places the topics it creates from a random first broker, so the cluster may
        # start uneven past the spread's band (2026-12-02: broker 4 at 0.71x the average). Even
        # spread is off here: then the replay names the moves it would make, and makes none.
        kept = "would act (disabled by policy.goals.even_spread)"
        assert decision["actions"] == [] or decision["summary"].startswith(kept), decision
        assert {b["broker"] for b in decision["loads"]} == {1, 2, 3, 4}


def reassignments_in_progress(h: Harness) -> int:
    return len(reassignments(h.cluster.bootstrap_servers))


def test_unexplained_under_replication_is_refused_and_pages_only_once_it_lasts(
    harness: Harness, prometheus: PrometheusServer
) -> None:
    """A broker that hangs (SIGSTOP, like a long GC pause) drops out of the ISRs while it is
    still registered: not a dead broker, so the manager must refuse, and move nothing. The
    page waits, in the audit log as in the shipped rule, for the spell to last
    (``lag_alert_after_s``, 5 minutes): this one ends when the controller fences the broker."""
    h = harness
    start_ms = int(time.time() * 1000)
    placement_before = {k: r for k, (r, _) in h.partitions().items()}
    audit_leader = h.leader_of("kmedic.actions", 0)
    # A follower of some test partition that does not lead the audit topic (a hung audit
    # leader is the audit-failover story, told elsewhere).
    victim = next(
        r[i] for r in placement_before.values() for i in range(1, len(r)) if r[i] != audit_leader
    )
    h.cluster.pause(victim)
    fenced_at = time.monotonic() + SESSION_S
    try:
        wait_for(
            lambda: any(victim in r and victim not in isr for r, isr in h.partitions().values()),
            timeout=SESSION_S - 10,
            what=f"paused broker {victim} to fall out of an ISR",
        )
        assert victim in h.live_brokers(), "still registered: the controller has not fenced it"
        wait_for(
            lambda: (
                h.metric(
                    "kmedic_decision_reasons_total",
                    outcome="refuse",
                    reason="unexplained_under_replication",
                )
                > 0
            ),
            # Until the controller fences the hung broker, when it becomes a dead one; a
            # cycle may wait out requests to it meanwhile.
            timeout=fenced_at - time.monotonic() - 2,
            what="a refusal for unexplained under-replication",
        )
        assert h.metric("kmedic_under_replicated_partitions", explained="false") > 0
        # The shipped rule sees it in the scraped series (pending: it fires after 5 min).
        wait_for(
            lambda: alert_states(
                prometheus, "KmedicUnexplainedUnderReplication", h.pipeline.cluster_name
            ),
            timeout=15,
            what="Prometheus to evaluate KmedicUnexplainedUnderReplication as active",
        )
    finally:
        h.cluster.resume(victim)
        h.restore()

    def audited() -> list[AuditRecord]:
        # With the hung broker still in the audit topic's ISR, acks=all writes time out and
        # go to the spool; they are replayed in order once the broker is back.
        records = h.records(start_ms)
        refused = any(
            r.kind == "decision"
            and r.summary.startswith("refuse")
            and any(x.startswith("unexplained_under_replication") for x in r.reasons)
            for r in records
        )
        return records if refused else []

    records = wait_for(audited, timeout=60, interval=2, what="the refusal audited")
    assert not [
        r.summary
        for r in records
        if r.kind == "alert_raised" and "unexplained_under_replication" in " ".join(r.reasons)
    ]
    assert not [r for r in records if r.kind == "action_started"]
    assert reassignments_in_progress(h) == 0
    assert {k: r for k, (r, _) in h.partitions().items()} == placement_before


def test_two_dead_brokers_over_the_maximum_are_refused(
    harness: Harness, prometheus: PrometheusServer
) -> None:
    h = harness
    start_ms = int(time.time() * 1000)
    placement_before = {k: r for k, (r, _) in h.partitions().items()}
    try:
        # Stopped (a controlled shutdown: gone from the metadata at once), not SIGKILLed: the
        # count of dead brokers is what this test is about, and this cluster's controller
        # waits SESSION_S before it fences a killed broker (the SIGKILL story is
        # test_sigkilled_broker_is_healed_onto_live_brokers_across_racks's).
        h.cluster.stop_broker(3)
        h.cluster.stop_broker(4)
        wait_for(
            lambda: not ({3, 4} & h.live_brokers()),
            timeout=60,
            what="brokers 3, 4 gone",
        )

        def counted(outcome: str) -> list[AuditRecord]:
            return [
                r
                for r in h.records(start_ms)
                if r.kind == "decision"
                and r.summary.startswith(outcome)
                and any(x.startswith("too_many_dead_brokers") for x in r.reasons)
            ]

        # Inside their grace the two may yet come back: a wait. Past it, a refusal and a page.
        wait_for(
            lambda: counted("refuse"),
            timeout=GRACE_S + 4 * CYCLE_S + 30,
            what="a refusal for too many dead brokers",
        )
        records = h.records(start_ms)
        waits, refusals = counted("wait"), counted("refuse")
        assert waits, "the count was not a wait while the brokers were inside their grace"
        assert max(w.time_ms for w in waits) < min(r.time_ms for r in refusals)
        alerts = [
            r
            for r in records
            if r.kind == "alert_raised" and "too_many_dead_brokers" in " ".join(r.reasons)
        ]
        assert alerts and min(a.time_ms for a in alerts) >= min(r.time_ms for r in refusals)
        assert not [r for r in records if r.kind == "action_started"]
        assert reassignments_in_progress(h) == 0
        assert {k: r for k, (r, _) in h.partitions().items()} == placement_before
        assert h.metric("kmedic_dead_brokers") == 2
        # A real Prometheus, scraping the manager, evaluates the shipped rules the same way:
        # the refusal is an alert (pending for its first 2 minutes), and nothing says the
        # manager is missing or leaderless.
        cluster = h.pipeline.cluster_name
        wait_for(
            lambda: alert_states(prometheus, "KmedicRefusingToHeal", cluster),
            timeout=15,
            what="Prometheus to evaluate KmedicRefusingToHeal as active",
        )
        assert not alert_states(prometheus, "KmedicNoLeader", cluster)
        assert not prometheus.active("KmedicManagerMissing")
        assert prometheus.query(f'kmedic_dead_brokers{{cluster="{cluster}"}} == 2')
    finally:
        h.restore()
    wait_for(
        lambda: not alert_states(prometheus, "KmedicRefusingToHeal", h.pipeline.cluster_name),
        timeout=60,
        what="KmedicRefusingToHeal to clear once the brokers are back",
    )


# What kmedic writes to a cluster, as the brokers count the requests they receive.
WRITE_REQUESTS = (
    "AlterPartitionReassignments",
    "IncrementalAlterConfigs",
    "ElectLeaders",
    "AlterReplicaLogDirs",
)


def cluster_writes(h: Harness, brokers: list[int]) -> dict[str, float]:
    """Requests of each write type the brokers received (their JMX exporters' counters)."""
    totals = dict.fromkeys(WRITE_REQUESTS, 0.0)
    for b in brokers:
        port = h.cluster.broker(b).exporter_port
        assert port is not None
        for request in WRITE_REQUESTS:
            seen = metric(port, "kafka_network_requestmetrics_requests_total", request=request)
            assert seen is not None, f"broker {b}'s exporter does not answer"
            totals[request] += seen
    return totals


def set_mode(h: Harness, mode: str) -> None:
    where = ["--zk", h.cluster.zk_connect, "--cluster", h.pipeline.cluster_name]
    done = kmedic_process("mode", mode, "--why", "e2e", *where, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: h.metric("kmedic_mode", mode=mode) == 1, timeout=30, what=f"{mode} mode")


def clear_mode(h: Harness) -> None:
    """`kmedic mode --clear`: the config's mode (act, here) holds again."""
    where = ["--zk", h.cluster.zk_connect, "--cluster", h.pipeline.cluster_name]
    done = kmedic_process("mode", "--clear", *where, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("mode: cleared (observe, set by "), done.stdout
    wait_for(lambda: h.metric("kmedic_mode", mode="act") == 1, timeout=30, what="act mode")


def test_sigkilled_broker_is_healed_onto_live_brokers_across_racks(
    harness: Harness, prometheus: PrometheusServer
) -> None:
    """First in observe mode: the heal is decided and audited as would_act, the brokers
    receive no write request, and a real Prometheus with the shipped rules evaluates the
    page for the heal held back (issue 71.0); then `kmedic mode --clear` hands back to the
    config's act mode (issue 71.2) and kmedic heals."""
    h = harness
    victim = 3
    h.quiesce()
    start_ms = int(time.time() * 1000)
    hosted = [k for k, (r, _) in h.partitions().items() if victim in r]
    assert hosted, "the victim hosts replicas of the test topics"
    set_mode(h, "observe")
    survivors = [b for b in h.cluster.broker_ids if b != victim]
    writes_before = cluster_writes(h, survivors)
    killed_at = time.monotonic()
    h.cluster.kill(victim)
    wait_for(lambda: victim not in h.live_brokers(), timeout=SESSION_S + 30, what="broker 3 fenced")
    absent_at = time.monotonic()
    try:

        def would_act() -> list[AuditRecord]:
            # The heal's: a calm cluster's repair, switched off, is a would_act too.
            found = [
                r
                for r in h.records(start_ms)
                if r.kind == "would_act" and "heal dead brokers" in r.summary
            ]
            return found if len(found) >= 2 else []  # two cycles observed

        observed = wait_for(
            would_act, timeout=GRACE_S + 4 * CYCLE_S + 30, what="the heal decided as would_act"
        )
        assert "would act (observe mode): heal dead brokers 3" in observed[0].summary
        planned = {(a["topic"], a["partition"]) for a in observed[0].details["actions"]}
        assert set(hosted) <= planned  # the full plan is in the audit log
        assert not [r for r in h.records(start_ms) if r.kind.startswith("action_")]
        assert cluster_writes(h, survivors) == writes_before, "observe mode wrote to the cluster"
        assert reassignments_in_progress(h) == 0
        # The page for what observe mode holds back: active in Prometheus (pending for its
        # first 2 minutes; promtool's test holds the rule to firing after them).
        cluster = h.pipeline.cluster_name
        assert h.metric("kmedic_would_heal") == 1
        wait_for(
            lambda: alert_states(prometheus, "KmedicObserveModeWouldHeal", cluster),
            timeout=15,
            what="Prometheus to evaluate KmedicObserveModeWouldHeal as active",
        )
        assert not alert_states(prometheus, "KmedicRefusingToHeal", cluster)
        clear_mode(h)

        def started() -> list[AuditRecord]:
            return [
                r
                for r in h.records(start_ms)
                if r.kind == "action_started" and victim in (r.before or {}).get("replicas", [])
            ]

        wait_for(started, timeout=GRACE_S + 2 * CYCLE_S + 30, what="the heal to start")
        took = time.monotonic() - absent_at
        print(f"heal started {took:.1f}s after broker {victim} left the metadata")
        # Never before the grace period is over. The test sees the broker gone later than the
        # manager does (CI: 3 s later; a fresh admin client may first try the dead broker), so
        # the grace is checked from the kill, and against the wait the manager announced. How
        # soon after is a speed figure, not a test: the wait above bounds it.
        assert time.monotonic() - killed_at >= GRACE_S
        decisions = [r for r in h.records(start_ms) if r.kind == "decision"]
        waited = next(r for r in decisions if r.summary.startswith(f"wait: broker {victim} "))
        acted = next(r for r in decisions if r.summary.startswith("act"))
        left = re.search(r"\((\d+) s left\)", waited.summary)
        assert left, waited.summary
        # The announced time left is rounded to whole seconds.
        held_ms = acted.details["snapshot_taken_at"] - waited.details["snapshot_taken_at"]
        assert held_ms >= (int(left.group(1)) - 1) * 1000, (waited.summary, held_ms)

        def healed() -> bool:
            parts = h.partitions()
            return all(
                victim not in r and len(isr) == len(r) == TOPICS[t]
                for (t, _), (r, isr) in parts.items()
            )

        wait_for(
            healed, timeout=180, interval=2, what="every partition fully replicated on live brokers"
        )
        for (t, p), (replicas, _) in h.partitions().items():
            racks = {h.cluster.rack(b) for b in replicas}
            assert len(racks) == 2, f"{t}:{p} replicas {replicas} are not spread over both racks"
        wanted = {f"{t}:{p}" for t, p in hosted}

        def completions_audited() -> list[AuditRecord]:
            # The executor notices a finished reassignment at its next step, a cycle later.
            records = h.records(start_ms)
            done = {p for r in records if r.kind == "action_completed" for p in r.partitions}
            return records if wanted <= done else []

        records = wait_for(completions_audited, timeout=30, what="every completion audited")
        decisions = [r for r in records if r.kind == "decision" and r.summary.startswith("act")]
        assert decisions and "heal" in decisions[0].summary
        # Both signals of the death are in the record: metadata and the agent's stats.
        evidence = [x for x in decisions[0].reasons if x.startswith("dead_broker_evidence")]
        assert evidence and "broker 3: absent from cluster metadata" in evidence[0]
        assert "stats" in evidence[0]
        assert h.metric("kmedic_decisions_total", outcome="act") >= 1
        assert h.metric("kmedic_actions_total", result="completed") >= len(hosted)
        assert h.metric("kmedic_dead_brokers") == 1
        # The status page tells the same story: the dead broker and the completed moves.
        base = f"http://127.0.0.1:{h.metrics_port}"
        status = json.loads(urllib.request.urlopen(base + "/status.json", timeout=10).read())
        assert status["leader"] is True
        assert [b["alive"] for b in status["brokers"] if b["id"] == victim] == [False]
        assert any(r["kind"] == "action_completed" for r in status["recent_audit"])
        page = urllib.request.urlopen(base + "/status", timeout=10).read().decode()
        assert "DEAD since" in page and "action_completed" in page
        # The counters that stayed still in observe mode see kmedic's writes once it acts.
        after = cluster_writes(h, survivors)
        assert after["AlterPartitionReassignments"] > writes_before["AlterPartitionReassignments"]
        switched = [r for r in records if r.summary.startswith("mode observe -> act")]
        assert len(switched) == 1, [r.summary for r in records if r.summary.startswith("mode")]
        assert "(from the config; the run-time mode was cleared)" in switched[0].summary
        assert h.metric("kmedic_would_heal") == 0
        wait_for(
            lambda: not alert_states(prometheus, "KmedicObserveModeWouldHeal", cluster),
            timeout=30,
            what="KmedicObserveModeWouldHeal to clear once kmedic acts",
        )
    finally:
        # Back to act for the next tests, without waiting on a manager that may have failed.
        where = ["--zk", h.cluster.zk_connect, "--cluster", h.pipeline.cluster_name]
        kmedic_process("mode", "act", *where, timeout=60)
        h.restore()


def test_a_restarted_manager_keeps_the_hourly_move_budget(harness: Harness) -> None:
    """The moves of the heal count against the hourly budget after the manager is SIGKILLed
    and started again: the history is stored with the plan in ZooKeeper, not in memory."""
    h = harness
    snapshot = h.pipeline.workdir / "snapshot.json"

    def moves_last_hour(after: float) -> int | None:
        if not snapshot.exists() or snapshot.stat().st_mtime <= after:
            return None
        doc = json.loads(snapshot.read_text())
        return int(doc["recent_actions"]["moves_last_hour"])

    before = wait_for(lambda: moves_last_hour(0), timeout=30, what="the manager's snapshot")
    assert before >= 1, "the heal's moves are counted"
    h.pipeline.stop_role("manager", signal.SIGKILL)
    wait_for(lambda: not h.pipeline.roles["manager"].running(), timeout=10, what="manager killed")
    restarted = time.time()
    h.pipeline.start_manager(**manager_settings(h.metrics_port))
    # The new instance leads once the killed one's ZooKeeper session expires.
    after = wait_for(
        lambda: moves_last_hour(restarted), timeout=60, what="a snapshot of the new manager"
    )
    assert after >= before, f"the budget was reset: {before} moves before, {after} after"
    h.pipeline.check_running()
