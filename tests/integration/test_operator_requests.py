"""Operator requests carried out on the real cluster by manager processes: `kmedic demote`
moves leadership off a broker; `kmedic drain` empties it, and the leader is SIGKILLed while
the drain runs, so the standby finishes it; `kmedic fill --wait` brings load back onto it;
`kmedic topics set-rf` raises a topic from RF 1 to 3, and one naming no topic fails. Each
request ends `done` (or `failed`), in the audit log and in `requests list`."""

from __future__ import annotations

import json
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import (
    create_placed_topic,
    kafka_conf,
    kmedic_process,
    read_audit,
    scrape,
    wait_for,
)
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import InvalidReplicationAssignmentError

from composition.pipeline import Pipeline
from kmedic.localcluster import process
from manager.audit.log import render_line
from manager.executor.admin_calls import AdminCalls
from manager.executor.cordons import BrokerCordons

pytestmark = pytest.mark.integration

TARGET = 4
SLOW_MB = 12  # on one partition of TARGET, copied at 1 MB/s: the drain runs for 12 s or more


def states(where: list[str]) -> list[str]:
    listed = kmedic_process("requests", "list", "--json", *where)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return [json.loads(line)["state"] for line in listed.stdout.splitlines()]


def running_plan(where: list[str]) -> dict[str, Any] | None:
    """The figures `requests list --json` gives with the running request: where the in-flight
    plan carrying it out stood when its leader last stored them."""
    listed = kmedic_process("requests", "list", "--json", *where)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    docs = [json.loads(line) for line in listed.stdout.splitlines()]
    plans = [d["plan"] for d in docs if d["state"] == "running" and "plan" in d]
    return plans[0]["progress"] if plans and plans[0]["progress"] else None


def cordon_of(bootstrap: str, broker: int) -> str:
    """The broker's ``cordoned.log.dirs`` ("" when unset)."""
    calls = AdminCalls(bootstrap, 10.0, 10.0)
    try:
        return BrokerCordons(calls).read(broker).value
    finally:
        calls.close()


def placed_on_target(bootstrap: str, topic: str) -> bool:
    """``topic`` created with its one partition on TARGET; False while Kafka refuses it (the
    controller has not heard yet that TARGET is no longer cordoned)."""
    try:
        create_placed_topic(bootstrap, topic, [[TARGET, 1 if TARGET != 1 else 2]])
    except InvalidReplicationAssignmentError:
        return False
    return True


def on_target(admin: AdminClient) -> tuple[int, int]:
    """(replicas on TARGET, partitions it leads), over every topic."""
    meta = admin.list_topics(timeout=10)
    parts = [p for t in meta.topics.values() for p in t.partitions.values()]
    return sum(TARGET in p.replicas for p in parts), sum(p.leader == TARGET for p in parts)


def led_alone(admin: AdminClient) -> list[str]:
    """The partitions whose only replica is TARGET: a demote keeps them there."""
    meta = admin.list_topics(timeout=10)
    return [
        f"{t.topic}:{p.id}"
        for t in meta.topics.values()
        for p in t.partitions.values()
        if list(p.replicas) == [TARGET]
    ]


def lagging_led(admin: AdminClient) -> list[str]:
    """The partitions TARGET leads with a replica out of the ISR."""
    meta = admin.list_topics(timeout=10)
    return [
        f"{t.topic}:{p.id} replicas {list(p.replicas)} isr {list(p.isrs)}"
        for t in meta.topics.values()
        for p in t.partitions.values()
        if p.leader == TARGET and set(p.replicas) - set(p.isrs)
    ]


def replicas_of(admin: AdminClient, topic: str) -> list[int]:
    return list(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].replicas)


