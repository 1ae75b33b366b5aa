"""The manager's status page: what it shows, escaped HTML, and how the server serves it."""

from __future__ import annotations

import json
from typing import Any

from api_support import serve
from helpers import http_get
from planner_fixtures import GB, MB, NOW, broker, make, part

from manager.analyzer.planner import decide
from manager.audit.log import AuditRecord
from manager.executor.move_state import MoveState
from manager.model.decision import Decision, Reason
from manager.model.moves import Move
from manager.model.plan_progress import PlanProgress
from manager.web.charts import CHART_W, PAD_L
from manager.web.metrics import ManagerMetrics
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
            "bytes": 10,
            "status": "in_flight",
            "running_s": None,
            "stalled": False,
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
        {
            "id": "req-0000000003",
            "kind": "set_rf",
            "brokers": [],
            "topic": "pay",
            "replication_factor": 3,
            "state": "pending",
            "created_ms": NOW,
            "by": "carol@host",
            "updated_ms": NOW,
            "note": "",
        },
    ]
    doc = document(requests=stored)
    assert [r["id"] for r in doc["requests"]] == [f"req-000000000{n}" for n in (1, 2, 3)]
    page = render_html(doc)
    assert "Operator requests" in page and "<td>brokers 4, 5</td><td>running</td>" in page
    assert "<td>topic pay, RF 3</td><td>pending</td>" in page
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

    server = serve(ManagerMetrics("c1").registry, lambda: (True, {}), status=status)
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


def test_brokers_carry_state_domain_capacity_and_limits() -> None:
    snap = make(
        [
            broker(1, "/a"),
            broker(2, "/b"),
            broker(3, "/a", alive=False),  # dead an hour: past the 10-minute grace
            broker(4, "/b", alive=False, dead_since_ms=NOW - 60_000),
        ],
        {"orders": [part(0, [1, 3], size=900 * GB, bytes_in=90 * MB), part(1, [2, 4])]},
        failure_domains=[{"name": "left", "brokers": [1, 3]}],
    )
    doc = document(snapshot=snap, decision=decide(snap))
    brokers = {b["id"]: b for b in doc["brokers"]}
    assert {b: x["state"] for b, x in brokers.items()} == {
        1: "alive",
        2: "alive",
        3: "dead",
        4: "waiting",
    }
    assert brokers[4]["grace_ends_ms"] == NOW - 60_000 + snap.policy.dead_grace_ms
    assert brokers[3]["grace_ends_ms"] is None
    assert brokers[1]["domain"] == "left" and brokers[2]["domain"] == "/b"
    assert brokers[1]["capacity"]["disk_bytes"] == 1000 * GB
    assert brokers[1]["limits"]["disk_bytes"] == 1000 * GB * snap.policy.limits.disk_fraction
    page = render_html(doc)
    down = page[page.index('<section id="down">') : page.index('<section id="limits">')]
    assert "<td>3</td><td>left</td><td>dead</td>" in down
    assert "<td>4</td><td>/b</td><td>waiting</td>" in down and "over: may be healed" in down
    bars = page[page.index('<section id="limits">') : page.index('<section id="history">')]
    assert bars.count('class="broker"') == 4 and bars.count('class="bar"') == 12
    # Broker 1 holds 900 GB of its 1,000 GB (limit 85%) and 90 MB/s in of 100 MB/s (limit 80%).
    start = bars.index('data-broker="1"')
    broker_1 = bars[start : bars.index('class="broker"', start)]
    assert 'data-metric="disk" data-over="true"' in broker_1
    assert 'data-metric="in" data-over="true"' in broker_1
    assert 'data-metric="out" data-over="false"' in broker_1
    assert 'data-state="dead"' in bars and 'data-state="waiting"' in bars
    # Grouped by failure domain, in name order: "/b" before "left".
    assert bars.index(">/b</text>") < bars.index(">left</text>")


def test_a_slow_broker_says_so_in_the_brokers_table() -> None:
    slowness = {"state": "slow", "score": 6.0, "since_ms": NOW, "evidence": "probe_p90_ms 250"}
    snap = make(
        [broker(1, "/a", slowness=slowness), broker(2, "/b")], {"orders": [part(0, [1, 2])]}
    )
    doc = document(snapshot=snap, decision=decide(snap))
    brokers = {b["id"]: b for b in doc["brokers"]}
    assert brokers[1]["slowness"]["state"] == "slow" and brokers[2]["slowness"] is None
    assert "<td>1</td><td>/a</td><td>alive, SLOW (score 6.0)</td>" in render_html(doc)


