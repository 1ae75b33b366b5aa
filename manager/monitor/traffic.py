"""The adaptive throttle's feed (manager.throttling.rates.TrafficFeed): each broker's
traffic from its agent's newest record, and its network capacity by the snapshot's rule
(``observe.network_source``): the ``capacity:`` section when it sets one, else the link speed
the broker's agent reports, else the default."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from kmedic.replica_columns import TOPIC_IDS, AgentRecord, join, keys_of, last_wins
from manager.model.moves import TopicPartition
from manager.monitor.observation import AgentView
from manager.monitor.observe import CapacitySettings, network_capacity
from manager.throttling.adaptive import Link, Traffic, broker_traffic


class AgentTraffic:
    def __init__(
        self,
        agents: Callable[[], Mapping[int, AgentView]],
        capacity: CapacitySettings,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        """``agents``: each broker's agent view as the feeds hold it now."""
        self._agents = agents
        self._settings = capacity
        self._wall_ms = wall_ms
        self._newest: Mapping[int, AgentRecord] = {}

    def traffic(self) -> Mapping[int, Traffic]:
        self._newest = {b: v.record() for b, v in self._agents().items()}
        return broker_traffic(self._newest, self._wall_ms())

    def capacity(self, broker: int) -> Link:
        """By the agent record the last ``traffic()`` read."""
        record = self._newest.get(broker)
        return Link(*network_capacity(record.stats.nic if record else None, self._settings))

    def writes(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, float]:
        """By the agent records the last ``traffic()`` read: each partition's leader's
        bytes in."""
        wanted = list(partitions)
        if not wanted or not self._newest:
            return {}
        keys, rates = last_wins(
            np.concatenate([r.replicas.leader_key for r in self._newest.values()]),
            np.concatenate([r.replicas.leader_bytes_in for r in self._newest.values()]),
        )
        asked = keys_of(
            TOPIC_IDS.of([t for t, _ in wanted]), np.array([p for _, p in wanted], dtype=np.int64)
        )
        found, values = join(keys, rates, asked, 0.0)
        return {
            tp: rate
            for tp, ok, rate in zip(wanted, found.tolist(), values.tolist(), strict=True)
            if ok
        }
