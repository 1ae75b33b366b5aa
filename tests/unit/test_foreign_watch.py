"""Reassignments kmedic did not start, watched by the leader each cycle (fake collaborators):
one that copies nothing for ``stall_s`` is an alert naming its partition and age, cleared
when it copies again; kmedic plans around it and never cancels it."""

from __future__ import annotations

from pathlib import Path

import pytest
from manager_fakes import Rig
from planner_fixtures import broker, make, part

from kmedic.metadata import Reassignment
from manager.daemon.foreign_watch import ForeignWatch

TP = ("t", 1)
NAME = "stuck_foreign_reassignment:t:1"


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    rig = Rig(tmp_path)
    # An operator moving t:1 from [2, 3, 4] to [1, 3, 4], by hand: broker 1 is being added.
    rig.sources.reassignments = {TP: Reassignment((2, 3, 4, 1), (1,), (2,))}
    rig.sources.replicas = {TP: (2, 3, 4, 1)}
    rig.executor.replica_bytes = {(TP, 1): 0}
    return rig


def stuck(rig: Rig) -> float | None:
    return rig.manager.metrics.registry.get_sample_value(
        "kmedic_stuck_foreign_reassignments", {"cluster": "c"}
    )


def test_a_foreign_reassignment_that_copies_nothing_is_an_alert_with_its_partition_and_age(
    rig: Rig,
) -> None:
    stall_s = rig.executor.config.stall_s
    assert rig.manager.cycle().kind == "noop"  # no refusal for someone else's reassignment
    rig.clock.advance(stall_s / 2)
    rig.executor.replica_bytes = {(TP, 1): 5_000}  # copying
    rig.manager.cycle()
    rig.clock.advance(stall_s - 1)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == [] and stuck(rig) == 0
    rig.clock.advance(1)  # stall_s without a byte
    rig.manager.cycle()
    [raised] = rig.summaries("alert_raised")
    assert raised == (
        f"alert {NAME}: the reassignment of t:1 that kmedic did not start has copied nothing "
        f"for {stall_s:.0f} s (running for at least {1.5 * stall_s:.0f} s, adding brokers [1], "
        "5000 bytes copied): its partition stays short of a replica; whoever started it "
        "decides (kmedic never cancels it)"
    )
    assert stuck(rig) == 1
    assert rig.executor.submitted == []  # nothing planned on it, nothing cancelled
    rig.clock.advance(10)
    rig.manager.cycle()
    assert len(rig.summaries("alert_raised")) == 1  # told once
    rig.executor.replica_bytes = {(TP, 1): 9_000}  # copying again
    rig.manager.cycle()
    assert rig.summaries("alert_cleared") == [f"alert {NAME} cleared"] and stuck(rig) == 0


def test_a_broker_that_does_not_answer_is_no_progress_and_one_not_asked_is_no_verdict(
    rig: Rig,
) -> None:
    stall_s = rig.executor.config.stall_s
    rig.manager.cycle()
    rig.executor.replica_bytes = {(TP, 1): None}  # asked, no answer: a hung broker
    rig.clock.advance(stall_s)
    rig.manager.cycle()
    assert stuck(rig) == 1
    rig.executor.replica_bytes = {}  # could not ask: the clock restarts, nothing judged
    rig.clock.advance(stall_s)
    rig.manager.cycle()
    assert stuck(rig) == 0


def test_an_ended_reassignment_is_forgotten_and_its_alert_cleared(rig: Rig) -> None:
    rig.manager.cycle()
    rig.clock.advance(rig.executor.config.stall_s)
    rig.manager.cycle()
    assert stuck(rig) == 1
    rig.sources.reassignments = {}
    rig.manager.cycle()
    assert stuck(rig) == 0 and rig.manager.foreign.watched == {}
    assert rig.summaries("alert_cleared") == [f"alert {NAME} cleared"]


def test_kmedics_own_and_copy_free_reassignments_are_not_watched() -> None:
    asked: list[dict[int, list[tuple[str, int]]]] = []

    def sample(wanted: object) -> dict[tuple[tuple[str, int], int], int | None]:
        asked.append(dict(wanted))  # type: ignore[call-overload]
        return {}

    watch = ForeignWatch(sample, stall_s=1)
    snap = make(
        [broker(1, "/a"), broker(2, "/b")],
        {"a": [part(0, [1, 2])], "b": [part(0, [1, 2])]},
        reassignments=[
            {"topic": "a", "partition": 0, "adding_replicas": [1], "started_by_kmedic": True},
            {"topic": "b", "partition": 0, "removing_replicas": [2], "started_by_kmedic": False},
        ],
    )
    assert watch.look(snap.reassignments, 10_000) == {} and asked == []
    assert list(watch.watched) == [("b", 0)]
