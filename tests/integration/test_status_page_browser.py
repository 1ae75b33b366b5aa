"""The status page in a real browser: Debian's Chromium, headless, driven by Playwright.

The page is served by the manager's real HTTP server from a status document of a six-broker
cluster on three racks (one broker dead past its grace, one waiting, one over its disk limit)
with two hours of load history; the browser must render every section, one chart line per
broker, the bars against the limits, and a screenshot that is not blank.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from api_support import serve
from playwright.sync_api import Page, sync_playwright
from required_tools import needs

from manager.analyzer.finish import held_back
from manager.analyzer.planner import decide
from manager.audit.log import AuditRecord
from manager.executor.move_state import MoveState
from manager.model.moves import Move
from manager.model.plan_progress import PlanProgress
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot
from manager.web.load_history import LoadHistory
from manager.web.metrics import ManagerMetrics
from manager.web.status_page import status_document

CHROMIUM = shutil.which("chromium")
pytestmark = needs(
    CHROMIUM is None,
    "needs Chromium on PATH (Debian package `chromium`, installed by `make bootstrap`)",
)
# Headless, and quiet on this machine's closed network (no background connections).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BROKERS = (1, 2, 3, 4, 5, 6)
NOW = 1_700_000_000_000
MB = 1_000_000
GB = 1_000_000_000


def broker(bid: int, rack: str, *, dead_for_ms: int | None = None) -> dict[str, Any]:
    if dead_for_ms is None:
        return {"id": bid, "rack": rack, "alive": True, "last_stats_ms": NOW - 1000}
    return {"id": bid, "rack": rack, "alive": False, "dead_since_ms": NOW - dead_for_ms}


def part(n: int, replicas: list[int], *, size: int = GB, bytes_in: float = MB) -> dict[str, Any]:
    live = [b for b in replicas if b not in (4, 5)]
    load = {"bytes_in_per_s": bytes_in, "bytes_out_per_s": bytes_in, "messages_in_per_s": 1.0}
    return {
        "partition": n,
        "replicas": replicas,
        "isr": live,
        "leader": live[0],
        "size_bytes": size,
        "load": load,
    }


def snapshot() -> Snapshot:
    spread = ([1, 2, 3], [2, 3, 1], [3, 1, 2], [6, 1, 2], [1, 2, 6], [2, 6, 1])
    orders = [part(n, list(r), bytes_in=n * MB) for n, r in enumerate(spread)]
    big = [part(0, [1, 2, 4], size=900 * GB), part(1, [2, 3, 5], size=50 * GB)]
    data = {
        "schema_version": 1,
        "taken_at": NOW,
        "cluster": "browser-test",
        "default_capacity": {
            "network_in_bytes_per_s": 100 * MB,
            "network_out_bytes_per_s": 100 * MB,
            "disk_bytes": 1000 * GB,
        },
        "brokers": [
            broker(1, "/r1"),
            broker(2, "/r2"),
            broker(3, "/r3"),
            broker(4, "/r1", dead_for_ms=3_600_000),  # past the 10-minute grace
            broker(5, "/r2", dead_for_ms=60_000),  # waiting
            broker(6, "/r3"),
        ],
        "topics": [{"name": "orders", "partitions": orders}, {"name": "big", "partitions": big}],
        "policy": {"max_dead_brokers": 10, "max_dead_fraction": 1.0},
        "leadership": {"holder": "m1", "epoch": 7, "current_epoch": 7, "is_leader": True},
    }
    return parse_snapshot(json.dumps(data))


def leaders_document(snap: Snapshot, **shown: Any) -> dict[str, Any]:
    """The status document of the leader m1 (epoch 7) of this cluster, as of ``snap``."""
    return status_document(
        cluster="browser-test", instance="m1", leader=True, epoch=7, snapshot=snap, **shown
    )


def cluster_document() -> dict[str, Any]:
    snap = snapshot()
    history = LoadHistory(span_s=2 * 3600, step_s=60)
    loads = decide(snap).loads_before
    for minute in range(120):
        at = NOW - (119 - minute) * 60_000
        wave = {
            b: replace(load, network_util=(b * 7 + minute) % 90 / 100) for b, load in loads.items()
        }
        history.record(at, wave)
    return leaders_document(
        snap,
        decision=decide(snap),
        alerts={"refused:rack_violation": "a rack would hold two replicas"},
        moves=[
            MoveState(
                Move("big", 0, (1, 2, 6), 900 * GB),
                status="in_flight",
                original=(1, 2, 4),
                started_at=10.0,
            )
        ],
        recent=[
            AuditRecord(cluster="browser-test", instance="m1", epoch=7, kind="decision", summary=s)  # type: ignore[arg-type]
            for s in ("heal dead brokers 4", "waiting for broker 5")
        ],
        history=history.series(),
        history_span_ms=history.span_ms,
        now_ms=NOW,
        now_monotonic=70.0,
        readiness={
            "summary": "readiness: 1 of 2 losses healable; losing rack /r2 (brokers [3, 4]): "
            "NOT healable: pay:0: no usable broker left",
            "swept_at_ms": NOW,
            "scenarios": [
                {
                    "sentence": "losing broker 1: healable, 2 moves, 2000 MB to copy",
                    "healable": True,
                },
                {
                    "sentence": "losing rack /r2 (brokers [3, 4]): NOT healable: pay:0: no usable "
                    "broker left",
                    "healable": False,
                },
            ],
        },
    )


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    doc = cluster_document()
    server = serve(ManagerMetrics("browser-test").registry, lambda: (True, {}), status=lambda: doc)
    try:
        yield f"http://127.0.0.1:{server.port}/status"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def page(page_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1200, "height": 900},
        )
        try:
            tab = context.new_page()
            response = tab.goto(page_url, wait_until="load", timeout=30_000)
            assert response is not None and response.status == 200
            yield tab
        finally:
            context.close()


def test_every_section_renders(page: Page) -> None:
    assert page.title() == "kmedic browser-test"
    sections = ("decision", "alerts", "down", "limits", "history", "moves", "requests", "readiness")
    for section in sections:
        assert page.locator(f"section#{section} h2").is_visible(), section
    ready = page.locator("section#readiness").inner_text()
    assert "1 of 2 losses healable" in ready and "losing rack /r2" in ready
    assert "losing broker 1" not in ready  # only what would not be healed is listed
    assert "rack_violation" in page.locator("section#alerts").inner_text()
    down = page.locator("section#down").inner_text()
    assert "dead" in down and "waiting" in down
    moves = page.locator("section#moves").inner_text()
    assert "1 in flight, 0 queued" in moves and "60 s" in moves
    assert "heal dead brokers 4" in page.locator("section#audit").inner_text()


def test_the_chart_has_one_visible_line_per_broker(page: Page) -> None:
    lines = page.locator("svg.load-chart polyline.series")
    assert lines.count() == len(BROKERS)
    drawn = {lines.nth(i).get_attribute("data-broker") for i in range(lines.count())}
    assert drawn == {str(b) for b in BROKERS}
    for i in range(lines.count()):
        box = lines.nth(i).bounding_box()
        assert box is not None and box["width"] > 500, "a line spans the two hours"
    limit = page.locator("svg.load-chart line.network-limit").bounding_box()
    assert limit is not None and limit["width"] > 500  # a line of no height: never "visible"


def test_the_bars_show_every_broker_by_rack_and_the_one_over_its_limit(page: Page) -> None:
    bars = page.locator("svg.limit-bars")
    assert bars.locator("g.broker").count() == len(BROKERS)
    assert bars.locator("text.domain").all_text_contents() == [
        "/r1",
        "/r2",
        "/r3",
    ]
    over = bars.locator('g.bar[data-over="true"]')
    assert over.count() >= 1
    assert over.first.locator("xpath=..").get_attribute("data-broker") == "1"
    fill = bars.locator('g.broker[data-broker="1"] g.bar[data-metric="disk"] rect.fill')
    box = fill.bounding_box()
    assert box is not None and box["width"] > 100, "a disk 90% full draws a long bar"


def test_the_screenshot_is_not_blank(page: Page, tmp_path: Path) -> None:
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)  # kept for a person
    shot = page.locator("section#history").screenshot()
    # Count the distinct colours in the browser itself (a blank picture has one).
    colours = page.evaluate(
        """async (data) => {
            const img = new Image();
            img.src = 'data:image/png;base64,' + data;
            await img.decode();
            const canvas = document.createElement('canvas');
            canvas.width = img.width; canvas.height = img.height;
            const ctx = canvas.getContext('2d');
            ctx.drawImage(img, 0, 0);
            const px = ctx.getImageData(0, 0, img.width, img.height).data;
            const seen = new Set();
            for (let i = 0; i < px.length; i += 4) seen.add(px[i] << 16 | px[i+1] << 8 | px[i+2]);
            return seen.size;
        }""",
        base64.b64encode(shot).decode(),
    )
    assert colours > len(BROKERS) + 2, f"{colours} colours in the chart's screenshot"


DAY_MS = 24 * 3600 * 1000


def drain_document() -> dict[str, Any]:
    """The leader in act mode, draining broker 6: its request running with the plan's figures,
    the broker cordoned, an older drain finished two days ago (no longer shown) and one
    finished an hour ago (shown)."""
    snap = snapshot()
    cordoned = tuple(b.model_copy(update={"cordoned": b.id == 6}) for b in snap.brokers)
    snap = snap.model_copy(update={"brokers": cordoned})
    request = {"kind": "drain", "brokers": [6], "by": "alice@ops", "note": ""}
    return leaders_document(
        snap,
        decision=decide(snap),
        alerts={},
        moves=[
            MoveState(
                Move("orders", 3, (1, 2, 3), 200 * MB),
                status="in_flight",
                original=(6, 1, 2),
                started_at=40.0,
            )
        ],
        recent=[],
        requests=[
            {**request, "id": "r-0041", "state": "done", "updated_ms": NOW - 2 * DAY_MS},
            {**request, "id": "r-0057", "state": "done", "updated_ms": NOW - 3_600_000},
            {**request, "id": "r-0058", "state": "running", "updated_ms": NOW - 30_000},
        ],
        now_ms=NOW,
        now_monotonic=70.0,
        mode="act",
        mode_source="run_time",
        progress=PlanProgress(
            copied_bytes=120 * MB,
            total_bytes=600 * MB,
            moves_done=1,
            moves_total=3,
            rate_bytes_per_s=4 * MB,
            eta_s=120.0,
        ),
        cordoned_by=lambda b: "kmedic (drain r-0058)" if b == 6 else "unknown",
    )


def observe_document() -> dict[str, Any]:
    """The shipped default: observe mode from the config, broker 4 dead past its grace, the
    heal kept from the cluster (would act). Broker 5 is past its grace too."""
    snap = snapshot()
    past = tuple(
        b.model_copy(update={"dead_since_ms": NOW - 3_600_000}) if b.id == 5 else b
        for b in snap.brokers
    )
    snap = snap.model_copy(update={"brokers": past})
    return leaders_document(
        snap,
        decision=held_back(decide(snap), "observe mode"),
        alerts={"observe_mode:would_heal": "a heal is needed and observe mode keeps it"},
        moves=[],
        recent=[],
        now_ms=NOW,
        mode="observe",
        mode_source="config",
    )


@pytest.fixture(scope="module")
def other_pages(page: Page) -> Iterator[dict[str, Page]]:
    """The drain's and observe mode's pages, each in a tab of the same browser."""
    tabs, servers = {}, []
    try:
        for name, doc in (("drain", drain_document()), ("observe", observe_document())):
            server = serve(
                ManagerMetrics("browser-test").registry,
                lambda: (True, {}),
                status=lambda doc=doc: doc,
            )
            servers.append(server)
            tab = page.context.new_page()
            answer = tab.goto(f"http://127.0.0.1:{server.port}/status", timeout=30_000)
            assert answer is not None and answer.status == 200
            tabs[name] = tab
        yield tabs
    finally:
        for server in servers:
            server.stop()


def test_during_a_drain_the_page_shows_its_request_plan_and_cordon(
    other_pages: dict[str, Page],
) -> None:
    tab = other_pages["drain"]
    assert tab.locator("#mode").inner_text() == "mode: act (set at run time (kmedic mode))"
    requests = tab.locator("section#requests table tr")
    rows = [requests.nth(i).inner_text() for i in range(requests.count())]
    assert [r.split()[0] for r in rows[1:]] == ["r-0057", "r-0058"], rows  # r-0041: 2 days old
    assert "running" in rows[-1] and "alice@ops" in rows[-1], rows
    moves = tab.locator("section#moves").inner_text()
    assert "1 in flight, 0 queued" in moves and "Plan: " in moves and "120" in moves, moves
    assert "kmedic (drain r-0058)" in tab.locator("section#cordons").inner_text()


def test_in_observe_mode_the_page_says_what_it_would_do_and_who_chose_observe(
    other_pages: dict[str, Page],
) -> None:
    tab = other_pages["observe"]
    banner = tab.locator("#mode").inner_text()
    assert banner.startswith("mode: observe (from the config)") and "writes nothing" in banner
    decision = tab.locator("section#decision p").first.inner_text()
    assert decision.startswith("would act: would act (observe mode): heal"), decision
    assert not decision.startswith("noop"), decision
    assert "observe_mode:would_heal" in tab.locator("section#alerts").inner_text()
    assert tab.locator("section#moves").inner_text().endswith("no move in flight")
