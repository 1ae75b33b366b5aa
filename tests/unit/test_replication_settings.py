"""The brokers' static replication settings kmedic's throttled copies are measured at
(manager/model/replication_settings.py): the rule that names a broker off them, the reader
that asks each broker (monitor/broker_settings.py), and where the finding shows - the metric,
the readiness section of the status page (issue 73: a setting kmedic depends on is checked
and named at run time)."""

from __future__ import annotations

import itertools
from typing import Any

from planner_fixtures import broker, make, part
from prometheus_client import CollectorRegistry

from kmedic.kafka_admin import ReplicationTiming
from manager.analyzer.replication_check import replication_settings_off
from manager.model.replication_settings import WANTED, ReplicationSettings, settings_off
from manager.monitor.broker_settings import broker_settings
from manager.web.metrics import ManagerMetrics, observe_snapshot
from manager.web.status_page import render_html

KAFKAS = ReplicationSettings(quota_window_s=11.0, fetch_backoff_ms=1000, fetch_wait_ms=500)
KMEDICS = ReplicationSettings(quota_window_s=1.0, fetch_backoff_ms=100, fetch_wait_ms=100)


def test_each_setting_over_its_bound_is_named_with_its_numbers() -> None:
    windows, backoffs, waits = (None, 1.0, 2.0, 11.0), (None, 100, 200, 201), (None, 200, 500)
    for window, backoff, wait in itertools.product(windows, backoffs, waits):
        settings = ReplicationSettings(
            quota_window_s=window, fetch_backoff_ms=backoff, fetch_wait_ms=wait
        )
        named = {o.setting for o in settings_off(7, settings)}
        expected = {
            w.setting
            for w, value in zip(WANTED, (window, backoff, wait), strict=True)
            if value is not None and value > w.at_most
        }
        assert named == expected, settings
    assert settings_off(7, None) == [] and settings_off(7, KMEDICS) == []
    said = [o.sentence() for o in settings_off(7, KAFKAS)]
    assert said[0] == (
        "broker 7: replication.quota.window 11 s, over the 1 s kmedic's throttled copies are "
        "measured at (set replication.quota.window.num=1 (with "
        "replication.quota.window.size.seconds=1); a rolling restart)"
    )
    assert "replica.fetch.backoff.ms 1000 ms, over the 200 ms" in said[1]
    assert "replica.fetch.wait.max.ms 500 ms" in said[2]


class Client:
    """DescribeConfigs' stand-in: answers what ``answers`` says for each broker asked."""

    def __init__(self, answers: dict[int, ReplicationTiming]) -> None:
        self.answers = answers
        self.asked: list[list[int]] = []
        self.fail = False


def test_a_new_broker_is_read_at_once_every_broker_every_refresh_and_a_failure_keeps_it(
    monkeypatch: Any,
) -> None:
    from kmedic import kafka_admin

    client = Client({b: ReplicationTiming(11.0, 1000, 500) for b in (1, 2, 3)})

    def describe(c: Client, brokers: list[int]) -> dict[int, ReplicationTiming]:
        c.asked.append(brokers)
        if c.fail:
            raise OSError("DescribeConfigs timed out")
        return {b: c.answers[b] for b in brokers}

    monkeypatch.setattr(kafka_admin, "describe_replication_timings", describe)
    now = [0.0]
    settings = broker_settings(refresh_s=600, clock=lambda: now[0])
    assert set(settings.read(client, {1, 2})) == {1, 2}
    assert settings.read(client, {1, 2}) and client.asked == [[1, 2]]  # not due: not asked
    settings.read(client, {1, 2, 3})
    assert client.asked[-1] == [3]  # a broker new to it, at once
    client.answers[1] = ReplicationTiming(1.0, 100, 100)  # restarted with kmedic's settings
    client.fail = True
    now[0] = 601.0
    kept = settings.read(client, {1, 2, 3})
    assert kept[1] == ReplicationTiming(11.0, 1000, 500)  # the failed read kept what it knew
    client.fail = False
    assert settings.read(client, {1, 2, 3})[1] == ReplicationTiming(1.0, 100, 100)
    assert set(settings.read(client, {1, 3})) == {1, 3}  # a broker gone is forgotten


def test_a_broker_answered_without_its_settings_waits_for_the_refresh(monkeypatch: Any) -> None:
    """Kafka answered, but not with these settings (an old broker, a config it does not
    report): asking again every cycle would cost a round trip to every such broker each cycle;
    it is asked again at the refresh, and a broker new to the reader still at once."""
    from kmedic import kafka_admin

    client = Client({1: ReplicationTiming(11.0, 1000, 500)})

    def describe(c: Client, brokers: list[int]) -> dict[int, ReplicationTiming]:
        c.asked.append(brokers)
        return {b: c.answers[b] for b in brokers if b in c.answers}

    monkeypatch.setattr(kafka_admin, "describe_replication_timings", describe)
    now = [0.0]
    settings = broker_settings(refresh_s=600, clock=lambda: now[0])
    assert set(settings.read(client, {1, 2})) == {1}
    now[0] = 30.0
    assert set(settings.read(client, {1, 2})) == {1}
    assert client.asked == [[1, 2]]  # broker 2 not asked again within the refresh
    settings.read(client, {1, 2, 3})
    assert client.asked[-1] == [3]  # new to it: at once
    now[0] = 601.0
    settings.read(client, {1, 2, 3})
    assert client.asked[-1] == [1, 2, 3]  # the refresh asks every broker


def _snapshot() -> Any:
    brokers = [
        broker(1, "/r1", replication=KAFKAS.model_dump()),
        broker(2, "/r2", replication=KMEDICS.model_dump()),
        broker(3, "/r1", alive=False, replication=KAFKAS.model_dump()),  # dead: not judged
        broker(4, "/r2"),  # not read: not judged
    ]
    return make(brokers, {"t": [part(0, [1, 2], alive={1, 2, 4})]})


def test_the_metric_names_each_live_broker_off_and_its_value() -> None:
    snap = _snapshot()
    assert {(o.broker, o.setting) for o in replication_settings_off(snap)} == {
        (1, w.setting) for w in WANTED
    }
    metrics = ManagerMetrics("c", CollectorRegistry())
    observe_snapshot(metrics, snap, snap.policy, False)
    value = metrics.registry.get_sample_value
    labels = {"cluster": "c", "broker": "1", "setting": "replication.quota.window"}
    assert value("kmedic_broker_replication_setting_off", labels) == 11.0
    for b in ("2", "3", "4"):
        assert value("kmedic_broker_replication_setting_off", {**labels, "broker": b}) is None


def test_the_status_pages_readiness_section_lists_them() -> None:
    from manager.web.status_page import status_document

    snap = _snapshot()
    readiness = {
        "summary": "readiness: 4 of 4 losses healable",
        "swept_at_ms": 1,
        "scenarios": [],
        "replication_settings_off": [o.sentence() for o in replication_settings_off(snap)],
    }
    doc = status_document(
        cluster="c",
        instance="m1",
        leader=True,
        epoch=1,
        snapshot=snap,
        decision=None,
        alerts={},
        moves=[],
        recent=[],
        readiness=readiness,
    )
    page = render_html(doc)
    assert "broker 1: replication.quota.window 11 s, over the 1 s" in page
    readiness["replication_settings_off"] = []
    assert "none: every live broker replicates as kmedic" in render_html(
        {**doc, "readiness": readiness}
    )
