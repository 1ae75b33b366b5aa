"""Folding a client library's repeated lines: one line per state change, not one per retry.

While a broker is down, librdkafka and kafka-python log every reconnect attempt (a manager
started before its cluster wrote about 800 lines a minute, two feeds' consumers alone 660).
A line from a client library whose text, numbers aside, its logger already let through within
``window_s`` is held back and counted; the next time that text is let through it says how many
were held. A text not seen for a window (a new state: connected, refused, another broker)
passes at once, so each broker's each state shows about once a minute however fast the
library retries. kmedic's own events are never folded.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

# Loggers whose lines are folded: the Kafka and ZooKeeper client libraries, and the
# librdkafka lines kmedic routes through loggers named "...rdkafka...".
FOLDED_PREFIXES = ("kafka.", "kazoo.")
FOLDED_PART = ".rdkafka"

WINDOW_S = 60.0
MAX_SHAPES = 1000

# An address (host:port, an IPv4 address) is kept whole: another broker is another line.
_ADDRESS_OR_NUMBER = re.compile(
    r"(?P<address>\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?|[A-Za-z][\w.-]*:\d+)|\d+(?:\.\d+)?"
)


def shape(message: str) -> str:
    """The text with its numbers taken out (backoffs, timings, counters, client ids), its
    addresses kept."""
    return _ADDRESS_OR_NUMBER.sub(lambda m: m.group("address") or "#", message)


def folded(logger: str) -> bool:
    return logger.startswith(FOLDED_PREFIXES) or FOLDED_PART in logger


class FoldRepeats(logging.Filter):
    def __init__(self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        # (logger name, shape) -> (when last let through, lines held since)
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not folded(record.name):
            return True
        try:
            text = shape(record.getMessage())
        except Exception:  # a record that cannot format: let logging say so
            return True
        now, key = self._clock(), (record.name, text)
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last[0] < self.window_s:
                self._seen[key] = (last[0], last[1] + 1)
                return False
            held = last[1] if last is not None else 0
            self._seen[key] = (now, 0)
            if len(self._seen) > MAX_SHAPES:  # bounded: the oldest shapes are forgotten
                for old in sorted(self._seen, key=lambda k: self._seen[k][0])[: MAX_SHAPES // 2]:
                    del self._seen[old]
        if held:
            record.msg = f"{record.getMessage()} (and {held} lines like the last one held back)"
            record.args = ()
        return True
