"""A fresh manager reads its topics to their ends before its first decision: judged half-read,
the loads look stale (a refusal audited at every start) and a dead broker's heal looks
unneeded. It waits at most WARM_UP_LIMIT_S, looking again every MIN_CYCLE_GAP_S."""

from __future__ import annotations

from pathlib import Path

import pytest
from manager_fakes import Rig

from manager.daemon.pacing import MIN_CYCLE_GAP_S
from manager.daemon.warm_up import WARM_UP_LIMIT_S
from manager.monitor.feeds import FeedStatus


def feed(topic: str, caught_up: bool) -> FeedStatus:
    return FeedStatus(topic, keys=0, records=0, bad_records=0, caught_up=caught_up, last_error=None)


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    rig.sources.feeds = [feed("stats", True), feed("loads", False)]
    return rig


def test_nothing_is_decided_until_every_topic_is_read_to_its_end(rig: Rig) -> None:
    waiting = rig.manager.cycle()
    assert (waiting.kind, waiting.sentence) == (
        "wait",
        "wait: reading loads to the end before deciding",
    )
    assert rig.coordinator.reads == 0 and rig.sources.calls == []
    assert rig.summaries() == []  # nothing audited
    started = rig.clock.monotonic()
    assert rig.manager._next_cycle_at(started) == started + MIN_CYCLE_GAP_S

    rig.clock.advance(2)
    rig.sources.feeds = [feed("stats", True), feed("loads", True)]
    acted = rig.manager.cycle()
    assert acted.kind == "act" and acted.sentence.startswith("act (heal): heal dead brokers 4")
    assert rig.manager._next_cycle_at(started) == started + rig.cfg.interval_s


def test_the_warm_up_ends_after_its_limit_even_with_a_topic_unread(rig: Rig) -> None:
    assert rig.manager.cycle().kind == "wait"
    rig.clock.advance(WARM_UP_LIMIT_S)
    assert rig.manager.cycle().kind == "act"


def test_it_happens_once_a_topic_falling_behind_later_is_judged_as_it_is(rig: Rig) -> None:
    rig.sources.feeds = [feed("loads", True)]
    assert rig.manager.cycle().kind == "act"
    rig.sources.feeds = [feed("loads", False)]
    rig.clock.advance(1)
    assert rig.manager.cycle().kind != "wait"
