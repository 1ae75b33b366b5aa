"""Each topic's effective ``min.insync.replicas``, for the unsafe-topic check
(manager.analyzer.topic_safety), read as manager.monitor.config_reads reads: a topic new to
it at once (again 5 s later, then at doubling waits, while Kafka gives no value: a topic just
created), every topic every 5 minutes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kmedic import kafka_admin
from manager.monitor.config_reads import ConfigReads


def topic_configs(
    refresh_s: float = 300.0, clock: Callable[[], float] = time.monotonic
) -> ConfigReads[str, int]:
    def describe(client: Any, topics: list[str]) -> dict[str, int]:
        return kafka_admin.describe_min_insync(client, topics)

    # A topic created a moment ago may not be known yet to the broker asked: seconds later.
    return ConfigReads(describe, "topic_configs", refresh_s, clock, retry_s=5.0)
