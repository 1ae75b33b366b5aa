"""A fresh instance reads the stats and load topics to their ends before its first decision,
for at most ``WARM_UP_LIMIT_S``: judged half-read, the loads look stale and a heal looks
unneeded. Once every feed was read to its end (or the limit ran out) it is warm for good:
stale or missing records are judged as such from then on."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from manager.monitor.feeds import FeedStatus

WARM_UP_LIMIT_S = 30.0


class WarmUp:
    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self._started_at = monotonic()
        self._warm = False
        self.reading: list[str] = []  # the topics the last look found still being read

    def still_reading(self, feeds: Callable[[], Iterable[FeedStatus]]) -> list[str]:
        """The topics not yet read to their end (empty once warm)."""
        if not self._warm:
            behind = [f.topic for f in feeds() if not f.caught_up]
            if not behind or self._monotonic() - self._started_at >= WARM_UP_LIMIT_S:
                self._warm = True
            self.reading = [] if self._warm else behind
        return self.reading
