"""Whether Kafka hands preferred leadership back itself (``auto.leader.rebalance.enable``), for
the rejoin goal (manager.analyzer.goals.rejoin): with it on, kmedic leaves a returning broker's
leadership to Kafka. Read from one live broker with DescribeConfigs at the first cycle and
every ``refresh_s`` after (an operator's change shows within that); a read that fails keeps
what was known and is logged: it never blinds a cycle."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

from kmedic.kafka_admin import describe_auto_leader_rebalance
from kmedic.logging import get_logger

log = get_logger(__name__)


class LeaderRebalanceSetting:
    def __init__(
        self, refresh_s: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.refresh_s = refresh_s
        self._clock = clock
        self._known: bool | None = None
        self._read_at: float | None = None

    def read(self, client: Any, live: Collection[int]) -> bool | None:
        """The setting as the lowest live broker has it (None: never read)."""
        due = self._read_at is None or self._clock() - self._read_at >= self.refresh_s
        if due and live:
            try:
                found = describe_auto_leader_rebalance(client, min(live))
                self._known = found if found is not None else self._known
                self._read_at = self._clock()
            except Exception as exc:  # kafka-python raises several unrelated types
                log.warning("leader_rebalance_setting_unreadable", error=str(exc))
        return self._known
