"""Each broker's network load over the last hours, kept by the manager for its status page.

Bounded by construction: one point per ``step_s`` per broker (the newest cycle's figure
replaces the step's earlier one, so a 3 s cycle does not fill it 20 times faster than a
60 s one), points older than ``span_s`` behind the newest are dropped, and a broker gone from
the snapshot is dropped with its points. At the defaults (6 h in 1 min steps) that is at most
360 points per broker. Written by the daemon's thread, read by the HTTP thread: a lock guards
both.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping

from manager.model.decision import BrokerLoad

DEFAULT_SPAN_S = 6 * 3600
DEFAULT_STEP_S = 60


class LoadHistory:
    def __init__(self, *, span_s: int = DEFAULT_SPAN_S, step_s: int = DEFAULT_STEP_S) -> None:
        if step_s <= 0 or span_s < step_s:
            raise ValueError(f"load history: need 0 < step_s <= span_s, got {step_s}, {span_s}")
        self.span_ms = span_s * 1000
        self.step_ms = step_s * 1000
        self._points: dict[int, deque[tuple[int, float]]] = {}
        self._lock = threading.Lock()

    def record(self, at_ms: int, loads: Mapping[int, BrokerLoad]) -> None:
        """Adds each broker's network utilisation (in + out over capacity) at ``at_ms``."""
        step = at_ms - at_ms % self.step_ms
        with self._lock:
            for gone in self._points.keys() - loads.keys():
                del self._points[gone]
            for b, load in loads.items():
                points = self._points.setdefault(b, deque())
                if points and points[-1][0] == step:
                    points.pop()
                if points and points[-1][0] > step:
                    continue  # a clock step backwards: keep the series in time order
                points.append((step, load.network_util))
                while points[0][0] <= step - self.span_ms:
                    points.popleft()

    def series(self) -> dict[int, list[tuple[int, float]]]:
        """broker -> [(step start ms, network utilisation)], oldest first; a copy."""
        with self._lock:
            return {b: list(points) for b, points in sorted(self._points.items())}
