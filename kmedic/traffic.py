"""Steady produce traffic at known rates, for the demo and for tests that check measurements.

A rate is set per partition, so "known, unequal byte rates" are exact by construction: each
partition gets ``bytes_per_s`` in records of ``record_bytes`` on a fixed schedule.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer

from kmedic.kafka_client import Cluster, confluent_conf
from kmedic.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class PartitionRate:
    topic: str
    partition: int
    bytes_per_s: float
    record_bytes: int = 1000

    @property
    def records_per_s(self) -> float:
        return self.bytes_per_s / self.record_bytes


class TrafficGenerator:
    """A background thread producing each PartitionRate on schedule until ``stop``."""

    def __init__(
        self, cluster: Cluster, rates: list[PartitionRate], *, tick_s: float = 0.1
    ) -> None:
        self._rates = rates
        self._tick_s = tick_s
        self._producer = Producer(
            confluent_conf(
                cluster,
                {
                    "acks": "1",
                    "linger.ms": 20,
                    "compression.type": "none",  # compressed bytes would blur the known rates
                    "message.timeout.ms": 30000,
                    # A dead broker is expected here; failures are counted, not logged.
                    "log_level": 0,
                },
            )
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)
        self.sent_records = 0
        self.failed_records = 0

    def start(self) -> TrafficGenerator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.flush(10)

    def __enter__(self) -> TrafficGenerator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _on_delivery(self, err: object, _msg: object) -> None:
        if err is not None:
            self.failed_records += 1

    def _run(self) -> None:
        start = time.monotonic()
        owed = [0.0] * len(self._rates)
        payloads = {r.record_bytes: os.urandom(r.record_bytes) for r in self._rates}
        last = start
        while not self._stop.is_set():
            now = time.monotonic()
            elapsed, last = now - last, now
            for i, rate in enumerate(self._rates):
                owed[i] += rate.records_per_s * elapsed
                while owed[i] >= 1:
                    owed[i] -= 1
                    try:
                        self._producer.produce(
                            rate.topic,
                            value=payloads[rate.record_bytes],
                            partition=rate.partition,
                            on_delivery=self._on_delivery,
                        )
                        self.sent_records += 1
                    except (BufferError, KafkaException) as exc:
                        # A full queue while a broker is down: drop the record, keep the pace.
                        self.failed_records += 1
                        log.debug("traffic_record_dropped", error=str(exc))
            self._producer.poll(0)
            self._stop.wait(self._tick_s)
