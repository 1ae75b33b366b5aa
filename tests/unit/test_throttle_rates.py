"""The rate each broker taking part in moves gets: none, fixed, or adaptive from a traffic feed
read at most every ``interval_s``; partitions under min.insync.replicas make their brokers
urgent (topic configs read once per topic). The leader audits each change with its figures
and exports the rates as gauges (fake collaborators)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResourceType
from manager_fakes import Rig

from kmedic.errors import KmedicError
from manager.executor.batches import IntoLimit
from manager.executor.config import ExecutorConfig
from manager.executor.throttle_step import Throttling
from manager.model.moves import Move, TopicPartition
from manager.throttling.adaptive import Link, RateFigures, Traffic, rate_sentence
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE
from manager.throttling.rates import ThrottleRates

MB = 1_000_000
LINK = Link(125 * MB, 125 * MB, "the capacity config")


class Feed:
    def __init__(self, traffic: dict[int, Traffic]) -> None:
        self.now = traffic
        self.written: dict[TopicPartition, float] = {}
        self.reads = 0
        self.broken = False

    def traffic(self) -> Mapping[int, Traffic]:
        self.reads += 1
        if self.broken:
            raise OSError("stats consumer closed")
        return self.now

    def capacity(self, broker: int) -> Link:
        return LINK

    def writes(self, partitions: Iterable[TopicPartition]) -> Mapping[TopicPartition, float]:
        return {tp: self.written.get(tp, 0.0) for tp in partitions}


class Configs:
    """The Admin call, answering describe_configs of min.insync.replicas."""

    def __init__(self, min_insync: dict[str, str]) -> None:
        self.min_insync = min_insync
        self.windows: dict[str, int] = {}  # broker -> replication.quota.window.num
        self.backoffs: dict[str, int] = {}  # broker -> replica.fetch.backoff.ms
        self.asked: list[list[str]] = []
        self.down = False

    def __call__(self, call: Callable[[Any], Any], what: str) -> Any:
        return call(self)

    def describe_configs(self, resources: list[Any], config_filter: str) -> Any:
        assert config_filter == "all"
        if self.down:
            raise KmedicError("cannot read min.insync.replicas: timed out")
        self.asked.append([r.name for r in resources])
        topics = [r for r in resources if r.resource_type == ConfigResourceType.TOPIC]
        brokers = [r for r in resources if r.resource_type == ConfigResourceType.BROKER]
        return {
            "topic": {
                r.name: {"min.insync.replicas": {"value": self.min_insync[r.name]}} for r in topics
            },
            "broker": {
                r.name: {
                    "replication.quota.window.num": {"value": str(self.windows[r.name])},
                    "replication.quota.window.size.seconds": {"value": "1"},
                    **(
                        {"replica.fetch.backoff.ms": {"value": str(self.backoffs[r.name])}}
                        if r.name in self.backoffs
                        else {}
                    ),
                }
                for r in brokers
                if r.name in self.windows
            },
        }


def rates_of(
    setting: int | str | None, admin: Configs | None = None, **adaptive: Any
) -> tuple[ThrottleRates, list[float]]:
    now = [0.0]
    config = ExecutorConfig(throttle_bytes_per_s=setting, adaptive=adaptive)
    return ThrottleRates(config, admin or Configs({}), clock=lambda: now[0]), now


def test_a_fixed_rate_is_the_same_on_every_broker_and_none_is_no_rate() -> None:
    fixed, _ = rates_of(20 * MB)
    assert fixed.wanted(frozenset({1, 2}), frozenset(), {}) == (
        {(b, k): "20000000" for b in (1, 2) for k in (LEADER_RATE, FOLLOWER_RATE)},
        [],
    )
    assert not fixed.due()
    off, _ = rates_of(None)
    assert off.wanted(frozenset({1, 2}), frozenset(), {}) == ({}, [])


def test_adaptive_rates_follow_each_brokers_traffic_read_once_per_interval() -> None:
    rates, now = rates_of("adaptive", interval_s=5)
    feed = rates.feed = Feed({1: Traffic(50 * MB, 100 * MB), 2: Traffic(0, 0)})
    wanted, changed = rates.wanted(frozenset({1, 2}), frozenset(), {})
    # 90 % of what each direction's traffic leaves of 92 % of the 125 MB/s default link.
    assert wanted == {
        (1, FOLLOWER_RATE): "58500000",
        (1, LEADER_RATE): "13500000",
        (2, FOLLOWER_RATE): "103500000",
        (2, LEADER_RATE): "103500000",
    }
    assert len(changed) == 4 and feed.reads == 1
    # Within the interval the traffic is not read again, whatever it does.
    feed.now = {1: Traffic(0, 0), 2: Traffic(0, 0)}
    now[0] = 4.9
    assert not rates.due()
    assert rates.wanted(frozenset({1, 2}), frozenset(), wanted) == (wanted, [])
    assert feed.reads == 1
    now[0] = 5.0
    assert rates.due()
    again, changed = rates.wanted(frozenset({1, 2}), frozenset(), wanted)
    assert feed.reads == 2
    assert again[(1, LEADER_RATE)] == "103500000"
    assert [(f.broker, f.config, f.before) for f in changed] == [
        (1, FOLLOWER_RATE, 58_500_000),
        (1, LEADER_RATE, 13_500_000),
    ]


def test_without_a_feed_or_when_it_fails_every_rate_is_the_floor() -> None:
    rates, now = rates_of("adaptive", floor_bytes_per_s=7 * MB)
    wanted, _ = rates.wanted(frozenset({1}), frozenset(), {})
    assert set(wanted.values()) == {str(7 * MB)}
    rates.feed = feed = Feed({1: Traffic(0, 0)})
    feed.broken = True
    now[0] = 10.0
    wanted, changed = rates.wanted(frozenset({1}), frozenset(), {})
    assert set(wanted.values()) == {str(7 * MB)}
    assert changed and all(f.used is None for f in changed)


def test_a_partition_under_min_insync_makes_the_brokers_copying_it_urgent() -> None:
    admin = Configs({"pay": "2", "logs": "1"})
    rates, _ = rates_of("adaptive", admin)
    pay, logs = Move("pay", 0, (1, 2, 5)), Move("logs", 0, (3, 6))
    isr = {("pay", 0): (1,), ("logs", 0): (3,)}  # pay: 1 in sync of 2 needed
    urgent = rates.urgent([(pay, (1, 2, 4)), (logs, (3, 4))], isr)
    assert urgent == {1, 2, 4, 5}
    assert admin.asked == [["logs", "pay"]]
    rates.urgent([(pay, (1, 2, 4))], isr)
    assert admin.asked == [["logs", "pay"]], "each topic's setting is read once"
    # Urgent brokers copy at no less than the urgent floor, however busy.
    rates.feed = Feed({b: Traffic(125 * MB, 125 * MB) for b in (1, 3)})
    wanted, _ = rates.wanted(frozenset({1, 3}), frozenset({1}), {})
    assert wanted[(1, LEADER_RATE)] == "50000000" and wanted[(3, LEADER_RATE)] == "10000000"
    # A topic no move runs on any more is read again next time (its setting may change).
    rates.forget_topics(["pay"])
    rates.urgent([(logs, (3, 4))], isr)
    assert admin.asked[-1] == ["logs"]


def test_unreadable_topic_configs_make_nothing_urgent_and_are_read_again() -> None:
    admin = Configs({"pay": "2"})
    admin.down = True
    rates, _ = rates_of("adaptive", admin)
    move = (Move("pay", 0, (1, 2, 5)), (1, 2, 4))
    assert rates.urgent([move], {("pay", 0): (1,)}) == frozenset()
    admin.down = False
    assert rates.urgent([move], {("pay", 0): (1,)}) == {1, 2, 4, 5}


def test_a_fixed_or_disabled_throttle_never_reads_topic_configs() -> None:
    admin = Configs({})
    for setting in (20 * MB, None):
        rates, _ = rates_of(setting, admin)
        assert rates.urgent([(Move("pay", 0, (1, 2)), (1, 3))], {("pay", 0): ()}) == frozenset()
    assert admin.asked == []


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def test_the_leader_audits_each_rate_change_with_its_figures_and_exports_the_rates(
    rig: Rig,
) -> None:
    figures = [
        RateFigures(2, LEADER_RATE, 67_500_000, 125 * MB, 50 * MB, False, None),
        RateFigures(3, FOLLOWER_RATE, 50 * MB, 125 * MB, None, True, 10 * MB),
    ]
    assert rig.executor.on_rates is not None, "the manager did not take the executor's rates"
    rig.executor.on_rates(figures)
    [record] = [r for r in rig.sink.records if r.kind == "action_progress"]
    assert record.summary == (
        "throttle rates set: broker 2 out 67.5 MB/s (was none; others use 50.0 of 125.0 MB/s); "
        "broker 3 in 50.0 MB/s (was 10.0 MB/s; no traffic figure: the floor, under "
        "min.insync.replicas)"
    )
    assert record.details["throttle_rates"][0] == {
        "broker": 2,
        "config": LEADER_RATE,
        "rate": 67_500_000,
        "capacity": 125 * MB,
        "used": 50 * MB,
        "urgent": False,
        "before": None,
        "capacity_source": "",
        "writes": 0.0,
        "window_s": None,
        "fetch_backoff_ms": None,
    }
    rig.executor.owned = rig.executor.owned.union(
        type(rig.executor.owned)(rates={(2, LEADER_RATE): "67500000"})
    )
    rig.manager.moves.observe()
    registry = rig.manager.metrics.registry
    labels = {"cluster": "c", "broker": "2", "direction": "out"}
    assert registry.get_sample_value("kmedic_throttle_rate_bytes_per_second", labels) == 67.5e6
    rig.executor.owned = type(rig.executor.owned)()
    rig.manager.moves.observe()
    assert registry.get_sample_value("kmedic_throttle_rate_bytes_per_second", labels) is None


def test_an_adaptive_rate_outpaces_the_writes_of_the_partitions_it_copies() -> None:
    """Broker 3's link is nearly full (the floor alone would be 10 MB/s): it receives t:0,
    written at 20 MB/s, so its in rate is at least twice that; broker 1 sends it."""
    config = ExecutorConfig(throttle_bytes_per_s="adaptive")
    rates = ThrottleRates(config, Configs({}))
    feed = Feed({1: Traffic(0, 0), 3: Traffic(120 * MB, 0)})
    feed.written[("t", 0)] = 20 * MB
    rates.feed = feed
    move = Move(topic="t", partition=0, target=(1, 3))
    wanted, changed = rates.wanted(frozenset({1, 3}), frozenset(), {}, [(move, (1, 2))])
    assert wanted[(3, FOLLOWER_RATE)] == str(40 * MB)
    assert wanted[(1, LEADER_RATE)] == "103500000"  # its headroom is larger: 0.9 x 0.92 x 125 MB/s
    [figures] = [f for f in changed if (f.broker, f.config) == (3, FOLLOWER_RATE)]
    assert figures.writes == 20 * MB


def test_the_start_order_reads_the_writes_once_per_interval_and_urgency_first() -> None:
    admin = Configs({"pay": "2", "logs": "1"})
    config = ExecutorConfig(throttle_bytes_per_s="adaptive", start_order="least_written_first")
    now = [0.0]
    throttling = Throttling(config, admin)
    throttling.rates = ThrottleRates(config, admin, clock=lambda: now[0])
    feed = throttling.rates.feed = Feed({1: Traffic(0, 0)})
    pay, busy, quiet = Move("pay", 0, (1, 2)), Move("logs", 0, (1, 3)), Move("logs", 1, (2, 3))
    feed.written = {pay.tp: 5 * MB, busy.tp: 2 * MB, quiet.tp: 0.0}
    isr = {pay.tp: (1,), busy.tp: (1,), quiet.tp: (2,)}  # pay: 1 in sync of 2 needed
    assert throttling.start_order([pay, busy, quiet], isr) == [pay, quiet, busy]
    assert feed.reads == 1
    throttling.start_order([busy, quiet], isr)
    assert feed.reads == 1, "the traffic is read once per interval, for the rates too"
    # Writes unknown (the feed fails): the plan's order, urgent still first.
    feed.written = {}
    now[0] = 10.0
    feed.broken = True
    assert throttling.start_order([busy, quiet, pay], isr) == [pay, busy, quiet]
    # A fixed rate reads no traffic and no topic config: least written first is by what is
    # known, which is nothing: the plan's order.
    fixed = Throttling(ExecutorConfig(throttle_bytes_per_s=20 * MB), admin)
    assert fixed.start_order([busy, quiet, pay], isr) == [busy, quiet, pay]


def test_admission_gives_a_write_budget_only_when_asked_and_known() -> None:
    admin = Configs({"logs": "1"})
    asked = ExecutorConfig(
        throttle_bytes_per_s="adaptive",
        start_order="least_written_first",
        adaptive={"moves_within_headroom": True, "utilisation": 0.5, "ratio": 1.0},
    )
    throttling = Throttling(asked, admin)
    busy, quiet, running = Move("logs", 0, (1, 3)), Move("logs", 1, (2, 3)), Move("logs", 2, (1, 3))
    replicas = {busy.tp: (1,), quiet.tp: (2,), running.tp: (1,)}
    isr = dict(replicas)
    # No feed: nothing known to bound it, the plan's order.
    into = IntoLimit(2)
    assert throttling.admission([busy, quiet], [running], replicas, isr) == (
        [busy, quiet],
        None,
        into,
    )
    feed = throttling.rates.feed = Feed({1: Traffic(0, 10 * MB), 3: Traffic(40 * MB, 0)})
    feed.written = {busy.tp: 3 * MB, quiet.tp: 1 * MB, running.tp: 2 * MB}
    order, budget, _ = throttling.admission([busy, quiet], [running], replicas, isr)
    assert order == [quiet, busy]
    assert budget is not None
    assert budget.writes == {quiet.tp: 1 * MB, busy.tp: 3 * MB, running.tp: 2 * MB}
    # Broker 3 receives: (0.5 x 125 - 40) MB/s of room over outpace 2; broker 2: no figure.
    assert budget.limits[(3, FOLLOWER_RATE)] == pytest.approx(22.5 * MB / 2)
    assert budget.limits[(1, LEADER_RATE)] == pytest.approx(52.5 * MB / 2)
    assert (2, LEADER_RATE) not in budget.limits
    # Not asked for: no budget, whatever the feed knows.
    plain = Throttling(ExecutorConfig(throttle_bytes_per_s="adaptive"), admin)
    plain.rates.feed = feed
    assert plain.admission([busy, quiet], [running], replicas, isr) == (
        [busy, quiet],
        None,
        into,
    )


def test_admission_limits_copies_into_a_broker_under_the_adaptive_throttle_only() -> None:
    """The adaptive throttle's moves_into_broker (2 by default, or as set) reaches select_batch
    with the partitions under min.insync.replicas, which it does not hold; a fixed rate or
    none: no such limit."""
    admin = Configs({"logs": "2"})
    writes_fail, fine = Move("logs", 0, (1, 3)), Move("logs", 1, (2, 3))
    replicas = {writes_fail.tp: (1, 2), fine.tp: (2, 1)}
    isr = {writes_fail.tp: (1,), fine.tp: (2, 1)}
    adaptive = Throttling(ExecutorConfig(throttle_bytes_per_s="adaptive"), admin)
    _, _, into = adaptive.admission([writes_fail, fine], [], replicas, isr)
    assert into == IntoLimit(2, frozenset({writes_fail.tp}))
    one = Throttling(
        ExecutorConfig(throttle_bytes_per_s="adaptive", adaptive={"moves_into_broker": 1}), admin
    )
    assert one.admission([fine], [], replicas, isr)[2] == IntoLimit(1)
    for setting in (20 * MB, None):
        fixed = Throttling(ExecutorConfig(throttle_bytes_per_s=setting), admin)
        assert fixed.admission([writes_fail, fine], [], replicas, isr)[2] is None


def test_each_rate_change_carries_the_brokers_quota_window_read_once() -> None:
    admin = Configs({})
    admin.windows = {"1": 11, "2": 2}  # broker 3 gives none
    rates, now = rates_of("adaptive", admin)
    rates.feed = Feed({1: Traffic(0, 0), 2: Traffic(0, 0), 3: Traffic(0, 0)})
    # Broker 4 is dead: it answers nothing, and is not asked (Kafka answers a broker's configs
    # from that broker; a dead one failed every read, each retried for seconds, at each step).
    _, changed = rates.wanted(frozenset({1, 2, 3, 4}), frozenset(), {}, live=frozenset({1, 2, 3}))
    assert {f.broker: f.window_s for f in changed} == {1: 11.0, 2: 2.0, 3: None, 4: None}
    assert admin.asked == [["1"], ["2"], ["3"]], "one broker at a time, the live ones"
    [eleven] = [f for f in changed if (f.broker, f.config) == (1, LEADER_RATE)]
    assert rate_sentence(eleven).endswith(
        "; Kafka holds it only over 11 s (replication.quota.window.num): the copy bursts at "
        "link speed)"
    )
    [two] = [f for f in changed if (f.broker, f.config) == (2, LEADER_RATE)]
    assert rate_sentence(two).endswith(
        "; Kafka holds it only over 2 s (replication.quota.window.num): the copy bursts at "
        "link speed)"
    )
    one = replace(two, window_s=1.0)  # paced within the second: nothing to say
    assert "quota" not in rate_sentence(one)
    # Read once: later changes ask only for the broker that gave no value.
    rates.feed.now = {1: Traffic(0, 100 * MB), 2: Traffic(0, 100 * MB), 3: Traffic(0, 100 * MB)}
    now[0] = 10.0
    rates.wanted(frozenset({1, 2, 3}), frozenset(), {})
    assert admin.asked[3:] == [["3"]]
    # Unreadable: not known, and the rates are set all the same.
    admin.down = True
    now[0] = 20.0
    rates.feed.now = {1: Traffic(0, 0), 2: Traffic(0, 0), 3: Traffic(0, 0)}
    _, unread = rates.wanted(frozenset({3}), frozenset(), {})
    assert [f.window_s for f in unread] == [None, None]


def test_an_inbound_rate_change_says_when_its_followers_back_off_long_after_a_refused_fetch() -> (
    None
):
    admin = Configs({})
    admin.windows = {"1": 2, "2": 2, "3": 2}
    admin.backoffs = {"1": 1000, "2": 100}  # broker 3 gives none
    rates, _ = rates_of("adaptive", admin)
    rates.feed = Feed({1: Traffic(0, 0), 2: Traffic(0, 0), 3: Traffic(0, 0)})
    _, changed = rates.wanted(frozenset({1, 2, 3}), frozenset(), {})
    assert {(f.broker, f.config): f.fetch_backoff_ms for f in changed} == {
        (1, LEADER_RATE): 1000,
        (1, FOLLOWER_RATE): 1000,
        (2, LEADER_RATE): 100,
        (2, FOLLOWER_RATE): 100,
        (3, LEADER_RATE): None,
        (3, FOLLOWER_RATE): None,
    }
    said = {(f.broker, f.config): rate_sentence(f) for f in changed}
    assert said[(1, FOLLOWER_RATE)].endswith(
        "; its followers wait 1000 ms after a refused fetch (replica.fetch.backoff.ms): a "
        "written partition's acks=all writes may wait as long at each move's end)"
    )
    # Only inbound: the followers are the ones that back off.
    assert "backoff" not in said[(1, LEADER_RATE)]
    assert not any("backoff" in said[(b, FOLLOWER_RATE)] for b in (2, 3))
