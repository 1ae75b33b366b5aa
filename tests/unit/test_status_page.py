"""The manager's status page: what it shows, escaped HTML, and how the server serves it."""

from __future__ import annotations

import json
from typing import Any

from helpers import http_get
from planner_fixtures import NOW, broker, make, part

from manager.analyzer.planner import decide
from manager.audit.log import AuditRecord
from manager.executor.executor import MoveState
from manager.model.decision import Decision, Reason
from manager.model.moves import Move
from manager.web.metrics import ManagerMetrics, MetricsServer
from manager.web.status_page import render_html, status_document

SNAP = make(
    [broker(1, "/a"), broker(2, "/b"), broker(3, "/a", alive=False), broker(4, "/b")],
    {"orders": [part(0, [1, 3]), part(1, [2, 4])]},
)


def record(kind: str, summary: str) -> AuditRecord:
    return AuditRecord(cluster="c1", instance="m1", epoch=4, kind=kind, summary=summary)  # type: ignore[arg-type]


def document(**overrides: Any) -> dict[str, Any]:
    decision = decide(SNAP)
    move = MoveState(Move("orders", 0, (1, 4), 10), status="in_flight", original=(1, 3))
    settings: dict[str, Any] = {
        "cluster": "c1",
        "instance": "m1",
        "leader": True,
        "epoch": 4,
        "snapshot": SNAP,
        "decision": decision,
        "alerts": {"refused:x": "because <b>x</b>"},
        "moves": [move],
        "recent": [record("decision", "first"), record("action_started", "second")],
        "now_ms": NOW,
    }
    return status_document(**{**settings, **overrides})


def test_the_document_shows_brokers_loads_moves_alerts_and_newest_records_first() -> None:
    doc = document()
    assert doc["leader"] and doc["epoch"] == 4 and doc["snapshot_taken_at_ms"] == NOW
    brokers = {b["id"]: b for b in doc["brokers"]}
    assert set(brokers) == {1, 2, 3, 4}
    assert not brokers[3]["alive"] and brokers[3]["dead_since_ms"] is not None
    assert brokers[1]["load"]["replicas"] >= 1  # from the decision's loads before
    assert doc["last_decision"]["outcome"] == decide(SNAP).outcome
    assert doc["moves"] == [
        {
            "partition": "orders:0",
            "from": [1, 3],
            "to": [1, 4],
            "status": "in_flight",
            "timed_out": False,
        }
    ]
    assert [r["kind"] for r in doc["recent_audit"]] == ["action_started", "decision"]
    json.dumps(doc)  # serialisable as it is


def test_html_escapes_everything_it_shows() -> None:
    evil = Decision("refuse", None, "<script>alert(1)</script>", (Reason("r", "a < b"),))
    page = render_html(document(decision=evil))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "because &lt;b&gt;x&lt;/b&gt;" in page
    assert "DEAD since" in page and "orders:0" in page


def test_operator_requests_are_listed_oldest_first_and_escaped() -> None:
    stored = [
        {
            "id": "req-0000000001",
            "kind": "drain",
            "brokers": [4, 5],
            "state": "running",
            "created_ms": NOW - 60_000,
            "by": "alice@host",
            "updated_ms": NOW - 30_000,
            "note": "drain: 12 replica moves <left>",
        },
        {
            "id": "req-0000000002",
            "kind": "demote",
            "brokers": [2],
            "state": "pending",
            "created_ms": NOW,
            "by": "bob@host",
            "updated_ms": NOW,
            "note": "",
        },
    ]
    doc = document(requests=stored)
    assert [r["id"] for r in doc["requests"]] == ["req-0000000001", "req-0000000002"]
    page = render_html(doc)
    assert "Operator requests" in page and "<td>4, 5</td><td>running</td>" in page
    assert "12 replica moves &lt;left&gt;" in page
    assert "none stored" in render_html(document())


def test_a_standby_without_snapshot_renders_too() -> None:
    doc = document(leader=False, snapshot=None, decision=None, alerts={}, moves=[], recent=[])
    page = render_html(doc)
    assert "standby" in page and "no snapshot yet" in page and "no decision yet" in page


def test_the_server_serves_status_and_a_broken_status_is_a_500() -> None:
    state: dict[str, Any] = {"broken": False}

    def status() -> dict[str, Any]:
        if state["broken"]:
            raise ValueError("no snapshot lock")
        return document()

    server = MetricsServer(
        ManagerMetrics("c1").registry,
        lambda: (True, {}),
        host="127.0.0.1",
        status=status,
    ).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        code, ctype, body = http_get(base + "/status.json")
        assert code == 200 and ctype == "application/json"
        assert json.loads(body)["cluster"] == "c1"
        code, ctype, body = http_get(base + "/status")
        assert code == 200 and ctype.startswith("text/html") and "orders:0" in body
        assert "/status" in http_get(base + "/nope")[2]
        state["broken"] = True
        code, _, body = http_get(base + "/status.json")
        assert code == 500 and "no snapshot lock" in body
        assert http_get(base + "/metrics")[0] == 200, "the server survives a broken status"
    finally:
        server.stop()
