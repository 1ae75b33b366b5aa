"""Each live broker's static replication settings (manager.model.replication_settings), read
as manager.monitor.config_reads reads: a broker new to it at once, every broker every 10
minutes (a rolling restart that changes them shows within that)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kmedic import kafka_admin
from kmedic.kafka_admin import ReplicationTiming
from manager.monitor.config_reads import ConfigReads


def broker_settings(
    refresh_s: float = 600.0, clock: Callable[[], float] = time.monotonic
) -> ConfigReads[int, ReplicationTiming]:
    def describe(client: Any, brokers: list[int]) -> dict[int, ReplicationTiming]:
        return kafka_admin.describe_replication_timings(client, brokers)

    return ConfigReads(describe, "broker_settings", refresh_s, clock)
