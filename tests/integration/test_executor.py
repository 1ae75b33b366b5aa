"""The executor on the real cluster: throttled reassignment to completion, preferred leader,
throttles removed; a move that stops copying cancelled by the progress watchdog and replanned;
a destination broker dying mid-move; an operator's own throttles left alone."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ResourceType,
)
from helpers import kafka_conf, wait_for
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import AlterConfigOp, ConfigResourceType, KafkaAdminClient
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import NewTopic as KpNewTopic

from manager.executor.config import ExecutorConfig
from manager.executor.executor import Executor
from manager.executor.move_state import MoveState
from manager.model.moves import Move, TopicPartition
from manager.throttling.ownership import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)

pytestmark = pytest.mark.integration


def run_moves(ex: Executor, timeout_s: float) -> dict[TopicPartition, MoveState]:
    """Step ``ex`` until every submitted move finished (completed, failed or cancelled)."""
    deadline = time.monotonic() + timeout_s
    while True:
        ex.step()
        if ex.done():
            return dict(ex.states)
        if time.monotonic() > deadline:
            active = ", ".join(s.move.key for s in ex.active())
            raise AssertionError(f"moves still running after {timeout_s:.0f}s: {active}")
        time.sleep(ex.config.poll_interval_s)


def make_topic(bootstrap: str, replicas: list[int], megabytes: float) -> str:
    topic = f"exec-{uuid.uuid4().hex[:8]}"
    # kafka-python here: confluent-kafka 2.16 rejects an explicit replica assignment locally.
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([KpNewTopic(topic, replica_assignments={0: replicas})])
    finally:
        admin.close()
    producer = Producer(kafka_conf(bootstrap, {"acks": "all", "linger.ms": 20}))
    payload = b"x" * 1024
    for i in range(int(megabytes * 1024)):
        producer.produce(topic, value=payload, key=str(i).encode())
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return topic


def dynamic_configs(bootstrap: str, kind: Any, name: str) -> dict[str, str]:
    admin = AdminClient(kafka_conf(bootstrap))
    res = ConfigResource(kind, name)
    entries = admin.describe_configs([res])[res].result(30)
    return {k: e.value for k, e in entries.items() if not e.is_default and e.value}


def throttle_keys(bootstrap: str, topic: str, brokers: list[int]) -> dict[str, dict[str, str]]:
    found = {}
    topic_cfg = dynamic_configs(bootstrap, ResourceType.TOPIC, topic)
    found[topic] = {k: v for k, v in topic_cfg.items() if k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)}
    for b in brokers:
        cfg = dynamic_configs(bootstrap, ResourceType.BROKER, str(b))
        found[f"broker {b}"] = {k: v for k, v in cfg.items() if k in (LEADER_RATE, FOLLOWER_RATE)}
    return {k: v for k, v in found.items() if v}


def partition_state(ex: Executor, topic: str) -> tuple[tuple[int, ...], int, bool]:
    view = ex.read_cluster([topic])
    tp = (topic, 0)
    return view.replicas[tp], view.leaders[tp], tp in view.ongoing


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        self.seen.append((kind, state.move.key, details))

    def kinds(self) -> list[str]:
        return [k for k, _, _ in self.seen]


@pytest.fixture
def executor_factory(healthy_cluster: Any) -> Iterator[Any]:
    made: list[Executor] = []

    def build(config: ExecutorConfig, events: Events) -> Executor:
        ex = Executor(healthy_cluster.bootstrap_servers, config, on_event=events)
        made.append(ex)
        return ex

    yield build
    for ex in made:
        ex.close()


def test_reassignment_is_throttled_tracked_and_cleaned_up(
    healthy_cluster: Any, executor_factory: Any
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=1)
    events = Events()
    ex = executor_factory(
        ExecutorConfig(throttle_bytes_per_s=20_000_000, poll_interval_s=0.5), events
    )
    ex.submit([Move(topic, 0, (3, 1))])  # broker 2's replica moves to broker 3, 3 leads

    ex.step()
    assert events.kinds() == ["action_started"]
    assert throttle_keys(bootstrap, topic, [1, 2, 3, 4]) == {
        topic: {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:3"},
        "broker 1": {LEADER_RATE: "20000000", FOLLOWER_RATE: "20000000"},
        "broker 2": {LEADER_RATE: "20000000", FOLLOWER_RATE: "20000000"},
        "broker 3": {LEADER_RATE: "20000000", FOLLOWER_RATE: "20000000"},
    }

    states = run_moves(ex, timeout_s=90)
    state = states[(topic, 0)]
    assert state.status == "completed", state.error
    assert events.kinds()[-1] == "action_completed"
    assert state.details["preferred_leader_election"] == "broker 3 leads"
    wait_for(
        lambda: partition_state(ex, topic) == ((3, 1), 3, False),
        timeout=30,
        what="replicas [3, 1] led by broker 3",
    )
    assert throttle_keys(bootstrap, topic, [1, 2, 3, 4]) == {}


def test_a_move_already_in_place_still_hands_leadership_to_its_first_replica(
    healthy_cluster: Any, executor_factory: Any
) -> None:
    # A demote's reorder applied earlier, without its election: [2, 1], broker 1 leading.
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=0.1)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_partition_reassignments({KpTopicPartition(topic, 0): [2, 1]})
    finally:
        admin.close()
    events = Events()
    ex = executor_factory(ExecutorConfig(throttle_bytes_per_s=None, poll_interval_s=0.5), events)
    wait_for(
        lambda: partition_state(ex, topic) == ((2, 1), 1, False),
        timeout=30,
        what="replicas [2, 1] with broker 1 still leading",
    )
    ex.submit([Move(topic, 0, (2, 1))])
    state = run_moves(ex, timeout_s=30)[(topic, 0)]
    assert state.status == "completed", state.error
    assert state.details["preferred_leader_election"] == "broker 2 leads"
    wait_for(lambda: partition_state(ex, topic)[1] == 2, timeout=30, what="broker 2 to lead")


def test_a_move_that_stops_copying_is_reported_cancelled_and_replanned_elsewhere(
    healthy_cluster: Any, executor_factory: Any
) -> None:
    # An operator's throttle of 1 kB/s on broker 4, for every replica of the topic: its copy
    # gets at most one fetch and then stalls (the quota waits out its whole window).
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=4)
    set_configs(bootstrap, ConfigResourceType.TOPIC, topic, {FOLLOWER_REPLICAS: "*"})
    set_configs(bootstrap, ConfigResourceType.BROKER, "4", {FOLLOWER_RATE: "1024"})
    try:
        events = Events()
        config = ExecutorConfig(
            throttle_bytes_per_s=None, stall_s=2, progress_sample_s=0.5, poll_interval_s=0.5
        )
        ex = executor_factory(config, events)
        ex.submit([Move(topic, 0, (1, 4), 4 << 20)])
        state = run_moves(ex, timeout_s=60)[(topic, 0)]
        assert state.status == "cancelled", state.error
        assert "no progress for" in str(state.error) and "brokers [4]" in str(state.error)
        assert events.kinds() == ["action_started", "alert_raised", "action_failed"]
        alert = events.seen[1][2]
        assert alert["stalled"] == [4] and alert["idle_s"] >= 2 and alert["adding"] == [4], alert
        assert set(ex.stalled_destinations()) == {4}
        # Judged on broker 4's own answers (a sampler that could not ask would judge nothing).
        assert state.progress is not None and 4 in state.progress.copied
        wait_for(
            lambda: partition_state(ex, topic)[0::2] == ((1, 2), False),
            timeout=30,
            what="the cancelled move to leave replicas [1, 2]",
        )
        # The replan keeps broker 4 out (the planner reads the mark); broker 3 completes it.
        ex.submit([Move(topic, 0, (1, 3), 4 << 20)])
        state = run_moves(ex, timeout_s=90)[(topic, 0)]
        assert state.status == "completed", state.error
        assert partition_state(ex, topic)[0] == (1, 3)
    finally:  # the operator's rate is theirs to remove: kmedic leaves it (healthy_cluster)
        set_configs(bootstrap, ConfigResourceType.BROKER, "4", {FOLLOWER_RATE: None})


def test_destination_dying_mid_move_fails_the_move_for_replanning(
    healthy_cluster: Any, executor_factory: Any
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=4)
    events = Events()
    ex = executor_factory(ExecutorConfig(throttle_bytes_per_s=20_000, poll_interval_s=0.5), events)
    ex.submit([Move(topic, 0, (1, 4))])
    ex.step()
    assert events.kinds() == ["action_started"]
    healthy_cluster.kill(4)

    def failed() -> bool:
        ex.step()
        return ex.done()

    wait_for(failed, timeout=60, interval=0.5, what="the executor to notice broker 4 died")
    state = ex.states[(topic, 0)]
    assert state.status == "failed"
    assert state.error == "destination broker 4 is not alive"
    assert events.kinds() == ["action_started", "action_failed"]
    wait_for(
        lambda: partition_state(ex, topic)[0::2] == ((1, 2), False),
        timeout=30,
        what="the abandoned move to leave replicas [1, 2]",
    )
    assert throttle_keys(bootstrap, topic, [1, 2]) == {}
    # Broker 4's throttle rate can only be removed once it is back; every step retries.
    assert _rated(ex) == {4}
    healthy_cluster.restart(4)
    wait_for(
        lambda: ex.step() is None and not _rated(ex),
        timeout=60,
        what="the throttle on broker 4 to be removed after its restart",
    )
    assert throttle_keys(bootstrap, topic, [4]) == {}


def test_a_new_leader_adopts_a_running_move_and_its_throttles(
    healthy_cluster: Any, executor_factory: Any
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=4)
    slow_events, new_events, late_events = Events(), Events(), Events()
    slow = executor_factory(ExecutorConfig(throttle_bytes_per_s=20_000), slow_events)
    slow.submit([Move(topic, 0, (1, 3))])
    slow.step()
    assert slow_events.kinds() == ["action_started"]
    slow.close()  # the old leader is gone; its reassignment and throttles stay in Kafka

    new = executor_factory(
        ExecutorConfig(throttle_bytes_per_s=50_000_000, poll_interval_s=0.5), new_events
    )
    # What the stored plan tells the new leader: these throttles are kmedic's.
    new.adopt_throttles(slow.owned_throttles())
    new.submit([Move(topic, 0, (1, 3))], adopted=True)
    new.step()
    assert new_events.kinds() == ["action_progress"]
    assert new_events.seen[0][2]["adopted"] is True
    assert new.states[(topic, 0)].original == (1, 2)
    assert throttle_keys(bootstrap, topic, [3])["broker 3"][LEADER_RATE] == "50000000"
    state = run_moves(new, timeout_s=90)[(topic, 0)]
    assert state.status == "completed", state.error
    assert throttle_keys(bootstrap, topic, [1, 2, 3]) == {}

    # A plan adopted after the move finished: recognised as done, nothing issued.
    late = executor_factory(ExecutorConfig(poll_interval_s=0.5), late_events)
    late.submit([Move(topic, 0, (1, 3))], adopted=True)
    late.step()
    assert late_events.kinds() == ["action_completed"]
    assert late.states[(topic, 0)].original == (1, 3)
    assert late.done() and not _rated(late)


def set_configs(bootstrap: str, kind: Any, name: str, values: dict[str, str | None]) -> None:
    """Change configs as an operator would (None: delete), and wait until Kafka shows it."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    ops = {
        k: (AlterConfigOp.SET, v) if v is not None else (AlterConfigOp.DELETE, None)
        for k, v in values.items()
    }
    try:
        admin.alter_configs(
            [KpConfigResource(kind, name, configs=ops)], incremental=True, raise_on_unknown=False
        )
    finally:
        admin.close()
    shown = ResourceType.TOPIC if kind == ConfigResourceType.TOPIC else ResourceType.BROKER
    wanted = {k: v for k, v in values.items() if v is not None}
    wait_for(
        lambda: (
            all(dynamic_configs(bootstrap, shown, name).get(k) == v for k, v in wanted.items())
            and not any(
                k in dynamic_configs(bootstrap, shown, name) for k in values if k not in wanted
            )
        ),
        timeout=30,
        what=f"{values} on {name} to be visible",
    )


