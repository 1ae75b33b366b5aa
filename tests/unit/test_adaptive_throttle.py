"""The adaptive throttle's arithmetic (pure): never below the floor, never above capacity, no
change below the threshold, less room for kmedic the more a broker carries for others, and
each broker's traffic read from its agent's record, replication included."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from manager_fakes import stats

from kmedic.brokerstats import Nic
from kmedic.replica_columns import AgentRecord
from manager.monitor.observation import AgentView
from manager.monitor.observe import CapacitySettings
from manager.monitor.traffic import AgentTraffic
from manager.throttling.adaptive import (
    Headroom,
    Link,
    RateFigures,
    Traffic,
    broker_traffic,
    copy_writes,
    headroom_rate,
    plan_rates,
    rate_sentence,
    worth_changing,
    write_budgets,
)
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE

MB = 1_000_000
NOW = 1_000_000
RULE = Headroom(utilisation=1.0)  # kafka-kit's rule: the whole link
LINK = Link(125 * MB, 125 * MB, "the capacity config")
rates = st.floats(0, 2_000 * MB, allow_nan=False)
capacities = st.floats(1 * MB, 2_000 * MB, allow_nan=False)


def test_kafka_kits_rule_on_a_busy_broker() -> None:
    # 125 MB/s link, 50 MB/s for clients and replication: kmedic may use 90 % of the other 75.
    assert headroom_rate(125 * MB, 50 * MB, RULE, urgent=False) == 67_500_000
    # Over capacity by 10 MB/s: what is left is under the floor, so the floor.
    assert headroom_rate(125 * MB, 135 * MB, RULE, urgent=False) == 10 * MB
    # Writes already failing: no less than the higher floor.
    assert headroom_rate(125 * MB, 135 * MB, RULE, urgent=True) == 50 * MB
    # No figure for the broker: the floor, until it is measured again.
    assert headroom_rate(125 * MB, None, RULE, urgent=False) == 10 * MB
    # A link slower than the urgent floor: the urgent floor yields to it.
    assert headroom_rate(5 * MB, 0, RULE, urgent=True) == 5 * MB
    # A 40 Mbit/s link: its floor is a tenth of it, not the whole link (the 10 MB/s floor
    # would have left the copy unthrottled), and the headroom rule applies under it.
    assert headroom_rate(5 * MB, 4.9 * MB, RULE, urgent=False) == 500_000
    assert headroom_rate(5 * MB, None, RULE, urgent=False) == 500_000
    assert headroom_rate(5 * MB, 2 * MB, RULE, urgent=False) == 2_700_000


@given(capacities, st.none() | rates, st.booleans())
def test_the_rate_stays_between_the_floor_and_the_capacity(
    capacity: float, used: float | None, urgent: bool
) -> None:
    rate = headroom_rate(capacity, used, RULE, urgent=urgent)
    if urgent:
        floor = min(RULE.urgent_floor_bytes_per_s, capacity)
    else:
        floor = min(RULE.floor_bytes_per_s, RULE.floor_share * capacity)
    assert int(floor) <= rate <= capacity
    if used is not None and used >= capacity:
        assert rate == int(floor)  # a saturated broker: the floor, whatever else


@given(capacities, rates, rates)
def test_more_traffic_for_others_never_leaves_kmedic_more_room(
    capacity: float, used: float, more: float
) -> None:
    less = headroom_rate(capacity, used, RULE, urgent=False)
    assert headroom_rate(capacity, used + more, RULE, urgent=False) <= less
    assert headroom_rate(capacity, used, RULE, urgent=True) >= less


@given(st.integers(1, 10**10), st.floats(0, 0.99, allow_nan=False))
def test_no_change_below_the_threshold(current: int, threshold: float) -> None:
    within = current + int(threshold * current * 0.99)
    assert not worth_changing(current, within, threshold)
    assert worth_changing(current, int(current * (1 + threshold)) + 2, threshold)
    assert worth_changing(None, current, threshold)


@pytest.mark.parametrize(
    ("current", "proposed", "changes"),
    [(100, 110, False), (100, 111, True), (100, 89, True), (100, 90, False)],
)
def test_the_threshold_is_a_fraction_of_the_rate_set(
    current: int, proposed: int, changes: bool
) -> None:
    assert worth_changing(current, proposed, 0.1) is changes


def test_each_broker_gets_its_own_rate_each_direction() -> None:
    traffic = {1: Traffic(50 * MB, 100 * MB), 2: Traffic(0, 0)}
    capacity = {b: LINK for b in (1, 2, 3)}
    rates, changed = plan_rates([1, 2, 3], frozenset({3}), traffic, capacity, {}, RULE)
    assert rates == {
        (1, FOLLOWER_RATE): 67_500_000,  # in: 90 % of 75 MB/s
        (1, LEADER_RATE): 22_500_000,  # out: 90 % of 25 MB/s
        (2, FOLLOWER_RATE): 112_500_000,
        (2, LEADER_RATE): 112_500_000,
        (3, FOLLOWER_RATE): 50 * MB,  # no figure, but urgent: the urgent floor
        (3, LEADER_RATE): 50 * MB,
    }
    assert {(f.broker, f.config) for f in changed} == set(rates)  # all new
    three = next(f for f in changed if f.broker == 3)
    assert (three.used, three.urgent, three.before) == (None, True, None)


def test_a_rate_within_the_threshold_stays_and_is_not_reported() -> None:
    capacity = {1: LINK}
    current = {(1, FOLLOWER_RATE): 67_500_000, (1, LEADER_RATE): 22_500_000}
    # Clients 5 MB/s busier in: 63 MB/s is within 10 % of 67.5; out 10 MB/s quieter: 31.5
    # is not within 10 % of 22.5.
    traffic = {1: Traffic(55 * MB, 90 * MB)}
    rates, changed = plan_rates([1], frozenset(), traffic, capacity, current, RULE)
    assert rates == {(1, FOLLOWER_RATE): 67_500_000, (1, LEADER_RATE): 31_500_000}
    assert changed == [
        RateFigures(1, LEADER_RATE, 31_500_000, 125 * MB, 90 * MB, False, 22_500_000, LINK.source)
    ]


@given(
    st.dictionaries(st.integers(0, 5), st.builds(Traffic, rates, rates)),
    st.dictionaries(
        st.tuples(st.integers(0, 5), st.sampled_from([LEADER_RATE, FOLLOWER_RATE])),
        st.integers(1, 10**9),
    ),
    st.frozensets(st.integers(0, 5)),
)
def test_every_broker_taking_part_gets_a_rate_and_every_change_is_reported(
    traffic: dict[int, Traffic], current: dict[tuple[int, str], int], urgent: frozenset[int]
) -> None:
    brokers = [0, 2, 4]
    rates, changed = plan_rates(brokers, urgent, traffic, {b: LINK for b in brokers}, current, RULE)
    assert set(rates) == {(b, k) for b in brokers for k in (LEADER_RATE, FOLLOWER_RATE)}
    reported = {(f.broker, f.config): f for f in changed}
    for key, rate in rates.items():
        if key in reported:
            assert reported[key].rate == rate and reported[key].before == current.get(key)
        else:
            assert rate == current[key]


def _leader(topic: str, partition: int, bytes_in: float) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "bytes_in_per_s": bytes_in,
        "bytes_out_per_s": 0.0,
        "messages_in_per_s": 0.0,
        "log_size_bytes": 0,
        "log_start_offset": 0,
        "log_end_offset": 0,
        "estimate": "size_delta",
    }


def _follower(topic: str, partition: int, leader: int) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "leader_id": leader,
        "log_size_bytes": 0,
        "log_end_offset": 0,
        "in_isr": True,
    }


def _totals(bytes_in: float, bytes_out: float) -> dict[str, Any]:
    return {
        "bytes_in_per_s": bytes_in,
        "bytes_out_per_s": bytes_out,
        "messages_in_per_s": 0.0,
        "leader_count": 0,
        "follower_count": 0,
        "reassigning_count": 0,
        "under_replicated_count": 0,
        "log_size_bytes": 0,
    }


def test_a_brokers_traffic_is_its_clients_plus_the_replication_it_carries() -> None:
    now = NOW
    records = {
        # Broker 1 leads t:0 (10 MB/s produced), followed by 2 and 3; consumers read 30 MB/s.
        1: stats(1, ts=now, leaders=[_leader("t", 0, 10 * MB)], totals=_totals(10 * MB, 30 * MB)),
        2: stats(2, ts=now, followers=[_follower("t", 0, 1)], totals=_totals(0, 0)),
        3: stats(3, ts=now - 5_000, followers=[_follower("t", 0, 1)], totals=_totals(0, 0)),
        4: stats(4, ts=now, failed=True),  # its agent cannot read it: no figure
        5: stats(5, ts=now - 31_000),  # three intervals (10 s) old: the agent stopped
    }
    assert broker_traffic({b: AgentRecord.of(r) for b, r in records.items()}, now) == {
        1: Traffic(10 * MB, 30 * MB + 2 * 10 * MB),
        2: Traffic(10 * MB, 0),
        3: Traffic(10 * MB, 0),
    }


def test_a_replica_being_added_is_a_copy_not_others_traffic() -> None:
    # Broker 3 is being added to t:0 (kmedic's copy, throttled) and follows u:0 for good; its
    # fetches of t:0's new writes go through the throttle, and so do broker 1's sends of them.
    now = NOW
    moving = {
        "topic": "t",
        "partition": 0,
        "replicas": [1, 2, 3],
        "adding_replicas": [3],
        "removing_replicas": [2],
    }
    records = {
        1: stats(
            1,
            ts=now,
            leaders=[_leader("t", 0, 10 * MB), _leader("u", 0, 4 * MB)],
            reassigning=[moving],
            totals=_totals(14 * MB, 0),
        ),
        2: stats(
            2, ts=now, followers=[_follower("t", 0, 1)], reassigning=[moving], totals=_totals(0, 0)
        ),
        3: stats(
            3,
            ts=now,
            followers=[_follower("t", 0, 1), _follower("u", 0, 1)],
            reassigning=[moving],
            totals=_totals(0, 0),
        ),
    }
    assert broker_traffic({b: AgentRecord.of(r) for b, r in records.items()}, now) == {
        1: Traffic(14 * MB, 10 * MB + 4 * MB),  # to broker 2 (t:0) and broker 3 (u:0)
        2: Traffic(10 * MB, 0),  # being removed: it still copies until the move ends
        3: Traffic(4 * MB, 0),  # u:0 only
    }


def test_a_rate_change_reads_as_a_sentence() -> None:
    busy = RateFigures(2, LEADER_RATE, 67_500_000, 125 * MB, 50 * MB, False, 50 * MB)
    assert rate_sentence(busy) == (
        "broker 2 out 67.5 MB/s (was 50.0 MB/s; others use 50.0 of 125.0 MB/s)"
    )
    blind = RateFigures(3, FOLLOWER_RATE, 50 * MB, 125 * MB, None, True, None)
    assert rate_sentence(blind) == (
        "broker 3 in 50.0 MB/s (was none; no traffic figure: the floor, under min.insync.replicas)"
    )


def test_the_daemons_feed_reads_the_agents_newest_records_and_the_configured_capacity() -> None:
    def agents() -> dict[int, AgentView]:
        fresh = stats(1, ts=NOW, totals=_totals(3 * MB, 4 * MB))
        return {1: AgentView(fresh, NOW, fresh), 2: AgentView(stats(2, ts=0), 0, None)}

    capacity = CapacitySettings(network_in_bytes_per_s=1e9, network_out_bytes_per_s=2e9)
    feed = AgentTraffic(agents, capacity, wall_ms=lambda: NOW)
    assert feed.traffic() == {1: Traffic(3 * MB, 4 * MB)}  # broker 2's agent went quiet
    assert feed.capacity(7) == Link(1e9, 2e9, "the capacity config")


def _feed_with_links(capacity: CapacitySettings, **nics: Nic) -> AgentTraffic:
    def agents() -> dict[int, AgentView]:
        views = {}
        for name, nic in nics.items():
            b = int(name[1:])
            record = stats(b, ts=NOW, totals=_totals(MB, MB)).model_copy(update={"nic": nic})
            views[b] = AgentView(record, NOW, record)
        return views

    feed = AgentTraffic(agents, capacity, wall_ms=lambda: NOW)
    feed.traffic()
    return feed


def test_each_brokers_capacity_is_its_agents_link_speed_unless_the_config_sets_one() -> None:
    shaped = Nic(interface="lo", speed_bytes_per_s=5 * MB, note="nic_mbps 40 in the agent's config")
    unknown = Nic(interface="lo", speed_bytes_per_s=None, note="the broker listens on loopback")
    feed = _feed_with_links(CapacitySettings(), b1=shaped, b2=unknown)
    assert feed.capacity(1) == Link(5 * MB, 5 * MB, "its agent's link speed (lo)")
    default = Link(125 * MB, 125 * MB, "the default: no link speed")
    assert feed.capacity(2) == default
    assert feed.capacity(3) == default  # no agent at all
    configured = CapacitySettings(network_in_bytes_per_s=2 * MB)
    assert _feed_with_links(configured, b1=shaped).capacity(1) == Link(
        2 * MB, 125 * MB, "the capacity config"
    )


def test_a_rate_change_says_where_the_capacity_came_from() -> None:
    figures = plan_rates(
        [1],
        frozenset(),
        {1: Traffic(1 * MB, 2 * MB)},
        {1: Link(5 * MB, 5 * MB, "its agent's link speed (lo)")},
        {},
        Headroom(floor_bytes_per_s=MB),
    )[1]
    assert [rate_sentence(f) for f in figures] == [
        "broker 1 in 3.2 MB/s (was none; others use 1.0 of 5.0 MB/s, its agent's link speed (lo))",
        "broker 1 out 2.3 MB/s (was none; others use 2.0 of 5.0 MB/s, its agent's link speed (lo))",
    ]


def test_a_rate_outpaces_the_writes_to_what_the_broker_copies() -> None:
    """Under its partitions' write rate a move never ends: the copy only gains on the log at
    the rate it is sent minus the rate the log grows. So a rate is at least ``outpace`` (2x)
    the writes to the partitions the broker copies, above the floor and the headroom, and
    never above the link."""
    busy = 4.8 * MB  # a 5 MB/s link nearly full: the headroom alone would be the 0.5 MB/s floor
    assert headroom_rate(5 * MB, busy, RULE, urgent=False) == 500_000
    assert headroom_rate(5 * MB, busy, RULE, urgent=False, writes=0.4 * MB) == 800_000
    assert headroom_rate(5 * MB, busy, RULE, urgent=False, writes=4 * MB) == 5 * MB
    assert headroom_rate(5 * MB, 1 * MB, RULE, urgent=False, writes=0.4 * MB) == 3_600_000


@given(
    capacity=st.floats(1e5, 1e10),
    used=st.none() | st.floats(0, 2e10),
    writes=st.floats(0, 1e10),
    urgent=st.booleans(),
)
def test_the_outpace_floor_holds_up_to_the_link(
    capacity: float, used: float | None, writes: float, urgent: bool
) -> None:
    rate = headroom_rate(capacity, used, RULE, urgent=urgent, writes=writes)
    assert rate >= int(min(RULE.outpace * writes, capacity)) - 1
    assert rate >= headroom_rate(capacity, used, RULE, urgent=urgent)
    assert rate <= capacity


def test_each_broker_copies_the_writes_of_its_moves_partitions() -> None:
    # t:0 moves 1,2 -> 1,3 (written at 1 MB/s); t:1 moves 1,4 -> 2,4 (2 MB/s): either replica
    # before a move may lead and send; each added replica receives.
    assert copy_writes([((1, 2), (3,), 1 * MB), ((1, 4), (2,), 2 * MB)]) == {
        (1, LEADER_RATE): 3 * MB,
        (2, LEADER_RATE): 1 * MB,
        (4, LEADER_RATE): 2 * MB,
        (3, FOLLOWER_RATE): 1 * MB,
        (2, FOLLOWER_RATE): 2 * MB,
    }


def test_the_outpace_floor_is_said_in_the_rate_change() -> None:
    figures = plan_rates(
        [3],
        frozenset(),
        {3: Traffic(4.8 * MB, 1 * MB)},
        {3: Link(5 * MB, 5 * MB, "its agent's link speed (lo)")},
        {},
        RULE,
        {(3, FOLLOWER_RATE): 0.4 * MB},
    )[1]
    assert rate_sentence(figures[0]) == (
        "broker 3 in 0.8 MB/s (was none; others use 4.8 of 5.0 MB/s, its agent's link speed "
        "(lo); its moves' partitions are written at 0.4 MB/s)"
    )


def test_the_daemons_feed_knows_each_partitions_writes_from_its_leaders_agent() -> None:
    def agents() -> dict[int, AgentView]:
        one = stats(1, ts=NOW, leaders=[_leader("t", 0, 3 * MB), _leader("u", 2, MB)])
        two = stats(2, ts=NOW, leaders=[_leader("t", 1, 2 * MB)])
        return {1: AgentView(one, NOW, one), 2: AgentView(two, NOW, two)}

    feed = AgentTraffic(agents, CapacitySettings(), wall_ms=lambda: NOW)
    assert feed.writes([("t", 0)]) == {}  # nothing read yet
    feed.traffic()
    assert feed.writes([("t", 0), ("t", 1), ("u", 2), ("v", 0)]) == {
        ("t", 0): 3 * MB,
        ("t", 1): 2 * MB,
        ("u", 2): 1 * MB,
    }


def test_a_target_share_of_the_link_leaves_the_rest_to_the_clients() -> None:
    target = Headroom(utilisation=0.7, ratio=1.0)
    # A 5 MB/s link carrying 1.6 MB/s: copies up to 70 % of it, 1.9 MB/s.
    assert headroom_rate(5 * MB, 1.6 * MB, target, urgent=False) == 1_900_000
    # Past the share already: the floor (a tenth of the link), however little the excess.
    assert headroom_rate(5 * MB, 3.6 * MB, target, urgent=False) == 500_000
    # The default leaves 8 % of the link to the clients (docs/executor.md); kafka-kit's is 1.
    assert Headroom().utilisation == 0.92


@given(capacities, rates, st.floats(0.05, 1.0), st.floats(0.05, 1.0))
def test_a_lower_share_of_the_link_never_leaves_kmedic_more_room(
    capacity: float, used: float, share: float, lower: float
) -> None:
    lower = min(share, lower)
    wider = headroom_rate(capacity, used, Headroom(utilisation=share), urgent=False)
    narrower = headroom_rate(capacity, used, Headroom(utilisation=lower), urgent=False)
    assert narrower <= wider


def test_a_brokers_write_budget_is_its_headroom_rate_over_outpace() -> None:
    rule = Headroom(utilisation=0.7, ratio=1.0, outpace=2.0)
    link = Link(5 * MB, 5 * MB, "its agent")
    budgets = write_budgets(
        [1, 2, 3],
        {1: Traffic(1 * MB, 2 * MB), 2: Traffic(4 * MB, 6 * MB)},  # 3: no figure
        {1: link, 2: link, 3: link},
        rule,
    )
    assert budgets == {
        (1, FOLLOWER_RATE): pytest.approx((3.5 - 1) * MB / 2),
        (1, LEADER_RATE): pytest.approx((3.5 - 2) * MB / 2),
        (2, FOLLOWER_RATE): 0.0,  # over its share: one copy at a time
        (2, LEADER_RATE): 0.0,  # over its link
    }


@given(rates, st.floats(0, 1), capacities)
def test_writes_within_the_budget_leave_the_rate_at_the_headroom(
    used: float, share: float, capacity: float
) -> None:
    # The outpace floor lifts a rate over the headroom only for writes over the budget.
    link = Link(capacity, capacity, "")
    budget = write_budgets([1], {1: Traffic(used, used)}, {1: link}, RULE)[(1, FOLLOWER_RATE)]
    written = budget * share * (1 - 1e-9)
    assert headroom_rate(capacity, used, RULE, urgent=False, writes=written) == headroom_rate(
        capacity, used, RULE, urgent=False
    )
