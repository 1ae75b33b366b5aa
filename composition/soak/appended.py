"""The audit records as Kafka received them, for the lease-loss invariant to be judged from the
brokers' side: the soak creates the audit topic before any manager starts, with
``message.timestamp.type=LogAppendTime``, so every record carries the time its partition's
leader appended it - the brokers' clock, not the manager's claim of when it wrote it.

A manager cut off ZooKeeper that still wrote under its lease would show as a record of its
instance appended during the cut, whatever time it put in the record itself."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kmedic.errors import KmedicError
from manager.audit.log import AuditRecord

APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}


@dataclass(frozen=True)
class Appended:
    record: AuditRecord
    appended_ms: int  # when the audit partition's leader appended it


def create_audit_topic(bootstrap: str, topic: str) -> None:
    """The audit topic as the managers would create it (one partition, RF 3, 30 days), its
    records stamped by the brokers."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"retention.ms": str(30 * 24 * 3600 * 1000), **APPEND_TIME}
    futures = admin.create_topics([NewTopic(topic, 1, 3, config=config)])
    futures[topic].result(timeout=30)


def read_appended(bootstrap: str, topic: str, timeout_s: float = 60.0) -> list[Appended]:
    """Every record of ``topic`` (one partition) from its start to its end as it is now, each
    with the time Kafka appended it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"soak-appended-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        partition = TopicPartition(topic, 0)
        _, end = consumer.get_watermark_offsets(partition, timeout=timeout_s)
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[Appended] = []
        offset = -1
        deadline = time.monotonic() + timeout_s
        while offset + 1 < end:
            if time.monotonic() > deadline:
                raise KmedicError(f"{topic}: read to offset {offset} of {end} in {timeout_s:.0f} s")
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            offset = msg.offset() or 0
            kind, stamp = msg.timestamp()
            if kind != TIMESTAMP_LOG_APPEND_TIME:
                raise KmedicError(
                    f"{topic} offset {offset}: not stamped by the broker (timestamp type {kind}); "
                    "the soak creates the audit topic with message.timestamp.type=LogAppendTime"
                )
            out.append(Appended(AuditRecord.from_json(msg.value() or b""), stamp))
        return out
    except KafkaException as exc:
        raise KmedicError(f"reading {topic} at {bootstrap}: {exc}") from exc
    finally:
        consumer.close()
