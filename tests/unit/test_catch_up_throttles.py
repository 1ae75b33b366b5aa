"""A catch-up (a broker back from a restart copying into its replicas outside the ISR) is
throttled by the executor as the move that would add that broker would be: leaders on the
replicas in sync, followers on the broker behind, a rate on each - and not at all once its
partition's replicas changed, or while a move runs on it (docs/planner.md, "Rejoin")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from manager.executor.config import ExecutorConfig
from manager.executor.throttle_step import Throttling
from manager.model.moves import CatchUp, Move
from manager.throttling.ownership import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)

RATE = 1_000_000


class NoConfigs:
    """An Admin client of a cluster where no throttle is set yet, and every change is taken."""

    def describe_configs(self, resources: Any, config_filter: str) -> dict[str, Any]:
        return {}

    def alter_configs(self, resources: Any, **_: Any) -> dict[str, Any]:
        return {r.resource_type: {r.name: "OK"} for r in resources}


def _call(call: Callable[[Any], Any], what: str) -> Any:
    return call(NoConfigs())


def _throttling(*catch_ups: CatchUp) -> Throttling:
    throttling = Throttling(ExecutorConfig(throttle_bytes_per_s=RATE), _call)
    throttling.catch_ups = {c.tp: c for c in catch_ups}
    return throttling


LIVE = frozenset({1, 2, 3, 4})


def test_a_catch_up_is_throttled_as_the_move_that_adds_the_broker_behind() -> None:
    throttling = _throttling(CatchUp("t", 0, (1, 3, 2), (3,)), CatchUp("t", 5, (3, 4), (3,)))
    replicas = {("t", 0): (1, 3, 2), ("t", 5): (3, 4)}
    prepared = throttling.prepare([], {}, {}, LIVE, replicas)
    topic = prepared.change.topics["t"]
    assert set(str(topic[LEADER_REPLICAS]).split(",")) == {"0:1", "0:2", "5:4"}
    assert set(str(topic[FOLLOWER_REPLICAS]).split(",")) == {"0:3", "5:3"}
    assert set(prepared.change.brokers) == {1, 2, 3, 4}
    for values in prepared.change.brokers.values():
        assert values == {LEADER_RATE: str(RATE), FOLLOWER_RATE: str(RATE)}


def test_a_catch_up_whose_replicas_changed_or_under_a_move_is_left_to_it() -> None:
    throttling = _throttling(CatchUp("t", 0, (1, 3, 2), (3,)), CatchUp("t", 1, (2, 3), (3,)))
    # Partition 0 was reassigned since; partition 1 has a move of its own running.
    replicas = {("t", 0): (1, 4, 2), ("t", 1): (2, 3)}
    move = Move("t", 1, (2, 4))
    prepared = throttling.prepare([move], {("t", 1): (2, 3)}, {}, LIVE, replicas)
    topic = prepared.change.topics["t"]
    assert set(str(topic[LEADER_REPLICAS]).split(",")) == {"1:2", "1:3"}
    assert topic[FOLLOWER_REPLICAS] == "1:4"


def test_no_catch_up_no_throttle() -> None:
    prepared = _throttling().prepare([], {}, {}, LIVE, {("t", 0): (1, 3, 2)})
    assert not prepared.change


def test_a_broker_still_down_gets_its_rate_when_it_is_back() -> None:
    """Armed while the broker is away: its leaders' side at once, its own rate on its return."""
    throttling = _throttling(CatchUp("t", 0, (1, 3, 2), (3,)))
    replicas = {("t", 0): (1, 3, 2)}
    away = throttling.prepare([], {}, {}, LIVE - {3}, replicas)
    assert set(away.change.brokers) == {1, 2}
    throttling.commit(away)
    back = throttling.prepare([], {}, {}, LIVE, replicas)
    assert set(back.change.brokers) == {3}


def test_a_replica_in_sync_is_throttled_no_more_while_the_rest_copies() -> None:
    """A move whose new replica joined the ISR (its election still to settle), and a catch-up
    caught up before the cycle dropped it: neither throttled. Kafka's follower leaves a
    throttled replica out of its fetch while its broker's quota is spent, in the ISR or not,
    and the partition's acks=all writes waited for it."""
    throttling = _throttling(CatchUp("t", 0, (1, 3, 2), (3,)), CatchUp("t", 1, (2, 3), (3,)))
    replicas = {("t", 0): (1, 3, 2), ("t", 1): (2, 3), ("u", 0): (1, 4), ("u", 1): (2, 4)}
    done, copying = Move("u", 0, (1, 4)), Move("u", 1, (2, 4))
    originals = {("u", 0): (1, 2), ("u", 1): (2, 1)}
    isr = {("t", 0): (1, 3, 2), ("t", 1): (2,), ("u", 0): (1, 4), ("u", 1): (2, 1)}
    prepared = throttling.prepare([done, copying], originals, isr, LIVE, replicas)
    topics = prepared.change.topics
    assert set(topics) == {"t", "u"}
    assert topics["t"][FOLLOWER_REPLICAS] == "1:3"  # partition 0's broker 3 is in sync
    assert topics["u"][FOLLOWER_REPLICAS] == "1:4"  # partition 0's move copied it all
    assert set(str(topics["u"][LEADER_REPLICAS]).split(",")) == {"1:1", "1:2"}
