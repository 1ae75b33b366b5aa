"""Kafka edges of the audit log: the producer sink, the topic, and a deduplicating reader."""

from __future__ import annotations

import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pydantic import ValidationError

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings, confluent_conf
from kmedic.logging import get_logger
from manager.audit.log import AuditRecord

log = get_logger(__name__)

DEFAULT_TOPIC = "kmedic.actions"
# Repeats are close together (a replay follows the outage), so a window of ids is enough.
DEDUPE_WINDOW = 200_000


class KafkaAuditSink:
    """An idempotent, acks=all producer to the audit topic; records of one cluster share a
    key, hence a partition, hence their order."""

    def __init__(self, name: str, cluster: Cluster, topic: str = DEFAULT_TOPIC) -> None:
        self.name = name
        self.cluster = cluster
        self.bootstrap_servers = client_settings(cluster).bootstrap
        self.topic = topic
        self._producer: Any = None
        self._fatal: KafkaError | None = None
        self._timeout_ms: int | None = None

    def _ensure_producer(self, timeout_s: float) -> Any:
        timeout_ms = max(1000, int(timeout_s * 1000))
        if self._producer is not None and self._fatal is None and self._timeout_ms == timeout_ms:
            return self._producer
        if self._producer is not None:
            log.warning("audit_producer_recreated", sink=self.name, fatal=str(self._fatal))
            self._producer.purge()
            self._producer.flush(0)
        self._fatal = None
        self._timeout_ms = timeout_ms
        self._producer = Producer(
            confluent_conf(
                self.cluster,
                {
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 5,
                    # The bound: a record not acknowledged by then is reported failed, not retried
                    # forever in the background (it goes to the failover sink instead).
                    "message.timeout.ms": timeout_ms,
                    "socket.connection.setup.timeout.ms": max(1000, timeout_ms // 2),
                    "reconnect.backoff.max.ms": 1000,
                    "error_cb": self._on_error,
                    # librdkafka's own lines go through logging like everything else.
                    "logger": logging.getLogger(f"{__name__}.rdkafka.{self.name}"),
                },
            )
        )
        return self._producer

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self._fatal = err

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        if not records:
            return 0
        producer = self._ensure_producer(timeout_s)
        outcome: list[KafkaError | bool | None] = [False] * len(records)

        def delivered(i: int) -> Callable[[KafkaError | None, Any], None]:
            def callback(err: KafkaError | None, _msg: Any) -> None:
                outcome[i] = err

            return callback

        for i, record in enumerate(records):
            while True:
                try:
                    producer.produce(
                        self.topic,
                        value=record.to_json(),
                        key=record.cluster.encode(),
                        timestamp=record.time_ms,
                        on_delivery=delivered(i),
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
                except KafkaException as exc:
                    log.warning("audit_produce_failed", sink=self.name, error=str(exc))
                    outcome[i] = exc.args[0] if exc.args else None
                    break
        producer.flush(timeout_s + 1.0)
        acked = 0
        for result in outcome:
            if result is None:  # delivered without error
                acked += 1
            else:
                break
        if acked < len(records):
            first = outcome[acked]
            log.warning(
                "audit_sink_incomplete",
                sink=self.name,
                acked=acked,
                of=len(records),
                error=str(first) if first is not False else "no acknowledgement in time",
            )
        return acked

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None


def ensure_audit_topic(
    cluster: Cluster, topic: str = DEFAULT_TOPIC, replication_factor: int = 3
) -> None:
    """Create the audit topic when missing (one partition: one order for everything), with
    at most as many replicas as the cluster has brokers."""
    bootstrap_servers = client_settings(cluster).bootstrap
    conf = confluent_conf(cluster, {"logger": logging.getLogger(f"{__name__}.admin")})
    admin = AdminClient(conf)
    try:
        brokers = len(admin.list_topics(timeout=15).brokers)
    except KafkaException as exc:
        raise KmedicError(f"cannot reach Kafka at {bootstrap_servers}: {exc}") from exc
    replication_factor = max(1, min(replication_factor, brokers))
    futures = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=1,
                replication_factor=replication_factor,
                config={"retention.ms": str(30 * 24 * 3600 * 1000)},
            )
        ],
        request_timeout=15,
    )
    try:
        futures[topic].result(timeout=20)
    except KafkaException as exc:
        err = exc.args[0]
        if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise KmedicError(f"cannot create the audit topic {topic}: {err.str()}") from exc


