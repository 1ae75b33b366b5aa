"""composition.prometheus on a real server: which alerts reached *firing* during a run, from
the ALERTS series (the soak judges its pages so), and which only went pending."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import wait_for
from prometheus_support import PrometheusServer

pytestmark = pytest.mark.integration

RULES = """
groups:
  - name: test
    rules:
      - alert: AlwaysFiring
        expr: vector(1)
        labels: {severity: page}
      - alert: NeverFiresWithinTheTest
        expr: vector(1)
        for: 1h
"""


def test_an_alert_that_fired_is_found_with_its_first_time_and_a_pending_one_is_not(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(RULES)
    server = PrometheusServer(
        tmp_path / "prometheus",
        [],
        rules=rules,
        jobs={"itself": {"static_configs": [{"targets": ["127.0.0.1:1"]}]}},
    )
    # Its own /metrics as a target of the default job, and one nothing listens on.
    server.targets = [f"127.0.0.1:{server.port}"]
    server.start()
    try:
        assert server.started_at is not None
        before = time.time()
        wait_for(
            lambda: server.active("NeverFiresWithinTheTest"), timeout=30, what="the pending alert"
        )
        [fired] = wait_for(lambda: server.fired(server.started_at or 0.0), timeout=30, what="it")
        assert fired.name == "AlwaysFiring"
        assert fired.labels == {"severity": "page"}
        assert server.started_at - 1 <= fired.first_firing_s <= time.time()
        assert fired.sentence(before).startswith("AlwaysFiring{severity=page} firing from +")
        assert server.active("NeverFiresWithinTheTest")[0]["state"] == "pending"
        scraped = wait_for(
            lambda: server.scraped(server.started_at or 0.0), timeout=30, what="a scrape"
        )
        assert scraped == {"kmedic-manager": {f"127.0.0.1:{server.port}"}}
        assert server.targets_by_job() == {
            "kmedic-manager": {f"127.0.0.1:{server.port}"},
            "itself": {"127.0.0.1:1"},
        }
    finally:
        server.stop()
    assert not server.running()
