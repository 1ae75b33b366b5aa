"""Each topic's effective ``min.insync.replicas``, for the unsafe-topic check
(manager.analyzer.topic_safety): read with DescribeConfigs for a topic new to it at once, and
for every topic again every ``refresh_s`` (an operator's change shows within that). A read
that fails keeps what was known and is logged: it never blinds a cycle."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kmedic.kafka_admin import describe_min_insync
from kmedic.logging import get_logger

log = get_logger(__name__)


class TopicConfigs:
    def __init__(
        self, refresh_s: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.refresh_s = refresh_s
        self._clock = clock
        self._known: dict[str, int] = {}
        self._read_at: float | None = None

    def read(self, client: Any, topics: set[str]) -> dict[str, int]:
        """The setting of each topic in ``topics`` that could be read, at some point."""
        due = self._read_at is None or self._clock() - self._read_at >= self.refresh_s
        wanted = sorted(topics if due else topics - set(self._known))
        if wanted:
            try:
                self._known.update(describe_min_insync(client, wanted))
                if due:
                    self._read_at = self._clock()
            except Exception as exc:  # kafka-python raises several unrelated types
                log.warning("topic_configs_unreadable", topics=len(wanted), error=str(exc))
        self._known = {t: v for t, v in self._known.items() if t in topics}
        return dict(self._known)
