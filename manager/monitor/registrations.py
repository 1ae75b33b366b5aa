"""Which brokers left the cluster's registrations between two cycles, and came back.

A cycle reads the cluster every few seconds. A broker that stops for a while (a long GC pause,
a stopped JVM) is fenced by the controller once its session times out, and is removed from every
ISR; resumed a few seconds later, it registers again and its followers catch up. If no cycle
fell inside the fenced window, the manager never saw it gone: its lagging replicas then look like
a slow follower's, and the cycle refuses and pages for a broker that is simply catching up. So a
thread asks DescribeCluster every ``interval_s`` between cycles and remembers each return; the
cycle takes them (``ClusterSources`` turns a return into ``returned_ms``, the recovery window).
The same reads say when a broker left: a dead broker's grace counts from the read that first
missed it (within ``interval_s`` of its fencing), not from the next cycle's.

The rule for a return is pure (``Returns.saw``); the thread and its Admin client are the edge.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kmedic.logging import get_logger
from kmedic.thread_names import named_thread

log = get_logger(__name__)


@dataclass
class Returns:
    """Registration changes seen between two takes: who was away since when, who came back."""

    registered: frozenset[int] | None = None
    away_since_ms: dict[int, int] = field(default_factory=dict)
    returned_ms: dict[int, int] = field(default_factory=dict)

    def saw(self, registered: frozenset[int], now_ms: int) -> bool:
        """One read of the registered (unfenced) brokers at ``now_ms``; whether a broker left
        or came back since the last read."""
        changed = self.registered is not None and registered != self.registered
        if self.registered is not None:
            for b in self.registered - registered:
                self.away_since_ms.setdefault(b, now_ms)
        for b in registered:
            if self.away_since_ms.pop(b, None) is not None:
                self.returned_ms[b] = now_ms
        self.registered = registered
        return changed

    def take(self) -> tuple[dict[int, int], dict[int, int]]:
        """The returns seen since the last take (each broker's latest), forgotten once taken,
        and who is away at the last read, since when (a cycle that sees one of them
        registered again sees its return before the watch does)."""
        taken, self.returned_ms = self.returned_ms, {}
        return taken, dict(self.away_since_ms)


class RegistrationWatch:
    """``read()`` (the unfenced broker ids) every ``interval_s`` on a thread of its own; a read
    that fails is skipped (the cycle's own read says whether the cluster can be observed).
    ``on_change`` is called (on the watch's thread) when a broker left or came back."""

    def __init__(self, read: Callable[[], frozenset[int]], interval_s: float = 1.0) -> None:
        self._read = read
        self._interval_s = interval_s
        self._returns = Returns()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_change: Callable[[], None] = lambda: None

    def start(self, on_change: Callable[[], None] = lambda: None) -> RegistrationWatch:
        """Watch from now; ``on_change`` is called (on the watch's thread) when a broker leaves
        the registrations or comes back."""
        self._on_change = on_change
        self._thread = named_thread(self._run, "registrations")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def away(self) -> frozenset[int]:
        """Who is away at the last read (nothing is consumed)."""
        with self._lock:
            return frozenset(self._returns.away_since_ms)

    def take(self) -> tuple[dict[int, int], dict[int, int]]:
        with self._lock:
            return self._returns.take()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                registered = self._read()
            except Exception as exc:  # kafka-python raises several unrelated types
                log.debug("registrations_unread", error=str(exc) or type(exc).__name__)
            else:
                with self._lock:
                    changed = self._returns.saw(registered, int(time.time() * 1000))
                if changed:
                    self._on_change()
            self._stop.wait(self._interval_s)
