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
    # One rehearsal while it reads: the cluster observed and a decision planned, thrown away.
    assert rig.coordinator.reads == 1 and len(rig.sources.calls) == 1
    assert rig.summaries() == []  # nothing audited
    assert rig.manager.cycle().kind == "wait"
    assert rig.coordinator.reads == 1 and len(rig.sources.calls) == 1  # once, not each look
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


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each time the planner's per-partition lists are built: the structure it was handed
    (None: made from nothing)."""
    from manager.analyzer import partition_lists

    seen: list[object] = []
    made = partition_lists._built

    def counted(*args: object, **kwargs: object) -> object:
        seen.append(args[1] if len(args) > 1 else kwargs.get("structure"))
        return made(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(partition_lists, "_built", counted)
    return seen


def test_the_rehearsal_builds_the_planners_lists_the_first_decision_reuses(
    rig: Rig, built: list[object]
) -> None:
    """The first real decision finds the lists the rehearsal built (refreshed, not made anew)."""
    assert rig.manager.cycle().kind == "wait"
    assert built == [None]  # the rehearsal: made from nothing
    rig.sources.feeds = [feed("stats", True), feed("loads", True)]
    assert rig.manager.cycle().kind == "act"
    assert len(built) == 2 and built[1] is not None  # the first decision: the kept structure


def test_a_cluster_unobservable_while_rehearsing_is_left_to_the_first_cycle(rig: Rig) -> None:
    rig.sources.unavailable = "Admin API unreachable"
    assert rig.manager.cycle().kind == "wait"
    rig.sources.unavailable = None
    rig.sources.feeds = [feed("stats", True), feed("loads", True)]
    assert rig.manager.cycle().kind == "act"


def test_an_instance_rehearses_as_it_starts_whatever_its_feeds_have_read(
    rig: Rig, built: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the fleet bench: feeds read before the first cycle skipped the rehearsal, and
    that first decision built the planner's lists from nothing (0.5-0.9 s at fleet scale).
    Now it rehearses as it starts; its first cycle decides once, on the lists it built."""
    from types import SimpleNamespace

    from manager.daemon import manager as manager_module

    monkeypatch.setattr(manager_module, "serve_api", lambda m: SimpleNamespace(port=0))
    rig.sources.feeds = [feed("stats", True), feed("loads", True)]
    rig.manager.start()
    try:
        assert built == [None]  # the rehearsal, before any cycle: made from nothing
        assert rig.summaries() == []  # nothing audited
        assert rig.manager.cycle().kind == "act"
        assert len(built) == 2 and built[1] is not None  # the first decision: kept structure
        assert rig.coordinator.reads == 2  # the rehearsal's read, the cycle's
        rig.clock.advance(1)
        rig.manager.cycle()
        assert len(built) == 3  # rehearsed once only
    finally:
        rig.manager.readiness.stop()
