"""The audit producer's settings: what its availability depends on."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from manager.audit import kafka_sink
from manager.audit.kafka_sink import KafkaAuditSink
from manager.audit.log import AuditRecord


def test_the_audit_producer_needs_no_producer_id_and_keeps_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by CI: idempotent, it first asked a broker cut off from the controllers (fenced,
    # still answering) for a producer id; "coordinator load in progress" for the whole cut,
    # and no audit record reached the topic during the heal. Order across retries is kept by
    # one request in flight; a record written twice is dropped by the readers (its id).
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(kafka_sink, "Producer", lambda conf: made.append(conf) or object())
    KafkaAuditSink("primary", "127.0.0.1:9092")._ensure_producer(5.0)
    [conf] = made
    assert conf["enable.idempotence"] is False
    assert conf["max.in.flight.requests.per.connection"] == 1
    assert conf["acks"] == "all"
    assert conf["message.timeout.ms"] == 5000


def test_a_send_not_delivered_within_its_bound_leaves_nothing_that_could_be_sent_later() -> None:
    """A leader's lease nearly spent bounds a send below the producer's own timeout: what it
    has not delivered by then is purged and the producer dropped with its connections (a
    request built behind one awaiting its acknowledgement was sent after the lease, found by
    the soak's request logs); the next send connects anew. Against a port nobody answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections to it are refused
    sink = KafkaAuditSink("primary", f"127.0.0.1:{port}")
    producer = sink._ensure_producer(30.0)
    record = AuditRecord(cluster="c", instance="m1", epoch=1, kind="decision", summary="s")
    assert sink.send([record], 0.3) == 0
    # Nothing queued or in flight: nothing sent after the bound. The purge's own reports may
    # still be counted for a moment (CI once saw 2 just after it, under load): served, none.
    deadline = time.monotonic() + 5
    while len(producer) and time.monotonic() < deadline:
        producer.poll(0.05)
    assert len(producer) == 0
    assert sink._producer is None  # dropped, and its connections with it
    assert sink.send([record], 0.3) == 0 and sink._producer is None
    sink.close()
