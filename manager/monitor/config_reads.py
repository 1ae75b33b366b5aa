"""Settings read from Kafka with DescribeConfigs, by key (a topic, a broker): a key new to
the reader is read at once, every key again every ``refresh_s`` (an operator's change shows
within that); a read that fails keeps what was known and is logged: it never blinds a cycle.
A key Kafka answered for without the setting is asked again at the next refresh, not every
cycle (at fleet scale every broker asked again each cycle cost 0.2-0.6 s of a cycle's time).
The topics' ``min.insync.replicas`` (manager.analyzer.topic_safety) and the brokers'
replication settings (manager.model.replication_settings) are read so."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kmedic.logging import get_logger

log = get_logger(__name__)

K = TypeVar("K", str, int)
V = TypeVar("V")


class ConfigReads(Generic[K, V]):
    def __init__(
        self,
        describe: Callable[[Any, list[K]], dict[K, V]],
        what: str,
        refresh_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``describe(client, keys)``: the settings of those keys Kafka answered for;
        ``what``: the log event's stem when a read fails (``{what}_unreadable``)."""
        self._describe: Callable[[Any, list[K]], dict[K, V]] = describe
        self._what = what
        self.refresh_s = refresh_s
        self._clock = clock
        self._known: dict[K, V] = {}
        self._asked: set[K] = set()  # since the last refresh, answered or not
        self._read_at: float | None = None

    def read(self, client: Any, keys: set[K]) -> dict[K, V]:
        """The setting of each key in ``keys`` that could be read, at some point."""
        due = self._read_at is None or self._clock() - self._read_at >= self.refresh_s
        wanted = sorted(keys if due else keys - self._asked)
        if wanted:
            try:
                self._known.update(self._describe(client, wanted))
                if due:
                    self._read_at = self._clock()
                    self._asked = set()
                self._asked.update(wanted)
            except Exception as exc:  # kafka-python raises several unrelated types
                log.warning(f"{self._what}_unreadable", keys=wanted, error=str(exc))
        self._known = {k: v for k, v in self._known.items() if k in keys}
        self._asked &= keys
        return dict(self._known)
