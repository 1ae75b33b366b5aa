"""The progress watchdog on a real cluster: a move's destination hangs (SIGSTOP) but stays
registered, so nothing but the watchdog can tell; the move is reported, cancelled and its
destination excluded, and the partition moved to another broker completes while the hung
one is still stopped. And a reassignment kmedic did not start that stops copying is reported
with its partition and age, never cancelled. The cluster is this module's own: its
controller fences a broker only after 90 s without heartbeats (the session cluster's does
after 6 s, which would make the hang a dead broker, the other path)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import create_placed_topic, kafka_conf, wait_for
from kafka import TopicPartition as KpTopicPartition

from kmedic.errors import KmedicError
from kmedic.kafka_admin import connect_admin
from kmedic.localcluster import ClusterSpec, LocalCluster
from manager.daemon.foreign_watch import ForeignWatch
from manager.executor.config import ExecutorConfig
from manager.executor.executor import Executor
from manager.executor.move_state import MoveState
from manager.executor.replica_sizes import ReplicaSizes
from manager.model.moves import Move
from manager.model.snapshot import Reassignment

pytestmark = pytest.mark.integration

FENCE_AFTER_MS = "90000"


@pytest.fixture(scope="module")
def slow_fencing_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    spec = ClusterSpec(
        brokers=4,
        racks=("/r1", "/r2"),
        controller_overrides={"broker.session.timeout.ms": FENCE_AFTER_MS},
        # Followers of the hung broker's partitions stay in the ISR meanwhile.
        broker_overrides={"replica.lag.time.max.ms": FENCE_AFTER_MS},
    )
    cluster = LocalCluster.start(spec, Path(tmp_path_factory.mktemp("stall")))
    try:
        yield cluster
    finally:
        cluster.stop()


def make_topic(bootstrap: str, replicas: list[int], megabytes: int) -> str:
    topic = f"stall-{uuid.uuid4().hex[:8]}"
    create_placed_topic(bootstrap, topic, [replicas])
    producer = Producer(kafka_conf(bootstrap, {"acks": "all", "linger.ms": 20}))
    payload = b"x" * 1024
    for i in range(megabytes * 1024):
        producer.produce(topic, value=payload)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return topic


def settled(ex: Executor, step: Callable[[], object]) -> bool:
    """One step or poll, then whether every move ended. A step that fails is tried again, as
    the daemon does: while broker 3 hangs, kafka-python may send a request to it and time out."""
    with contextlib.suppress(KmedicError):
        step()
    return ex.done()


def metadata(bootstrap: str, topic: str) -> tuple[set[int], list[int]]:
    """Registered, unfenced brokers and the topic's partition 0 replicas, read by librdkafka
    (which leaves a broker that does not answer to its own timeouts and asks another)."""
    meta = AdminClient(kafka_conf(bootstrap)).list_topics(topic, timeout=20)
    return set(meta.brokers), list(meta.topics[topic].partitions[0].replicas)


def replicas_become(bootstrap: str, topic: str, expected: list[int]) -> set[int]:
    """The registered brokers once partition 0's replicas read ``expected``. The controller
    answers a reassignment's change once it is committed; each broker applies it from the
    metadata log in its own time, and librdkafka may ask one that has not yet (a CI run read
    [1, 3, 2] just after the cancel)."""
    deadline = time.monotonic() + 30
    while True:
        brokers, replicas = metadata(bootstrap, topic)
        if replicas == expected or time.monotonic() > deadline:
            assert replicas == expected
            return brokers
        time.sleep(0.2)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        self.seen.append((kind, details))

    def kinds(self) -> list[str]:
        return [k for k, _ in self.seen]


def test_a_hung_destination_is_cancelled_excluded_and_the_partition_moved_elsewhere(
    slow_fencing_cluster: LocalCluster,
) -> None:
    cluster = slow_fencing_cluster
    bootstrap = cluster.bootstrap_servers
    # A leader and a follower (brokers 1, 2) that stay up; 4 MB to copy, throttled so the
    # copy to broker 3 is still running when it hangs.
    topic = make_topic(bootstrap, [1, 2], megabytes=4)
    events = Events()
    config = ExecutorConfig(
        throttle_bytes_per_s=2_000_000,
        stall_s=4,
        progress_sample_s=0.5,
        sample_timeout_s=2,
        poll_interval_s=0.5,
        request_timeout_s=5,
        admin_retry_s=20,
        stall_exclude_s=60,
    )
    ex = Executor(bootstrap, config, on_event=events)
    try:
        ex.submit([Move(topic, 0, (1, 3), 4 << 20)])
        ex.step()
        assert events.kinds() == ["action_started"]
        cluster.pause(3)  # registered and unfenced for 90 s: only the watchdog can tell

        wait_for(lambda: settled(ex, ex.poll), timeout=60, what="the watchdog to cancel the move")
        state = ex.states[(topic, 0)]
        assert state.status == "cancelled", state.error
        # Broker 3 answered before it hung (its baseline), then not at all.
        assert state.progress is not None and 3 in state.progress.copied
        assert "no progress for" in str(state.error) and "brokers [3]" in str(state.error)
        kinds = events.kinds()
        assert kinds[0] == "action_started" and kinds[-1] == "action_failed", kinds
        [alert] = [d for k, d in events.seen if k == "alert_raised"]
        assert alert["stalled"] == [3] and alert["idle_s"] >= 4, alert
        assert 3 in ex.stalled_destinations()
        brokers = replicas_become(bootstrap, topic, [1, 2])
        assert 3 in brokers  # never fenced: the watchdog alone saw it

        # The replan (the planner now keeps broker 3 out): broker 4 instead, which completes
        # while broker 3 still hangs.
        ex.submit([Move(topic, 0, (1, 4), 4 << 20)])
        wait_for(lambda: settled(ex, ex.step), timeout=120, what="the move to broker 4")
        state = ex.states[(topic, 0)]
        assert state.status == "completed", state.error
        replicas_become(bootstrap, topic, [1, 4])
        # The same watchdog never judged that move stalled. What its samples caught of the
        # copy is the machine's timing: the 4 MB take about 2 s, and a step that waits on the
        # hung broker may take longer (cc33 saw only the 0 B baseline before it completed).
        assert not state.stalled, state.progress
        assert [k for k in events.kinds() if k == "alert_raised"] == ["alert_raised"]
        # kmedic's rate on broker 3 waits while it is excluded (a request to it would hang);
        # it is the only throttle left.
        assert _rated(ex) == {3}
        cluster.resume(3)
        # After a failover, the successor removes it at once from the plan's record (the
        # same instance would once the exclusion ends: stall_exclude_s).
        successor = Executor(bootstrap, config)
        try:
            successor.adopt_throttles(ex.owned_throttles())
            wait_for(
                lambda: not successor.release_throttles(),
                timeout=60,
                what="the successor to remove kmedic's rate on broker 3",
            )
        finally:
            successor.close()
    finally:
        cluster.resume(3)
        ex.close()


def test_a_reassignment_kmedic_did_not_start_that_copies_nothing_is_reported(
    slow_fencing_cluster: LocalCluster,
) -> None:
    """Someone else's reassignment, throttled to 1 KiB/s: its follower copies at most one
    fetch (1 MiB) and then waits out its quota for about 1,000 s. The leader's watch,
    sampling the real brokers, reports it with its partition and age after ``stall_s``;
    nothing cancels it."""
    bootstrap = slow_fencing_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=4)
    # Started and throttled by an executor of the test's own: the watch only knows the
    # reassignment from the cluster's list, as kmedic knows an operator's.
    operator = Executor(
        bootstrap, ExecutorConfig(throttle_bytes_per_s=1_024, stall_s=3_000, request_timeout_s=5)
    )
    sizes = ReplicaSizes(bootstrap, 5.0)
    watch = ForeignWatch(sizes, stall_s=3)
    try:
        operator.submit([Move(topic, 0, (1, 4), 4 << 20)])
        operator.step()

        def listed() -> list[Reassignment]:
            ongoing = operator.read_cluster().ongoing
            return [
                Reassignment(
                    topic=t,
                    partition=p,
                    adding_replicas=tuple(info.get("adding_replicas", ())),
                    removing_replicas=tuple(info.get("removing_replicas", ())),
                    started_by_kmedic=False,
                )
                for (t, p), info in ongoing.items()
                if t == topic
            ]

        assert [r.adding_replicas for r in listed()] == [(4,)]
        alerts = wait_for(
            lambda: watch.look(listed(), int(time.time() * 1000)),
            timeout=60,
            what="the watch to report the reassignment that copies nothing",
        )
        [(name, sentence)] = alerts.items()
        assert name == f"stuck_foreign_reassignment:{topic}:0"
        assert sentence.startswith(
            f"the reassignment of {topic}:0 that kmedic did not start has copied nothing for "
        )
        assert "adding brokers [4]" in sentence and "running for at least" in sentence
        progress = watch.watched[(topic, 0)].progress
        # At most one fetch: none at all when the broker's throttle window still holds the
        # first test's copy to broker 4.
        assert progress is not None and progress.copied[4] < 4 << 20
        assert [r.adding_replicas for r in listed()] == [(4,)]  # still running: not cancelled
    finally:
        admin = connect_admin(bootstrap, client_id="kmedic-test", timeout_ms=10_000)
        try:  # KIP-455's cancel, as its operator would
            admin.alter_partition_reassignments({KpTopicPartition(topic, 0): None})
        finally:
            admin.close()
        with contextlib.suppress(KmedicError):
            wait_for(lambda: not operator.read_cluster().ongoing, timeout=30, what="no move")
            operator.release_throttles()
        sizes.close()
        operator.close()


def _rated(ex: Executor) -> set[int]:
    """The brokers this executor holds a throttle rate on."""
    return {b for b, _ in ex.owned_throttles().rates}
