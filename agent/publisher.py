"""Publish records to the stats topic: compressed, acks=all, keyed by broker id, bounded queue.

The producer's queue is capped (``max_queued_records``): while the stats topic is unavailable
newer records are dropped and counted rather than held without limit, and librdkafka gives up
on a queued record after ``message.timeout.ms``. Memory therefore stays bounded however long
the outage lasts.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException

from agent.config import AgentConfig
from kmedic import brokerstats as bs
from kmedic.errors import KmedicError
from kmedic.kafka_client import confluent_conf
from kmedic.logging import get_logger
from kmedic.own_topics import MIN_INSYNC, own_min_insync, own_replication

log = get_logger(__name__)

DeliveryHook = Callable[[float | None, str | None], None]
"""Called per record: (latency in seconds or None, error or None)."""


def producer_settings(config: AgentConfig) -> dict[str, Any]:
    return confluent_conf(
        config.publish_client,
        {
            "client.id": f"kmedic-agent-{config.broker_id}",
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": config.compression,
            "linger.ms": 20,
            "message.max.bytes": config.max_record_bytes + 100_000,
            "queue.buffering.max.messages": config.max_queued_records,
            "queue.buffering.max.kbytes": max(1024, config.max_queued_records * 64),
            "message.timeout.ms": int(max(60.0, config.interval_s * 10) * 1000),
            # librdkafka's own log lines go through the standard logging pipeline, not raw stderr.
            "logger": logging.getLogger(f"{__name__}.rdkafka"),
        },
    )


def ensure_topic(config: AgentConfig, timeout_s: float = 15.0) -> bool:
    """Create the stats topic if it is missing. True when it exists afterwards."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    settings = confluent_conf(
        config.publish_client, {"logger": logging.getLogger(f"{__name__}.rdkafka")}
    )
    admin = AdminClient(settings)
    try:
        md = admin.list_topics(timeout=timeout_s)
        if config.topic in md.topics and md.topics[config.topic].error is None:
            return True
        wanted = config.topic_settings
        rf = own_replication(wanted.replication_factor, len(md.brokers))
        topic = NewTopic(
            config.topic,
            num_partitions=wanted.partitions,
            replication_factor=rf,
            config={
                "cleanup.policy": "delete",
                "retention.ms": str(wanted.retention_ms),
                MIN_INSYNC: str(own_min_insync("stats", rf)),
                "max.message.bytes": str(config.max_record_bytes + 100_000),
            },
        )
        future = admin.create_topics([topic], request_timeout=timeout_s)[config.topic]
        try:
            future.result(timeout=timeout_s)
            log.info("stats_topic_created", topic=config.topic, partitions=wanted.partitions, rf=rf)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
        return True
    except KafkaException as exc:
        log.warning("stats_topic_unavailable", topic=config.topic, error=str(exc))
        return False


ProducerFactory = Callable[[dict[str, Any]], Any]


def _confluent_producer(settings: dict[str, Any]) -> Any:
    from confluent_kafka import Producer

    return Producer(settings)


class Publisher:
    """The agent's producer. A fatal producer error (the idempotent producer can no longer
    guarantee order, say after brokers died mid-batch) does not end the agent: the producer is
    replaced, what it still held is counted as lost, and publishing goes on."""

    def __init__(
        self,
        config: AgentConfig,
        on_delivery: DeliveryHook | None = None,
        *,
        producer_factory: ProducerFactory = _confluent_producer,
    ) -> None:
        self.topic = config.topic
        self._key = str(config.broker_id).encode()
        self._on_delivery = on_delivery
        self._settings = {**producer_settings(config), "error_cb": self._on_error}
        self._factory = producer_factory
        self._fatal: str | None = None
        self.replaced = 0
        self._producer = self._new_producer()

    def _new_producer(self) -> Any:
        try:
            return self._factory(self._settings)
        except Exception as exc:
            raise KmedicError(f"cannot create the Kafka producer: {exc}") from exc

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            self._fatal = str(err)

    def _replace_producer(self, why: str) -> None:
        lost = len(self._producer)
        with contextlib.suppress(Exception):
            self._producer.purge()
            self._producer.flush(0)
        self._producer = self._new_producer()
        self._fatal = None
        self.replaced += 1
        log.warning("producer_replaced", reason=why, records_lost=lost)
        if self._on_delivery is not None:
            for _ in range(lost):
                self._on_delivery(None, f"lost with a failed producer: {why}")

    def publish(self, record: bs.BrokerStats | bs.Heartbeat, value: bytes | None = None) -> bool:
        """Queue one record (``value``: its JSON, when the caller has it already); False (and
        counted as an error) when the queue is full."""
        sent_at = time.monotonic()

        def delivered(err: Any, _msg: Any) -> None:
            if self._on_delivery is None:
                return
            if err is not None:
                self._on_delivery(None, str(err))
            else:
                self._on_delivery(time.monotonic() - sent_at, None)

        if self._fatal is not None:
            self._replace_producer(self._fatal)
        if value is None:
            value = bs.to_json(record)
        for attempt in (1, 2):
            try:
                self._producer.produce(self.topic, value, self._key, on_delivery=delivered)
                break
            except BufferError:
                return self._dropped(record, "producer queue full")
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if attempt == 1 and error is not None and error.fatal():
                    self._replace_producer(str(error))
                    continue
                return self._dropped(record, f"the producer refused it: {exc}")
        self.poll(0)
        return True

    def _dropped(self, record: bs.BrokerStats | bs.Heartbeat, why: str) -> bool:
        sample = record.sample_id if isinstance(record, bs.BrokerStats) else "heartbeat"
        log.warning("record_dropped", reason=why, sample=sample)
        if self._on_delivery is not None:
            self._on_delivery(None, why)
        return False

    def poll(self, timeout_s: float = 0.0) -> None:
        """Serve delivery reports and logs. A fatal error raised here replaces the producer
        at once: a failed producer would raise it again on every call."""
        try:
            self._producer.poll(timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is not None and error.fatal():
                self._replace_producer(str(error))
            else:
                log.warning("producer_poll_failed", error=str(exc))

    def flush(self, timeout_s: float) -> int:
        """Deliver what is queued; returns how many records are still undelivered."""
        try:
            remaining: int = self._producer.flush(timeout_s)
        except KafkaException as exc:  # a failed producer delivers nothing more
            log.warning("producer_flush_failed", error=str(exc))
            return len(self._producer)
        return remaining
