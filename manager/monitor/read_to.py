"""Up to which moment a feed has read every record of each partition of its topic.

A feed that has no new record of a key cannot tell on its own whether none was written or it
could not fetch the partition (its leader unreachable from this manager alone): an idle
partition and a blind one look alike. So every ``every_s`` each partition's leader is asked its
high watermark (a ListOffsets request, ``get_watermark_offsets(cached=False)``, each with its
own ``timeout_s``, one partition after another); once the feed has applied up to the answer,
every record acknowledged before the question was sent has been read, and the moment asked is
vouched for (at once, or when the feed gets there: a busy partition's feed is always a little
behind the answer). ``of(partition)`` is the moment of the newest question so vouched for
(None: none yet). An agent's silence is evidence only up to that moment
(manager.monitor.dead_class).

The questions go through a client of their own: the client serializes the calls made on one
handle, and a feed polling its consumer all the time kept them waiting for minutes (found by
bench_oracle's lost host: the feed's handle asked, no partition was vouched for after the kill).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Protocol

from confluent_kafka import TopicPartition

from kmedic.logging import get_logger
from kmedic.thread_names import named_thread

log = get_logger(__name__)

EVERY_S = 1.0
TIMEOUT_S = 2.0
# Answers kept per partition until the feed has applied that far (a busy partition's feed is
# always a little behind the answer): the newest this many, about as many seconds.
PENDING = 16


class Watermarks(Protocol):
    """What is asked of the client of its own (a confluent_kafka.Consumer never polled)."""

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = ..., cached: bool = ...
    ) -> tuple[int, int]: ...

    def close(self) -> None: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class ReadTo:
    """The moments each partition of ``topic`` was read to, kept by asking ``client`` (its
    own: ``stop`` closes it)."""

    def __init__(
        self,
        client: Watermarks,
        topic: str,
        *,
        every_s: float = EVERY_S,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self._client = client
        self._topic = topic
        self._every_s = every_s
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._applied: dict[int, int] = {}  # partition: the next offset the feed would apply
        self._read_to: dict[int, int] = {}  # partition: the moment vouched for (ms)
        # partition: (moment asked, high watermark answered), oldest first, not yet applied
        self._pending: dict[int, deque[tuple[int, int]]] = {}
        self._stop = threading.Event()
        self._thread = named_thread(self._run, f"read-to-{topic}")

    def start(self) -> ReadTo:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._timeout_s + 5)
        self._client.close()

    def applied(self, partition: int, next_offset: int) -> None:
        """The feed has applied everything of ``partition`` before ``next_offset`` (a record
        at ``next_offset - 1``, or the end it reached)."""
        with self._lock:
            if next_offset > self._applied.get(partition, -1):
                self._applied[partition] = next_offset
                pending = self._pending.get(partition)
                if pending:
                    self._settle(partition, pending, next_offset)

    def _settle(self, partition: int, pending: deque[tuple[int, int]], applied: int) -> None:
        """Every answer at or below ``applied`` vouches for its moment (under the lock)."""
        while pending and pending[0][1] <= applied:
            asked_ms, _ = pending.popleft()
            if asked_ms > self._read_to.get(partition, -1):
                self._read_to[partition] = asked_ms

    def of(self, partition: int) -> int | None:
        with self._lock:
            return self._read_to.get(partition)

    def ask_once(self) -> None:
        """One round: every partition the feed has applied anything of, one after another,
        each vouched for as of the moment it was asked."""
        with self._lock:
            partitions = sorted(self._applied)
        for p in partitions:
            if self._stop.is_set():
                return
            asked_ms = _now_ms()
            try:
                _, high = self._client.get_watermark_offsets(
                    TopicPartition(self._topic, p), timeout=self._timeout_s, cached=False
                )
            except Exception as exc:  # its leader did not answer: nothing vouched this round
                log.debug("read_to_unanswered", topic=self._topic, partition=p, error=str(exc))
                continue
            with self._lock:
                pending = self._pending.setdefault(p, deque(maxlen=PENDING))
                pending.append((asked_ms, high))
                self._settle(p, pending, self._applied.get(p, -1))

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self.ask_once()
