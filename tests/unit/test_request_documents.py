"""Operator request documents as stored in ZooKeeper (pure): each kind round-trips, and a
malformed one is refused naming the request and what is wrong with it."""

from __future__ import annotations

from typing import Any

import pytest

from manager.coordination.request_store import parse_request
from manager.coordination.znodes import CoordinationError

BASE = {"state": "pending", "created_ms": 1, "updated_ms": 1, "by": "op@host", "note": ""}


def test_a_set_rf_request_round_trips() -> None:
    doc = {"kind": "set_rf", "brokers": [], "topic": "pay", "replication_factor": 3, **BASE}
    request = parse_request("req-1", doc, 4)
    assert (request.topic, request.replication_factor, request.brokers) == ("pay", 3, ())
    assert request.sentence() == "request req-1 (set_rf topic pay to 3) is pending"
    assert parse_request("req-1", request.document(), 4) == request
    planned = request.for_planner()
    assert (planned.kind, planned.topic, planned.replication_factor) == ("set_rf", "pay", 3)


def test_a_broker_request_keeps_its_form() -> None:
    request = parse_request("req-2", {"kind": "drain", "brokers": [4, 5], **BASE}, 0)
    assert request.sentence() == "request req-2 (drain brokers 4, 5) is pending"
    assert "topic" not in request.document()


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"kind": "set_rf", "topic": "pay"}, "needs a topic and a replication_factor"),
        ({"kind": "set_rf", "topic": "", "replication_factor": 2}, "needs a topic"),
        ({"kind": "set_rf", "topic": "pay", "replication_factor": 0}, "of 1 or more"),
        ({"kind": "set_rf", "topic": "pay", "replication_factor": "x"}, "malformed"),
        ({"kind": "drain", "brokers": []}, "a drain names no broker"),
        ({"kind": "grow", "brokers": [1]}, "holds kind 'grow'"),
    ],
)
def test_a_malformed_request_is_refused_by_name(doc: dict[str, Any], says: str) -> None:
    with pytest.raises(CoordinationError, match="req-9") as caught:
        parse_request("req-9", {**BASE, **doc}, 0)
    assert says in str(caught.value)
