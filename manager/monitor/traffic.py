"""The adaptive throttle's feed (manager.executor.throttle_rates.TrafficFeed): each broker's
traffic from its agent's newest record, and its network capacity from the ``capacity:``
section of the config."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from manager.model.adaptive_throttle import Traffic, broker_traffic
from manager.monitor.observe import CapacitySettings
from manager.monitor.sources import ClusterSources, newest_stats


class AgentTraffic:
    def __init__(
        self,
        sources: ClusterSources,
        capacity: CapacitySettings,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._sources = sources
        self._capacity = Traffic(capacity.network_in_bytes_per_s, capacity.network_out_bytes_per_s)
        self._wall_ms = wall_ms

    def traffic(self) -> Mapping[int, Traffic]:
        return broker_traffic(newest_stats(self._sources), self._wall_ms())

    def capacity(self, broker: int) -> Traffic:
        return self._capacity