def read_records(
    cluster: Cluster,
    topic: str = DEFAULT_TOPIC,
    *,
    since_ms: int | None = None,
    follow: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    timeout_s: float = 15.0,
    notice: Callable[[str], None] = lambda _: None,
) -> Iterator[AuditRecord]:
    """Records in topic order with repeats (same id) dropped. Without ``follow`` it stops at
    the end of the topic as it was when reading started, and an error ends it. With
    ``follow`` a transient error (brokers restarting, a connection lost) is told to
    ``notice`` once, reading goes on, and ``notice`` hears again when records flow again."""
    problems: list[KafkaError] = []  # errors of the client itself (brokers down, ...)
    bootstrap_servers = client_settings(cluster).bootstrap
    consumer = Consumer(
        confluent_conf(
            cluster,
            {
                "error_cb": problems.append,
                "group.id": f"kmedic-actions-tail-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": False,
                "logger": logging.getLogger(f"{__name__}.reader"),
            },
        )
    )
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s)
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            why = info.error.str() if info is not None and info.error else "missing"
            raise KmedicError(f"cannot read audit topic {topic} at {bootstrap_servers}: {why}")
        parts = [TopicPartition(topic, p) for p in sorted(info.partitions)]
        ends = {
            tp.partition: consumer.get_watermark_offsets(tp, timeout=timeout_s)[1] for tp in parts
        }
        if since_ms is not None:
            lookup = [TopicPartition(topic, tp.partition, since_ms) for tp in parts]
            starts = consumer.offsets_for_times(lookup, timeout=timeout_s)
            parts = [
                TopicPartition(
                    topic, tp.partition, tp.offset if tp.offset >= 0 else ends[tp.partition]
                )
                for tp in starts
            ]
        else:
            parts = [TopicPartition(topic, tp.partition, 0) for tp in parts]
        consumer.assign(parts)
        remaining = {tp.partition for tp in parts if tp.offset < ends[tp.partition]}
        seen: OrderedDict[str, None] = OrderedDict()
        deadline = time.monotonic() + timeout_s
        troubled = False
        while follow or remaining:
            if should_stop():
                return
            msg = consumer.poll(0.5)
            if follow and problems:
                troubled = _trouble(problems, topic, notice, troubled)
            if msg is None:
                if not follow and time.monotonic() > deadline:
                    raise KmedicError(
                        f"timed out reading {topic} at {bootstrap_servers} "
                        f"(partitions {sorted(remaining)} not read to the end)"
                    )
                continue
            error = msg.error()
            if error is not None and not follow:
                raise KmedicError(f"reading {topic} failed: {error.str()}")
            if error is not None:
                problems.append(error)
                troubled = _trouble(problems, topic, notice, troubled)
                continue
            if troubled:
                notice(f"reading {topic} again")
                troubled = False
            deadline = time.monotonic() + timeout_s
            offset, partition = int(msg.offset() or 0), int(msg.partition() or 0)
            if offset + 1 >= ends.get(partition, 0):
                remaining.discard(partition)
            try:
                record = AuditRecord.from_json(msg.value() or b"")
            except ValidationError as exc:
                log.warning(
                    "audit_record_unreadable", offset=msg.offset(), errors=exc.error_count()
                )
                continue
            if record.id in seen:
                continue
            seen[record.id] = None
            if len(seen) > DEDUPE_WINDOW:  # --follow runs for days: remember recent ids only
                seen.popitem(last=False)
            yield record
    finally:
        consumer.close()


def _trouble(
    problems: list[KafkaError], topic: str, notice: Callable[[str], None], troubled: bool
) -> bool:
    """While following: a fatal error ends the reading; a transient one is told once."""
    error = problems[-1]
    problems.clear()
    if error.fatal():
        raise KmedicError(f"reading {topic} failed: {error.str()}")
    if not troubled:
        notice(f"cannot read {topic} right now ({error.str()}); still following")
    return True
