"""Settings read from Kafka with DescribeConfigs, by key (a topic, a broker): a key new to
the reader is read at once, every key again every ``refresh_s`` (an operator's change shows
within that); a read that fails keeps what was known and is logged: it never blinds a cycle.
A key Kafka answered for without the setting is asked again after ``retry_s`` (the refresh,
unless told), then after twice as long each time it is still unanswered, up to ``refresh_s``;
never every cycle (at fleet scale every broker asked again each cycle cost 0.2-0.6 s of a
cycle's time). A topic created a moment ago, not yet known to the broker asked, is retried
after 5 s (manager.monitor.topic_configs); a broker that does not report its settings, at the
refresh.
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
        retry_s: float | None = None,
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
        self.retry_s = refresh_s if retry_s is None else retry_s
        # An unanswered key: when it is asked again, and the wait before that.
        self._unanswered: dict[K, tuple[float, float]] = {}

    def read(self, client: Any, keys: set[K]) -> dict[K, V]:
        """The setting of each key in ``keys`` that could be read, at some point."""
        now = self._clock()
        due = self._read_at is None or now - self._read_at >= self.refresh_s
        wanted = sorted(keys if due else {k for k in keys if self._ask(k, now)})
        if wanted:
            try:
                answered = self._describe(client, wanted)
            except Exception as exc:  # kafka-python raises several unrelated types
                log.warning(f"{self._what}_unreadable", keys=wanted, error=str(exc))
            else:
                self._known.update(answered)
                if due:
                    self._read_at = now
                    self._asked = set()
                self._asked.update(wanted)
                for key in wanted:
                    if key in answered:
                        self._unanswered.pop(key, None)
                    else:
                        wait = self._unanswered.get(key, (0.0, self.retry_s / 2))[1] * 2
                        wait = min(wait, self.refresh_s)
                        self._unanswered[key] = (now + wait, wait)
        self._known = {k: v for k, v in self._known.items() if k in keys}
        self._asked &= keys
        self._unanswered = {k: v for k, v in self._unanswered.items() if k in keys}
        return dict(self._known)

    def _ask(self, key: K, now: float) -> bool:
        """Whether ``key`` is asked between refreshes: new to the reader, or unanswered and its
        wait over."""
        if key not in self._asked:
            return True
        again = self._unanswered.get(key)
        return again is not None and now >= again[0]
