"""The audit follow on its own bounded pool (issue 71.8), on the real server over loopback:
past ``http.max_followers`` a follow is refused with 429 while ``/healthz`` and ``/metrics``
keep answering (they shared one thread pool: about 40 idle followers starved them), and a
follow without ``since`` starts at the end of the topic (it replayed the whole of it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from api_support import serve

import manager.api.audit_feed as audit_feed
from manager.web.metrics import ManagerMetrics

FOLLOWERS = 3


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Each follow's ``since_ms``; its reader yields nothing until it is told to stop, as a
    follow of a quiet audit topic does."""
    seen: list[int | None] = []

    def quiet(
        *_: Any, since_ms: int | None = None, should_stop: Callable[[], bool], **__: Any
    ) -> Iterator[Any]:
        seen.append(since_ms)
        while not should_stop():
            time.sleep(0.05)
        return
        yield  # a generator

    monkeypatch.setattr(audit_feed, "read_records", quiet)
    return seen


def test_followers_past_the_limit_are_refused_and_the_probes_keep_answering(
    asked: list[int | None],
) -> None:
    server = serve(ManagerMetrics("c1").registry, lambda: (True, {}), max_followers=FOLLOWERS)
    base = f"http://127.0.0.1:{server.port}"
    opened: list[requests.Response] = []
    try:
        for _ in range(FOLLOWERS):
            opened.append(requests.get(f"{base}/api/v1/audit/follow", stream=True, timeout=10))
        assert all(r.status_code == 200 for r in opened)
        deadline = time.monotonic() + 10
        while len(asked) < FOLLOWERS and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(asked) == FOLLOWERS, f"{len(asked)} follows reading"
        refused = requests.get(f"{base}/api/v1/audit/follow", timeout=10)
        assert refused.status_code == 429, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert "http.max_followers 3" in refused.json()["detail"]
        started = time.monotonic()
        for path in ("/healthz", "/metrics"):
            assert requests.get(base + path, timeout=5).status_code == 200
        print(
            f"/healthz and /metrics beside {FOLLOWERS} follows: {time.monotonic() - started:.3f} s"
        )
        # Without since, each follow started at the end of the topic: now, not the beginning.
        assert all(s is not None and abs(s - time.time() * 1000) < 60_000 for s in asked), asked
        opened.pop().close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            again = requests.get(f"{base}/api/v1/audit/follow", stream=True, timeout=10)
            if again.status_code == 200:
                opened.append(again)
                break
            time.sleep(0.2)
        else:
            pytest.fail("a closed follow's place was never given to the next")
    finally:
        for r in opened:
            r.close()
        server.stop()


def test_a_follow_with_since_starts_there(asked: list[int | None]) -> None:
    server = serve(ManagerMetrics("c1").registry, lambda: (True, {}))
    try:
        answer = requests.get(
            f"http://127.0.0.1:{server.port}/api/v1/audit/follow",
            params={"since": "2h"},
            stream=True,
            timeout=10,
        )
        assert answer.status_code == 200
        deadline = time.monotonic() + 10
        while not asked and time.monotonic() < deadline:
            time.sleep(0.05)
        assert asked and asked[0] is not None
        assert abs(asked[0] - (time.time() - 7200) * 1000) < 60_000
        answer.close()
    finally:
        server.stop()
    assert threading.active_count() < 50
