"""The demo's pure helpers."""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from types import SimpleNamespace

import pytest

from composition.demo import (
    PAGED_EXIT,
    addresses,
    collapse,
    demo_exit_code,
    keep_running,
    plan_over,
    register,
)
from composition.demo_views import Story, describe
from manager.audit.log import AuditRecord
from manager.monitor.feeds import FeedStatus


def test_the_demo_shows_a_repeated_record_once_with_its_count() -> None:
    def rec(kind: str, summary: str) -> AuditRecord:
        return AuditRecord(cluster="c", instance="i", epoch=1, kind=kind, summary=summary)  # type: ignore[arg-type]

    records = [rec("decision", "noop"), rec("decision", "noop"), rec("alert_raised", "a")]
    records.append(rec("decision", "noop"))
    assert collapse(records) == [
        ("decision", "noop", 2),
        ("alert_raised", "a", 1),
        ("decision", "noop", 1),
    ]


class _View:
    def status(self) -> FeedStatus:
        return FeedStatus("kmedic.brokerstats", 2, 7, 1, True, "Broker: Not leader")

    def values(self) -> dict[bytes, int]:
        return {b"2": 1, b"1": 1}


def test_a_timed_out_wait_can_say_what_the_view_saw() -> None:
    text = describe(_View())
    assert text == (
        "kmedic.brokerstats: 7 records read (1 undecodable), keys ['1', '2'], "
        "last error: Broker: Not leader"
    )


def test_the_story_ends_once_every_move_ended_and_quiet_cycles_followed() -> None:
    def rec(kind: str, summary: str = "x") -> AuditRecord:
        return AuditRecord(cluster="c", instance="i", epoch=1, kind=kind, summary=summary)  # type: ignore[arg-type]

    heal = [rec("decision", "act (heal): ..."), rec("action_started"), rec("action_started")]
    assert not plan_over(heal, 2)
    one_done = [
        *heal,
        rec("action_completed"),
        rec("decision", "noop: waiting"),
        rec("decision", "noop"),
    ]
    assert not plan_over(one_done, 2)  # a move still runs (the demo stopped here before)
    done = [*heal, rec("action_completed"), rec("action_completed"), rec("decision", "noop: a")]
    assert not plan_over(done, 2)
    assert plan_over([*done, rec("decision", "noop: b")], 2)
    assert not plan_over([*done, rec("decision", "refuse: ..."), rec("decision", "wait: x")], 2)


def test_the_demo_fails_when_anything_paged() -> None:
    """Issue 39.5: a page after the kill is the demo's failure, not a line that exits 0."""
    alert = AuditRecord(cluster="c", instance="i", epoch=1, kind="alert_raised", summary="x")  # type: ignore[arg-type]
    assert demo_exit_code([]) == 0
    assert demo_exit_code([alert]) == PAGED_EXIT != 0


def test_the_demo_says_where_to_look_and_keep_is_an_option() -> None:
    cluster = SimpleNamespace(zk_connect="127.0.0.1:2181", bootstrap_servers="127.0.0.1:9092")
    pipeline = SimpleNamespace(manager_port=40123, cluster_name="demo")
    lines = addresses(cluster, pipeline)  # type: ignore[arg-type]
    assert lines[0] == (
        "status page: http://127.0.0.1:40123/status  (metrics: http://127.0.0.1:40123/metrics)"
    )
    assert lines[1].startswith("HTTP API: http://127.0.0.1:40123/api/v1/status")
    assert "kmedic status --zk 127.0.0.1:2181 --cluster demo" in lines[2]
    assert lines[3].endswith("kmedic actions tail --bootstrap 127.0.0.1:9092")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert parser.parse_args(["demo", "--keep"]).keep
    assert not parser.parse_args(["demo"]).keep


def test_keep_running_waits_for_a_signal_then_hands_the_stop_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # SIGTERM (or Ctrl-C's SIGINT) ends the wait; the caller's finally stops the processes.
    checks: list[float] = []
    pipeline = SimpleNamespace(
        manager_port=1, cluster_name="demo", check_running=lambda: checks.append(time.time())
    )
    cluster = SimpleNamespace(zk_connect="zk:1", bootstrap_servers="k:1")
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    keep_running(Story(), cluster, pipeline)  # type: ignore[arg-type]
    timer.join()
    assert checks, "the roles were not watched while kept"
    assert "SIGTERM: stopping" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGTERM) == before
