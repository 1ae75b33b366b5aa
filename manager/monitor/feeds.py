"""Background tails of the topics the manager reads: the latest value per key.

Each feed is one consumer thread with no consumer group (manual assignment, no commits): a
manager instance, leader or standby, always holds the whole current picture, so a failover
needs no warm-up beyond the catch-up. The compacted load topics are read from the beginning;
the stats topic from a look-back window, since only recent records say anything about liveness.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from kmedic.kafka_client import Cluster, confluent_conf, error_text
from kmedic.logging import get_logger
from kmedic.thread_names import named_thread
from manager.monitor.read_to import ReadTo

log = get_logger(__name__)

V = TypeVar("V")
# Records fetched ahead of the decoding, which is what bounds a feed, not the fetch: about a
# second of the busiest feed at fleet scale (4 MB/s; a whole agent record is up to 1 MB),
# not librdkafka's 64 MB a consumer (at 16 MB and 8 MB the feed process peaked 30 MB higher
# for the same feeds, docs/bench.md).
QUEUED_KB = 4 * 1024
FETCH_MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class FeedStatus:
    topic: str
    keys: int
    records: int
    bad_records: int
    caught_up: bool  # read to the end of every partition, or the topic does not exist
    last_error: str | None


def _asking(client_id: str, topic: str) -> dict[str, object]:
    """The settings of the client that asks the partitions' leaders for the read-to moments:
    never polled, never committing; it learns a new leader within a second."""
    return {
        "group.id": f"{client_id}-unused",
        "enable.auto.commit": False,
        "client.id": f"{client_id}-read-to",
        "topic.metadata.refresh.interval.ms": 1000,
        "logger": logging.getLogger(f"{__name__}.rdkafka.{topic}.read_to"),
    }


class LatestByKey(Generic[V]):
    """Keeps ``decode(value)`` of the newest record of every key of ``topic``.

    ``merge(old, new)`` decides what the newest state of a key is (default: the new value);
    a record that fails to decode is counted and skipped, never fatal. A tombstone removes
    its key. With ``read_to``, the feed also keeps the moment up to which it has read each
    partition (manager.monitor.read_to) and which partition each key was last written to:
    ``read_to_of(key)``.
    """

    def __init__(
        self,
        bootstrap: Cluster,
        topic: str,
        decode: Callable[[bytes], V],
        *,
        lookback_ms: int | None = None,
        merge: Callable[[V | None, V], V] | None = None,
        client_id: str = "kmedic-manager",
        read_to: bool = False,
    ) -> None:
        self.topic = topic
        self._decode = decode
        self._merge = merge
        self._lookback_ms = lookback_ms
        self._consumer = Consumer(
            confluent_conf(
                bootstrap,
                {
                    "group.id": f"{client_id}-unused",  # required by the client; never committed
                    "enable.auto.commit": False,
                    "client.id": client_id,
                    "enable.partition.eof": True,
                    # A feed that vouches for what it read learns a new partition leader
                    # sooner: a lost host's agent is silent, as read, once its partition has
                    # another leader (manager.monitor.read_to).
                    "topic.metadata.refresh.interval.ms": 1000 if read_to else 10000,
                    "queued.max.messages.kbytes": QUEUED_KB,
                    "fetch.max.bytes": FETCH_MAX_BYTES,
                    # librdkafka's own lines go through logging like everything else.
                    "logger": logging.getLogger(f"{__name__}.rdkafka.{topic}"),
                },
            )
        )
        self._lock = threading.Lock()
        self._values: dict[bytes, V] = {}
        self._records = 0
        self._bad = 0
        self._eof: set[int] = set()
        self._partitions: set[int] = set()
        self._missing = False  # the topic does not exist (yet): nothing to catch up on
        self._last_error: str | None = None
        self._read_to = (
            ReadTo(Consumer(confluent_conf(bootstrap, _asking(client_id, topic))), topic)
            if read_to
            else None
        )
        self._key_partition: dict[bytes, int] = {}
        self._stop = threading.Event()
        self._thread = named_thread(self._run, f"feed-{topic}")

    def start(self) -> LatestByKey[V]:
        self._thread.start()
        if self._read_to is not None:
            self._read_to.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._read_to is not None:
            self._read_to.stop()
        self._thread.join(timeout=10)
        self._consumer.close()

    def read_to_of(self, key: bytes) -> int | None:
        """The moment up to which every record of ``key``'s partition has been read (None:
        not kept, the key not seen, or its partition not yet vouched for)."""
        if self._read_to is None:
            return None
        with self._lock:
            partition = self._key_partition.get(key)
        return None if partition is None else self._read_to.of(partition)

    def values(self) -> dict[bytes, V]:
        """A copy of the current picture (the caller's snapshot must not change under it)."""
        with self._lock:
            return dict(self._values)

    def status(self) -> FeedStatus:
        with self._lock:
            caught_up = self._missing or (bool(self._partitions) and self._partitions <= self._eof)
            return FeedStatus(
                self.topic,
                self._count(),
                self._records,
                self._bad,
                caught_up,
                self._last_error,
            )

    def _assign(self) -> bool:
        meta = self._consumer.list_topics(self.topic, timeout=5)
        tmeta = meta.topics.get(self.topic)
        unknown = tmeta is None or (
            tmeta.error is not None and tmeta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        )
        with self._lock:
            self._missing = unknown
        if tmeta is None or tmeta.error is not None or not tmeta.partitions:
            return False
        parts = [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in tmeta.partitions]
        if self._lookback_ms is not None:
            since = int(time.time() * 1000) - self._lookback_ms
            found = self._consumer.offsets_for_times(
                [TopicPartition(self.topic, p, since) for p in tmeta.partitions], timeout=10
            )
            # -1 (no record after `since`) means: start at the end.
            parts = [
                TopicPartition(self.topic, tp.partition, tp.offset if tp.offset >= 0 else -1)
                for tp in found
            ]
        self._consumer.assign(parts)
        with self._lock:
            self._partitions = {tp.partition for tp in parts}
        return True

    def _run(self) -> None:
        assigned = False
        while not self._stop.is_set():
            try:
                if not assigned:
                    assigned = self._assign()
                    if not assigned:
                        self._stop.wait(1.0)
                        continue
                msg = self._consumer.poll(0.5)
            except Exception as exc:  # the broker side may be down; keep trying
                self._note_error(error_text(exc))
                self._stop.wait(1.0)
                continue
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    partition = msg.partition() or 0
                    with self._lock:
                        self._eof.add(partition)
                    self._applied(partition, msg.offset())
                else:
                    self._note_error(str(err))
                continue
            partition = msg.partition() or 0
            self._apply(msg.key(), msg.value(), partition)
            offset = msg.offset()
            self._applied(partition, None if offset is None else offset + 1)

    def _applied(self, partition: int, next_offset: int | None) -> None:
        if self._read_to is not None and next_offset is not None and next_offset >= 0:
            self._read_to.applied(partition, next_offset)

    def _apply(self, key: bytes | None, raw: bytes | None, partition: int = 0) -> None:
        if key is None:
            with self._lock:
                self._bad += 1
            return
        if raw is None:
            with self._lock:
                self._remove(key)
            return
        try:
            value = self._decode(raw)
        except Exception as exc:  # a bad record is counted, never fatal
            with self._lock:
                self._bad += 1
            log.warning(
                "feed_record_skipped",
                topic=self.topic,
                key=key.decode(errors="replace"),
                error=str(exc)[:300],
            )
            return
        with self._lock:
            self._records += 1
            if self._merge is not None:
                value = self._merge(self._values.get(key), value)
            self._put(key, value)
            if self._read_to is not None:
                self._key_partition[key] = partition

    # The store, under the lock; a feed that keeps its values otherwise overrides these.

    def _put(self, key: bytes, value: V) -> None:
        self._values[key] = value

    def _remove(self, key: bytes) -> None:
        self._values.pop(key, None)

    def _count(self) -> int:
        return len(self._values)

    def _note_error(self, text: str) -> None:
        with self._lock:
            self._last_error = text
