"""The agent's probe of its own broker: ApiVersions round trips between samples, so that a
broker that answers slowly (a stopped JVM, a stalled disk, a full request queue) shows in its
record even while its sampling still succeeds (the manager's slow-broker score).

The loop probes every ``PROBE_EVERY_S`` while it waits for the next sample; each sample takes
what was measured since the previous one. Probing never raises: a failed probe is counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agent.admin import AdminApiError
from kmedic import brokerstats as bs

PROBE_EVERY_S = 0.25


def percentile(sorted_ms: list[float], q: float) -> float:
    """The nearest-rank percentile ``q`` (0-1) of a sorted, non-empty list."""
    rank = max(1, -(-len(sorted_ms) * q // 1))  # ceil(n * q), at least the first
    return sorted_ms[int(rank) - 1]


class Prober:
    def __init__(
        self,
        probe_ms: Callable[[float], float],
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe_ms = probe_ms
        self._timeout_s = timeout_s
        self._clock = clock
        self._next_at = 0.0
        self._answered: list[float] = []
        self._failed = 0

    def probe_if_due(self) -> None:
        """One probe, if ``PROBE_EVERY_S`` has passed since the last one began."""
        now = self._clock()
        if now < self._next_at:
            return
        self._next_at = now + PROBE_EVERY_S
        try:
            self._answered.append(min(self._probe_ms(self._timeout_s), self._timeout_s * 1000))
        except AdminApiError:
            self._failed += 1

    def take(
        self, produce_local_ms: float | None = None, log_flush_ms: float | None = None
    ) -> bs.Latency:
        """What was measured since the last take, with the exporter's figures. A failed probe
        counts as taking its whole timeout: a broker that does not answer is slow."""
        failed = self._failed
        timed = sorted([*self._answered, *[self._timeout_s * 1000] * failed])
        self._answered, self._failed = [], 0
        return bs.Latency(
            probe_count=len(timed),
            probe_failures=failed,
            probe_p50_ms=round(percentile(timed, 0.5), 3) if timed else None,
            probe_p90_ms=round(percentile(timed, 0.9), 3) if timed else None,
            probe_max_ms=round(timed[-1], 3) if timed else None,
            produce_local_ms=produce_local_ms,
            log_flush_ms=log_flush_ms,
        )