def leader_and_replicas(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    part = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return part.leader, list(part.replicas)


def reorder_without_election(bootstrap: str, topic: str, replicas: list[int]) -> None:
    client = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        client.alter_partition_reassignments({KpTopicPartition(topic, 0): replicas})
    finally:
        client.close()


def test_demote_drain_and_fill_a_broker(healthy_cluster: Any, tmp_path: Path) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient(kafka_conf(bootstrap))
    name = f"requests-{uuid.uuid4().hex[:6]}"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    slow = f"{name}.slow"
    create_placed_topic(bootstrap, slow, [[TARGET, 1 if TARGET != 1 else 2]])
    # A partition already in the demoted order with TARGET still leading (a reorder applied
    # earlier without its election): the demote must elect, not take it as done. Made here so
    # the test does not depend on what earlier tests left on the shared cluster.
    reordered = f"{name}.reordered"
    create_placed_topic(bootstrap, reordered, [[TARGET, 2]])
    reorder_without_election(bootstrap, reordered, [2, TARGET])
    wait_for(
        lambda: leader_and_replicas(admin, reordered) == (TARGET, [2, TARGET]),
        timeout=30,
        what=f"{reordered}:0 in the demoted order with broker {TARGET} still leading",
    )
    producer = Producer(kafka_conf(bootstrap, {"acks": "all"}))
    for _ in range(SLOW_MB * 10):
        producer.produce(slow, b"x" * 100_000)
    assert producer.flush(60) == 0
    ports = dict(zip(("m1", "m2"), process.free_ports(2), strict=True))
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    where = ["--zk", cluster.zk_connect, "--cluster", name]
    try:
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        for instance, port in ports.items():
            pipeline.start_manager(
                instance,
                instance_id=instance,
                interval_s=2,
                topics=topics,
                # No Spark job: a fill needs loads to pass its gate, and none are measured here.
                policy={"min_valid_load_fraction": 0.0, "even_spread": False},
                executor={
                    "max_moves_per_broker": 10,
                    "max_moves_in_flight": 30,
                    "throttle_bytes_per_s": 1_000_000,
                    "progress_interval_s": 2,  # the plan's figures told every 2 s
                },
                http={"port": port},
            )
            if instance == "m1":  # m1 leads, m2 stands by
                wait_for(
                    lambda: (
                        pipeline.check_running() or scrape(ports["m1"], "kmedic_is_leader") == 1
                    ),
                    timeout=60,
                    what="m1 to lead",
                )
        held, led = on_target(admin)
        assert held and led, f"broker {TARGET} holds {held} replicas and leads {led}"
        # As before a restart: nothing TARGET leads is under-replicated (the shared cluster
        # holds earlier tests' topics; a follower out of the ISR cannot take a leadership).
        deadline = time.monotonic() + 60
        while (lagging := lagging_led(admin)) and time.monotonic() < deadline:
            time.sleep(1)
        assert not lagging, f"broker {TARGET} leads under-replicated partitions: {lagging}"
        alone = led_alone(admin)

        done = kmedic_process("demote", str(TARGET), "--wait", "120", *where)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "is done" in done.stdout.splitlines()[-1], done.stdout
        # What has no replica elsewhere stays led there (an earlier test's RF-1 topic).
        assert on_target(admin)[1] == len(alone), alone
        assert leader_and_replicas(admin, reordered) == (2, [2, TARGET])

        # The drain starts under m1; the slow partition is still copying when m1 dies.
        started = kmedic_process("drain", str(TARGET), *where)
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: states(where)[-1] == "running", timeout=60, what="the drain to run")
        # How far it is, as on-call sees it: `requests list`, and m1's gauges.
        progress = wait_for(
            lambda: running_plan(where), timeout=30, what="the drain's figures in requests list"
        )
        assert progress["total_bytes"] >= SLOW_MB * 1_000_000, progress
        assert 0 <= progress["copied_bytes"] < progress["total_bytes"], progress
        told = kmedic_process("requests", "list", *where).stdout.splitlines()
        assert told[-1].startswith("in-flight plan: ") and "copied (" in told[-1], told
        total = scrape(ports["m1"], "kmedic_plan_bytes", state="total")
        assert total is not None and total >= SLOW_MB * 1_000_000, total
        assert TARGET in replicas_of(admin, slow), "the slow partition moved before the kill"
        pipeline.stop_role("m1", signal.SIGKILL)
        wait_for(
            lambda: pipeline.check_running() or scrape(ports["m2"], "kmedic_is_leader") == 1,
            timeout=60,
            what="m2 to take over",
        )
        wait_for(lambda: states(where)[-1] == "done", timeout=240, what="m2 to finish the drain")
        assert on_target(admin)[0] == 0
        # Cordoned by the drain (KIP-1066), and still once it is done: the broker stays empty.
        assert cordon_of(bootstrap, TARGET) == "*"
        # A partition placed on it anyway (the cordon removed by hand, then a topic assigned
        # there) is moved off by the done drain, served again; the request stays done.
        alter = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            cleared = {"cordoned.log.dirs": (AlterConfigOp.DELETE, None)}
            resource = ConfigResource(ConfigResourceType.BROKER, str(TARGET), configs=cleared)
            alter.alter_configs([resource], incremental=True, raise_on_unknown=False)
        finally:
            alter.close()
        wait_for(lambda: cordon_of(bootstrap, TARGET) == "", timeout=30, what="the cordon cleared")
        landed = f"{name}.landed"
        wait_for(
            lambda: placed_on_target(bootstrap, landed),
            timeout=30,
            what=f"{landed} created on broker {TARGET}",
        )
        wait_for(lambda: on_target(admin)[0] == 0, timeout=120, what=f"{landed} moved off {TARGET}")
        assert states(where)[-1] == "done"

        done = kmedic_process("fill", str(TARGET), "--wait", "240", *where)
        assert done.returncode == 0, done.stdout + done.stderr
        assert on_target(admin)[0] > 0
        assert cordon_of(bootstrap, TARGET) == ""

        # A topic at RF 1 raised to 3 by the planner: each partition keeps its replica first
        # (the preferred leader stays) and gains two, on both racks.
        single = f"{name}.single"
        create_placed_topic(bootstrap, single, [[1], [2]])
        done = kmedic_process("topics", "set-rf", single, "--rf", "3", "--wait", "120", *where)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"(set_rf topic {single} to 3) is done" in done.stdout.splitlines()[-1]
        raised = admin.list_topics(single, timeout=10).topics[single].partitions
        for number, first in ((0, 1), (1, 2)):
            replicas = list(raised[number].replicas)
            assert len(set(replicas)) == 3 and replicas[0] == first, replicas
            assert {cluster.rack(b) for b in replicas} == {"/r1", "/r2"}, replicas
        wait_for(
            lambda: all(
                sorted(p.isrs) == sorted(p.replicas)
                for p in admin.list_topics(single, timeout=10).topics[single].partitions.values()
            ),
            timeout=60,
            what=f"{single} fully in sync at RF 3",
        )
        # A topic the cluster does not have: the leader fails the request, and --wait says so.
        missing = kmedic_process(
            "topics", "set-rf", f"{name}.none", "--rf", "2", "--wait", "60", *where
        )
        assert missing.returncode == 3, missing.stdout + missing.stderr  # not done
        assert f"is failed: the cluster has no topic {name}.none" in missing.stdout, missing.stdout
        # Given the manager's config the command knows the cluster and refuses at once what
        # could never be met, storing nothing (issue 72.1); a typo'd cluster stored a request
        # no manager would read (72.2).
        config = ["--config", str(tmp_path / "m2.yaml")]
        hopeless = kmedic_process("topics", "set-rf", f"{name}.none", "--rf", "2", *config)
        assert hopeless.returncode == 3, hopeless.stdout + hopeless.stderr
        assert f"refused, nothing stored: the cluster has no topic {name}.none" in hopeless.stderr
        # ... or given the bootstrap alone (plaintext; $KMEDIC_BOOTSTRAP as well).
        everything = kmedic_process(
            "drain", *map(str, cluster.broker_ids), *where, "--bootstrap", bootstrap
        )
        assert everything.returncode == 3, everything.stdout + everything.stderr
        assert "leaves 0 brokers, fewer than the replication factor" in everything.stderr
        typo = kmedic_process("drain", str(TARGET), "--zk", cluster.zk_connect, "--cluster", "deom")
        assert typo.returncode == 1, typo.stdout + typo.stderr
        assert "no cluster 'deom' in ZooKeeper" in typo.stderr and name in typo.stderr, typo.stderr

        # Decommission to the end: drained, stopped by the operator, unregistered by kmedic.
        started = kmedic_process("decommission", str(TARGET), *where)
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: on_target(admin) == (0, 0), timeout=180, what=f"broker {TARGET} drained")
        assert states(where)[-1] == "running"  # waiting for the operator to stop it
        assert cordon_of(bootstrap, TARGET) == "*"
        cluster.stop_broker(TARGET)
        wait_for(lambda: states(where)[-1] == "done", timeout=90, what="the decommission done")
        registered = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            # DescribeCluster lists fenced brokers too (KIP-1073): it is gone, not fenced.
            ids = [b["broker_id"] for b in registered.describe_cluster()["brokers"]]
        finally:
            registered.close()
        assert TARGET not in ids, ids
        # Gone, not dead: the manager counts no dead broker and pages for nothing.
        wait_for(
            lambda: scrape(ports["m2"], "kmedic_dead_brokers") == 0,
            timeout=30,
            what=f"broker {TARGET} forgotten, not dead",
        )
        cluster.restart(TARGET)  # the session's other tests use it (it registers anew)
        # A new broker with that id: the leader removes the decommission's cordon.
        wait_for(
            lambda: cordon_of(bootstrap, TARGET) == "",
            timeout=60,
            what=f"broker {TARGET}, registered anew, uncordoned",
        )

        assert states(where) == ["done", "done", "done", "done", "failed", "done"]
        told = [r.summary for r in read_audit(bootstrap, topics["actions"])]
        for kind in ("demote", "drain", "fill"):
            assert any(f"({kind} brokers {TARGET}) is running" in s for s in told), told
            assert any(f"({kind} brokers {TARGET}) is done" in s for s in told), told
        assert any(f"(set_rf topic {single} to 3) is done" in s for s in told), told
        assert any(s.startswith(f"unregistered broker {TARGET} from the cluster") for s in told)
        assert any(f"(decommission brokers {TARGET}) is done" in s for s in told), told
        cordoned = [s for s in told if s.startswith(f"cordoned broker {TARGET}: ")]
        uncordoned = [s for s in told if s.startswith(f"uncordoned broker {TARGET}: ")]
        # The drain's (by m1: m2 found it set) and the decommission's; the cordon cleared by
        # hand left the fill nothing to remove, the broker registered anew had one.
        assert len(cordoned) == 2 and len(uncordoned) == 1, told
        assert "(decommission) is " in cordoned[1], cordoned
        assert "a broker that registers again is new" in uncordoned[0], uncordoned
        # Each plan's end is told with its figures: everything copied.
        ended = [
            r
            for r in read_audit(bootstrap, topics["actions"])
            if r.summary.startswith("plan done in ")
        ]
        figures = [r.details["plan"] for r in ended]
        assert figures and all(f["copied_bytes"] == f["total_bytes"] for f in figures), figures
        # The drain ran under m1 and was finished by m2, with the newer epoch.
        records = read_audit(bootstrap, topics["actions"])
        drain = next(r for r in records if f"(drain brokers {TARGET}) is running" in r.summary)
        rid = drain.summary.split()[1]
        (ran,) = [
            r
            for r in records
            if r.summary.startswith(f"request {rid} (drain brokers {TARGET}) is running")
        ]
        (ended,) = [
            r
            for r in records
            if r.summary.startswith(f"request {rid} (drain brokers {TARGET}) is done")
        ]
        assert (ran.instance, ended.instance) == ("m1", "m2") and ended.epoch > ran.epoch
        # What on-call reads, kept beside the test's logs (docs/operations-requests.md quotes it).
        (tmp_path / "audit.txt").write_text("\n".join(render_line(r) for r in records) + "\n")
    finally:
        pipeline.stop()
