"""Kafka's own ``auto.leader.rebalance.enable``, as the monitor reads it for the rejoin goal
(manager/monitor/leader_rebalance.py): from the lowest live broker, at the first cycle and every
refresh after; a failed read keeps what was known and is tried again the next cycle."""

from __future__ import annotations

from typing import Any

from kmedic.kafka_admin import AUTO_LEADER_REBALANCE, describe_auto_leader_rebalance
from manager.monitor.leader_rebalance import LeaderRebalanceSetting


class Client:
    """DescribeConfigs as kafka-python's admin client answers it, for broker resources."""

    def __init__(self, value: str | None) -> None:
        self.value = value
        self.down = False
        self.asked: list[str] = []

    def describe_configs(self, resources: list[Any], config_filter: str) -> dict[str, Any]:
        assert config_filter == "all"
        if self.down:
            raise ConnectionError("no broker answered")
        [resource] = resources
        self.asked.append(resource.name)
        entries = {} if self.value is None else {AUTO_LEADER_REBALANCE: {"value": self.value}}
        return {"broker": {resource.name: entries}}


def test_the_setting_is_read_as_a_bool_or_none() -> None:
    assert describe_auto_leader_rebalance(Client("true"), 1) is True
    assert describe_auto_leader_rebalance(Client("FALSE"), 1) is False
    assert describe_auto_leader_rebalance(Client(None), 1) is None
    assert describe_auto_leader_rebalance(Client("maybe"), 1) is None


def test_read_from_the_lowest_live_broker_at_first_and_every_refresh() -> None:
    now = [0.0]
    setting = LeaderRebalanceSetting(refresh_s=300, clock=lambda: now[0])
    client = Client("false")
    assert setting.read(client, {3, 2, 4}) is False
    now[0] = 100
    client.value = "true"  # an operator's change shows at the next refresh, not before
    assert setting.read(client, {3, 2, 4}) is False
    now[0] = 300
    assert setting.read(client, {4, 3}) is True
    assert client.asked == ["2", "3"]


def test_a_failed_read_keeps_what_was_known_and_is_tried_again() -> None:
    now = [0.0]
    setting = LeaderRebalanceSetting(refresh_s=300, clock=lambda: now[0])
    client = Client("false")
    client.down = True
    assert setting.read(client, {1}) is None  # never read: unknown
    client.down = False
    assert setting.read(client, {1}) is False  # the next cycle tries again
    now[0] = 400
    client.down = True
    assert setting.read(client, {1}) is False
    assert setting.read(client, set()) is False  # no live broker to ask
