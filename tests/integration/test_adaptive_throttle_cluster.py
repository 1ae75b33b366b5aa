"""The adaptive throttle on the real cluster: each broker taking part in a move gets its own
rate from its traffic, the rates follow the traffic while the move runs (polls between steps),
a partition whose writes fail copies at the urgent floor, and a successor that adopts the
moves removes exactly the rates its predecessor set (the traffic is a fake feed; everything
else is real)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytest
from confluent_kafka.admin import ResourceType
from helpers import wait_for
from kafka.admin import AlterConfigOp, ConfigResourceType, KafkaAdminClient
from kafka.admin import ConfigResource as KpConfigResource
from test_executor import dynamic_configs, make_topic, run_moves, throttle_keys

from manager.executor.config import ExecutorConfig
from manager.executor.executor import Executor
from manager.model.moves import Move, TopicPartition
from manager.throttling.adaptive import Link, RateFigures, Traffic, rate_sentence
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE

pytestmark = pytest.mark.integration

LINK = Link(200_000, 200_000, "a slow link")  # so that a small move takes seconds
RULE = {"floor_bytes_per_s": 20_000, "urgent_floor_bytes_per_s": 100_000, "interval_s": 0.5}


class Feed:
    def __init__(self, traffic: dict[int, Traffic]) -> None:
        self.now = traffic
        self.written: dict[TopicPartition, float] = {}

    def traffic(self) -> Mapping[int, Traffic]:
        return self.now

    def capacity(self, broker: int) -> Link:
        return LINK

    def writes(self, partitions: Iterable[TopicPartition]) -> Mapping[TopicPartition, float]:
        return {tp: self.written.get(tp, 0.0) for tp in partitions}


@pytest.fixture
def adaptive(healthy_cluster: Any) -> Iterator[Any]:
    made: list[Executor] = []

    def build(feed: Feed, told: list[list[RateFigures]]) -> Executor:
        config = ExecutorConfig(
            throttle_bytes_per_s="adaptive", adaptive=RULE, stall_s=600, poll_interval_s=0.5
        )
        ex = Executor(healthy_cluster.bootstrap_servers, config, traffic=feed)
        ex.on_rates = told.append
        made.append(ex)
        return ex

    yield build
    for ex in made:
        ex.close()


def rates(bootstrap: str, broker: int) -> dict[str, str]:
    found = dynamic_configs(bootstrap, ResourceType.BROKER, str(broker))
    return {k: v for k, v in found.items() if k in (LEADER_RATE, FOLLOWER_RATE)}


def test_each_broker_gets_its_headroom_and_the_rates_follow_the_traffic(
    healthy_cluster: Any, adaptive: Any
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [1, 2], megabytes=1)
    # Broker 1 (the leader, which sends the copy) serves 150 kB/s to its consumers.
    feed = Feed({1: Traffic(0, 150_000), 2: Traffic(0, 0), 3: Traffic(0, 0)})
    told: list[list[RateFigures]] = []
    ex = adaptive(feed, told)
    ex.submit([Move(topic, 0, (3, 1))])
    ex.step()
    assert throttle_keys(bootstrap, topic, [1, 2, 3, 4])["broker 1"] == {
        LEADER_RATE: "30600",  # 0.9 x (92 % of 200 kB/s - the consumers' 150 kB/s)
        FOLLOWER_RATE: "165600",
    }
    for broker in (2, 3):
        assert rates(bootstrap, broker) == {LEADER_RATE: "165600", FOLLOWER_RATE: "165600"}
    assert rates(bootstrap, 4) == {}, "broker 4 takes no part in the move"
    assert len(told) == 1 and len(told[0]) == 6
    # Read from each broker: an unshaped local cluster keeps Kafka's default quota window and
    # fetch backoff, and each inbound rate's audit sentence says what the backoff costs.
    assert {f.window_s for f in told[0]} == {11.0}
    assert {f.fetch_backoff_ms for f in told[0]} == {1000}
    assert all(
        "its followers wait 1000 ms" in rate_sentence(f)
        for f in told[0]
        if f.config == FOLLOWER_RATE
    )

    # The consumers go away: within an interval the leader's rate opens up, between steps.
    feed.now = {1: Traffic(0, 0), 2: Traffic(0, 0), 3: Traffic(0, 0)}
    wait_for(
        lambda: ex.poll() or rates(bootstrap, 1).get(LEADER_RATE) == "165600",
        timeout=20,
        what="broker 1's leader rate raised to 165600",
    )
    assert [(f.broker, f.config, f.before, f.rate) for f in told[1]] == [
        (1, LEADER_RATE, 30_600, 165_600)
    ]
    state = run_moves(ex, timeout_s=90)[(topic, 0)]
    assert state.status == "completed", state.error
    assert throttle_keys(bootstrap, topic, [1, 2, 3, 4]) == {}


def test_a_partition_whose_writes_fail_copies_at_the_urgent_floor(
    healthy_cluster: Any, adaptive: Any
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [2, 3], megabytes=0.2)
    # Two replicas in sync where three are needed: every acks=all write fails.
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        resource = KpConfigResource(
            ConfigResourceType.TOPIC,
            topic,
            configs={"min.insync.replicas": (AlterConfigOp.SET, "3")},
        )
        admin.alter_configs([resource], incremental=True)
    finally:
        admin.close()
    full = Traffic(LINK.in_bytes_per_s, LINK.out_bytes_per_s)
    busy = Feed(dict.fromkeys((2, 3, 4), full))  # every broker at its capacity
    told: list[list[RateFigures]] = []
    ex = adaptive(busy, told)
    ex.submit([Move(topic, 0, (4, 2))])
    ex.step()
    for broker in (2, 3, 4):
        assert rates(bootstrap, broker) == {LEADER_RATE: "100000", FOLLOWER_RATE: "100000"}
    assert all(f.urgent for f in told[0])
    state = run_moves(ex, timeout_s=90)[(topic, 0)]
    assert state.status == "completed", state.error
    assert throttle_keys(bootstrap, topic, [2, 3, 4]) == {}


def test_a_successor_removes_exactly_the_rates_its_predecessor_set(
    healthy_cluster: Any, adaptive: Any
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = make_topic(bootstrap, [3, 4], megabytes=1)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    operators = KpConfigResource(
        ConfigResourceType.BROKER, "2", configs={LEADER_RATE: (AlterConfigOp.SET, "777777")}
    )
    try:
        admin.alter_configs(
            [operators], incremental=True, raise_on_unknown=False
        )  # an operator's own rate
        quiet = {b: Traffic(0, 150_000) for b in (1, 2, 3, 4)}
        first = adaptive(Feed(quiet), [])
        first.submit([Move(topic, 0, (2, 3))])
        first.step()
        assert rates(bootstrap, 3)[LEADER_RATE] == "30600"  # 0.9 x (184 - 150 kB/s)
        assert rates(bootstrap, 2) == {LEADER_RATE: "777777", FOLLOWER_RATE: "165600"}
        # The first leader dies here; the next one adopts its moves and its throttles, sees
        # other traffic, sets other rates, and removes every one of its predecessor's.
        second = adaptive(Feed({b: Traffic(0, 0) for b in (1, 2, 3, 4)}), [])
        second.adopt_throttles(first.owned_throttles())
        second.submit([Move(topic, 0, (2, 3))])
        second.step()
        assert rates(bootstrap, 3)[LEADER_RATE] == "165600"
        state = run_moves(second, timeout_s=90)[(topic, 0)]
        assert state.status == "completed", state.error
        second.release_throttles()
        assert throttle_keys(bootstrap, topic, [1, 3, 4]) == {}
        assert rates(bootstrap, 2) == {LEADER_RATE: "777777"}, "the operator's rate stays"
    finally:
        operators = KpConfigResource(
            ConfigResourceType.BROKER, "2", configs={LEADER_RATE: (AlterConfigOp.DELETE, None)}
        )
        admin.alter_configs([operators], incremental=True, raise_on_unknown=False)
        admin.close()