OPERATOR_RATE = "7777777"


@pytest.fixture
def operator_throttles(healthy_cluster: Any) -> Iterator[str]:
    """A topic on brokers [1, 2] on which an operator throttles replica 0:4 by hand, and
    broker 1's leader rate set by hand too; both removed after the test."""
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=4)
    set_configs(bootstrap, ConfigResourceType.TOPIC, topic, {FOLLOWER_REPLICAS: "0:4"})
    set_configs(bootstrap, ConfigResourceType.BROKER, "1", {LEADER_RATE: OPERATOR_RATE})
    try:
        yield topic
    finally:
        set_configs(bootstrap, ConfigResourceType.TOPIC, topic, {FOLLOWER_REPLICAS: None})
        set_configs(bootstrap, ConfigResourceType.BROKER, "1", {LEADER_RATE: None})


OPERATORS_ONLY = {"broker 1": {LEADER_RATE: OPERATOR_RATE}}


def test_an_operators_throttles_survive_a_kmedic_move(
    healthy_cluster: Any, executor_factory: Any, operator_throttles: str
) -> None:
    bootstrap, topic = healthy_cluster.bootstrap_servers, operator_throttles
    ex = executor_factory(
        ExecutorConfig(throttle_bytes_per_s=20_000_000, poll_interval_s=0.5), Events()
    )
    ex.submit([Move(topic, 0, (3, 1))])
    ex.step()
    rate = "20000000"
    # kmedic adds its entries beside the operator's and leaves the operator's rate as it is.
    assert throttle_keys(bootstrap, topic, [1, 2, 3]) == {
        topic: {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:3,0:4"},
        "broker 1": {LEADER_RATE: OPERATOR_RATE, FOLLOWER_RATE: rate},
        "broker 2": {LEADER_RATE: rate, FOLLOWER_RATE: rate},
        "broker 3": {LEADER_RATE: rate, FOLLOWER_RATE: rate},
    }
    owned = ex.owned_throttles()
    assert owned.replicas == {
        (topic, LEADER_REPLICAS): frozenset({"0:1", "0:2"}),
        (topic, FOLLOWER_REPLICAS): frozenset({"0:3"}),
    }
    assert (1, LEADER_RATE) not in owned.rates and (1, FOLLOWER_RATE) in owned.rates
    state = run_moves(ex, timeout_s=90)[(topic, 0)]
    assert state.status == "completed", state.error
    assert throttle_keys(bootstrap, topic, [1, 2, 3]) == {
        topic: {FOLLOWER_REPLICAS: "0:4"},
        **OPERATORS_ONLY,
    }
    assert not ex.owned_throttles()


def test_a_successor_removes_what_a_crashed_leader_recorded_and_nothing_else(
    healthy_cluster: Any, executor_factory: Any, operator_throttles: str
) -> None:
    bootstrap, topic = healthy_cluster.bootstrap_servers, operator_throttles
    crashed = executor_factory(ExecutorConfig(throttle_bytes_per_s=20_000), Events())
    crashed.submit([Move(topic, 0, (1, 3))])
    crashed.step()
    record = crashed.owned_throttles()  # what it stored with the plan before the batch
    crashed.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:  # the move is over before a successor comes (cancelled, here)
        admin.alter_partition_reassignments({KpTopicPartition(topic, 0): None})
    finally:
        admin.close()
    assert throttle_keys(bootstrap, topic, [1, 2, 3])["broker 3"] == {
        LEADER_RATE: "20000",
        FOLLOWER_RATE: "20000",
    }
    successor = executor_factory(ExecutorConfig(poll_interval_s=0.5), Events())
    successor.adopt_throttles(record)
    assert not successor.release_throttles()
    wait_for(
        lambda: (
            throttle_keys(bootstrap, topic, [1, 2, 3])
            == {topic: {FOLLOWER_REPLICAS: "0:4"}, **OPERATORS_ONLY}
        ),
        timeout=30,
        what="only the operator's throttles left",
    )
    # Without a record nothing is kmedic's: a successor that adopted none removes nothing.
    set_configs(bootstrap, ConfigResourceType.BROKER, "2", {FOLLOWER_RATE: "123456"})
    try:
        bare = executor_factory(ExecutorConfig(poll_interval_s=0.5), Events())
        bare.release_throttles()
        assert throttle_keys(bootstrap, topic, [2]) == {
            topic: {FOLLOWER_REPLICAS: "0:4"},
            "broker 2": {FOLLOWER_RATE: "123456"},
        }
    finally:
        set_configs(bootstrap, ConfigResourceType.BROKER, "2", {FOLLOWER_RATE: None})


def test_nothing_starts_or_is_throttled_unless_before_change_agrees(
    healthy_cluster: Any, executor_factory: Any
) -> None:
    """The daemon's hook: a fenced plan write before every batch. Refused, nothing changes in
    Kafka; allowed, it was told exactly the throttles kmedic then set."""
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=1)
    events = Events()
    ex = executor_factory(
        ExecutorConfig(throttle_bytes_per_s=20_000_000, poll_interval_s=0.5), events
    )
    asked: list[tuple[list[Move], Any]] = []
    ex.before_change = lambda batch, record: asked.append((batch, record)) or False
    ex.submit([Move(topic, 0, (3, 1))])
    ex.step()
    assert [batch for batch, _ in asked] == [[Move(topic, 0, (3, 1))]]
    assert events.kinds() == [] and ex.states[(topic, 0)].status == "pending"
    assert not ex.owned_throttles()
    assert throttle_keys(bootstrap, topic, [1, 2, 3]) == {}
    assert partition_state(ex, topic)[2] is False, "no reassignment issued"

    ex.before_change = lambda batch, record: asked.append((batch, record)) or True
    ex.step()
    assert events.kinds() == ["action_started"]
    assert asked[-1][1] == ex.owned_throttles()  # stored before it was set
    assert throttle_keys(bootstrap, topic, [1, 2, 3])[topic] == {
        LEADER_REPLICAS: "0:1,0:2",
        FOLLOWER_REPLICAS: "0:3",
    }
    state = run_moves(ex, timeout_s=90)[(topic, 0)]
    assert state.status == "completed", state.error
    assert not ex.owned_throttles()


def test_each_replicas_bytes_are_kafkas_figure(healthy_cluster: Any) -> None:
    """kmedic.kafka_admin.describe_replica_sizes, as the benchmarks measure a heal's bytes:
    each broker's own replicas, none of another's."""
    from kmedic.kafka_admin import describe_replica_sizes

    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=1)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        for broker in (1, 2):
            wait_for(
                lambda b=broker: describe_replica_sizes(admin, b).get((topic, 0), 0) >= 1 << 20,
                timeout=30,
                what=f"broker {broker}'s replica of {topic} at 1 MB",
            )
        assert (topic, 0) not in describe_replica_sizes(admin, 3)
    finally:
        admin.close()


def _rated(ex: Executor) -> set[int]:
    """The brokers this executor holds a throttle rate on."""
    return {b for b, _ in ex.owned_throttles().rates}
