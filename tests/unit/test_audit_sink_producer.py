"""The audit producer's settings: what its availability depends on."""

from __future__ import annotations

from typing import Any

import pytest

from manager.audit import kafka_sink
from manager.audit.kafka_sink import KafkaAuditSink


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