def test_moves_show_size_and_how_long_they_have_run() -> None:
    moves = [
        MoveState(
            Move("orders", 0, (1, 4), 2 * GB), status="in_flight", original=(1, 3), started_at=100
        ),
        MoveState(Move("orders", 1, (2, 1), GB), original=(2, 4)),
    ]
    doc = document(moves=moves, now_monotonic=142.5)
    assert [(m["bytes"], m["running_s"]) for m in doc["moves"]] == [(2 * GB, 42.5), (GB, None)]
    page = render_html(doc)
    assert (
        "1 in flight, 1 queued" in page and "<td>2.00</td><td>in_flight</td><td>42 s</td>" in page
    )
    assert doc["plan_progress"] is None and "Plan:" not in page


def test_the_running_plan_says_what_is_copied_how_fast_and_how_long_is_left() -> None:
    figures = PlanProgress(GB, 3 * GB, 0, 2, 0, 40e6, 50.0)
    doc = document(progress=figures)
    assert doc["plan_progress"]["eta_s"] == 50.0
    assert (
        "<p>Plan: 1.0 GB of 3.0 GB copied (33%), 0 of 2 moves done, 40.0 MB/s, about 50 s left</p>"
    ) in render_html(doc)


def test_the_load_chart_draws_one_line_per_broker_and_the_limit() -> None:
    history = {
        1: [(NOW - 120_000, 0.2), (NOW - 60_000, 0.3), (NOW, 0.35)],
        2: [(NOW - 60_000, 0.9), (NOW, 0.95)],
    }
    doc = document(history=history, history_span_ms=3_600_000)
    assert doc["history"]["series"]["2"] == [[NOW - 60_000, 0.9], [NOW, 0.95]]
    assert doc["history"]["network_limit"] == 0.8
    page = render_html(doc)
    chart = page[page.index('<section id="history">') : page.index('<section id="moves">')]
    assert "the last 1 h at most" in chart
    assert chart.count('class="series"') == 2 and chart.count('class="legend"') == 2
    line_1 = chart[chart.index('data-broker="1" points="') :].split('"')[3]
    assert len(line_1.split()) == 3
    assert 'class="network-limit"' in chart and "limit 80%" in chart
    assert "no load history yet" in render_html(document())


def test_the_load_chart_spans_the_history_it_has_not_the_whole_window() -> None:
    # Two minutes of a manager's life on a 6-hour window: the oldest point at the left edge,
    # the newest at the right, the axis labelled with their clocks.
    history = {1: [(NOW - 120_000, 0.2), (NOW - 60_000, 0.3), (NOW, 0.35)]}
    page = render_html(document(history=history, history_span_ms=6 * 3_600_000))
    chart = page[page.index('<section id="history">') : page.index('<section id="moves">')]
    points = chart[chart.index('data-broker="1" points="') :].split('"')[3].split()
    xs = [float(p.split(",")[0]) for p in points]
    assert xs[0] == PAD_L and xs[-1] == CHART_W
    assert xs[1] == (PAD_L + CHART_W) / 2
    # Older points than the window are still left out.
    old = {1: [(NOW - 7 * 3_600_000, 0.5), (NOW - 60_000, 0.3), (NOW, 0.35)]}
    page = render_html(document(history=old, history_span_ms=3_600_000))
    chart = page[page.index('<section id="history">') : page.index('<section id="moves">')]
    assert len(chart[chart.index('data-broker="1" points="') :].split('"')[3].split()) == 2


def test_finished_requests_leave_the_page_after_a_day_open_ones_never() -> None:
    """Issue 72.7: every finished request was kept forever (14 filled a screen)."""

    def request(n: int, state: str, age_h: float) -> dict[str, Any]:
        at = NOW - int(age_h * 3_600_000)
        return {
            "id": f"req-{n:010d}",
            "kind": "drain",
            "brokers": [n],
            "state": state,
            "created_ms": at,
            "by": "op@host",
            "updated_ms": at,
            "note": "",
        }

    stored = [
        request(1, "done", 30),
        request(2, "cancelled", 25),
        request(3, "pending", 48),
        request(4, "done", 2),
        request(5, "failed", 23),
    ]
    shown = [r["id"] for r in document(requests=stored)["requests"]]
    assert shown == ["req-0000000003", "req-0000000004", "req-0000000005"]


def test_an_observe_mode_decision_is_headed_would_act_with_the_modes_source() -> None:
    """Issue 72.7: in observe mode the decision was headed "noop" ("noop: would act ...
    heal"), and the mode line did not say where the mode came from."""
    from manager.analyzer.situation import observe_only

    dead = make(
        [broker(1, "/a"), broker(2, "/b"), broker(3, "/a", alive=False)],
        {"orders": [part(0, [1, 3], alive={1, 2})]},
    )
    held = observe_only(decide(dead), "observe mode")
    assert held.would_act == "observe mode", held.summary
    page = render_html(document(decision=held, mode="observe", mode_source="run_time"))
    assert "<p><strong>would act</strong>: would act (observe mode)" in page
    assert "<strong>mode: observe</strong> (set at run time (kmedic mode))" in page
    assert "mode: act (from the config)" in render_html(document())
