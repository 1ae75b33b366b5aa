"""Each live broker's static replication settings (manager.model.replication_settings): read
with DescribeConfigs for a broker new to it at once, and for every broker again every
``refresh_s`` (a rolling restart that changes them shows within that). A read that fails
keeps what was known and is logged: it never blinds a cycle."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kmedic.kafka_admin import ReplicationTiming, describe_replication_timings
from kmedic.logging import get_logger

log = get_logger(__name__)


class BrokerSettings:
    def __init__(
        self, refresh_s: float = 600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.refresh_s = refresh_s
        self._clock = clock
        self._known: dict[int, ReplicationTiming] = {}
        self._read_at: float | None = None

    def read(self, client: Any, brokers: set[int]) -> dict[int, ReplicationTiming]:
        """The settings of each broker in ``brokers`` that could be read, at some point."""
        due = self._read_at is None or self._clock() - self._read_at >= self.refresh_s
        wanted = sorted(brokers if due else brokers - set(self._known))
        if wanted:
            try:
                self._known.update(describe_replication_timings(client, wanted))
                if due:
                    self._read_at = self._clock()
            except Exception as exc:  # kafka-python raises several unrelated types
                log.warning("broker_settings_unreadable", brokers=wanted, error=str(exc))
        self._known = {b: v for b, v in self._known.items() if b in brokers}
        return dict(self._known)
