"""Where a running plan stands, as the leader tells it: the gauges, a record every
``progress_interval_s``, the figures in each move's record, one record at its end, and the
figures stored with the plan for `kmedic status` and `requests list` (fake collaborators)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from manager_fakes import Rig

from manager.daemon.plan_report import PlanReport
from manager.executor.move_state import MoveState
from manager.model.move_progress import MoveProgress
from manager.model.moves import Move


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def gauge(rig: Rig, name: str, **labels: str) -> float | None:
    return rig.manager.metrics.registry.get_sample_value(name, {"cluster": "c", **labels})


def copying(state: MoveState, copied: int) -> None:
    """What the real executor and its watchdog record: the replica it adds, and its bytes."""
    new = state.move.target[0]
    state.original = (*state.move.target[1:], 4)
    state.progress = MoveProgress(0, {new: copied})


def test_a_running_plan_is_reported_while_it_runs_in_each_move_record_and_at_its_end(
    rig: Rig,
) -> None:
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    states = rig.executor.active()
    sizes = [2_000_000_000, 1_000_000_000]  # the fake's partitions are empty: given sizes
    for state, size in zip(states, sizes, strict=True):
        state.move = replace(state.move, size_bytes=size)
        copying(state, 0)
    rig.manager.moves.observe()  # a poll between cycles
    for state in states:
        copying(state, state.move.size_bytes // 2)
    rig.clock.advance(10)
    rig.manager.moves.observe()
    assert gauge(rig, "kmedic_plan_bytes", state="total") == sum(sizes)
    assert gauge(rig, "kmedic_plan_bytes", state="copied") == sum(n // 2 for n in sizes)
    rate = gauge(rig, "kmedic_plan_copy_rate_bytes_per_second")
    assert rate is not None and rate == pytest.approx(sum(n // 2 for n in sizes) / 10)
    eta = gauge(rig, "kmedic_plan_eta_seconds")
    assert eta == pytest.approx((sum(sizes) - sum(n // 2 for n in sizes)) / rate)
    assert rig.summaries("action_progress") == []  # not yet an interval into the plan

    for state in states:
        copying(state, state.move.size_bytes * 3 // 4)
    rig.clock.advance(rig.executor.config.progress_interval_s)
    rig.manager.moves.observe()
    [running] = [r for r in rig.sink.records if r.kind == "action_progress"]
    # 0.75 GB in the last 30 s window: 25 MB/s, and 0.75 GB left
    assert running.summary == (
        "plan running: 2.2 GB of 3.0 GB copied (75%), 0 of 2 moves done, 12.5 MB/s, about 60 s left"
    )
    assert running.details["plan"]["total_bytes"] == sum(sizes)
    # stored with the plan: what `kmedic status` and `requests list` show
    stored, _ = rig.coordinator.plans.writes[-1]
    assert stored["plan_progress"]["copied_bytes"] == sum(n * 3 // 4 for n in sizes)
    assert stored["plan_progress"]["at"] == rig.clock.time()

    rig.executor.complete_all()
    rig.sources.dead = set()
    rig.manager.cycle()
    completed = [r for r in rig.sink.records if r.kind == "action_completed"]
    assert [r.details["plan"]["moves_done"] for r in completed] == [1, 2]
    done = [r for r in rig.sink.records if r.kind == "action_progress"][-1]
    assert done.summary.startswith("plan done in ")
    assert done.summary == "plan done in 70 s: 2 of 2 moves done, 3.0 GB"
    assert gauge(rig, "kmedic_plan_bytes", state="total") == 0
    assert gauge(rig, "kmedic_plan_eta_seconds") == 0
    emptied, _ = rig.coordinator.plans.writes[-1]
    assert emptied["moves"] == [] and "plan_progress" not in emptied


def test_a_plan_is_reported_every_interval_and_a_new_run_starts_afresh() -> None:
    report = PlanReport(interval_s=60)
    assert report.look([], 0).progress is None
    first = MoveState(Move("t", 0, (1, 2), 100), status="in_flight", original=(2, 3))
    looks = [report.look([first], t) for t in (0, 30, 60, 90, 120)]
    assert [look.due for look in looks] == [False, False, True, False, True]
    first.status = "completed"
    ended = report.look([], 130)
    assert ended.ended and ended.progress is not None and ended.progress.fraction == 1
    assert report.latest is None and report.look([], 140).progress is None
    second = MoveState(Move("t", 1, (1, 2), 50))
    again = report.look([second], 200)
    assert again.progress is not None and again.progress.moves_total == 1
    assert not again.due


def test_a_run_begun_by_a_moves_event_is_looked_at_like_any_other() -> None:
    """The executor's events come before the daemon's look; the first look found the run
    already begun and failed every cycle (found on the real cluster)."""
    report = PlanReport(interval_s=60)
    state = MoveState(Move("t", 0, (1, 2), 100), status="in_flight", original=(2, 3))
    assert report.current([state]) is not None  # the action_started record's figures
    first = report.look([state], 5)
    assert first.progress is not None and not first.due
    assert report.look([state], 65).due


def test_moves_dropped_for_a_newer_leader_are_not_told_as_a_plan_done(rig: Rig) -> None:
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    rig.manager.keeper.drop_moves.set()  # a fenced write: a newer leader's plan is the truth
    rig.manager.cycle()
    assert rig.executor.forgotten == 1
    assert rig.summaries("action_progress") == []
    assert gauge(rig, "kmedic_plan_bytes", state="total") == 0


def test_the_copy_rate_per_move_is_measured_for_the_readiness_estimate(rig: Rig) -> None:
    """The readiness sweep's heal-time estimate assumes a rate per move until this leader has
    measured its own: the plan's rate over its moves in flight, smoothed."""
    assert rig.manager.readiness._pace().rate_measured is False
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    states = rig.executor.active()
    for state in states:
        state.move = replace(state.move, size_bytes=1_000_000_000)
        copying(state, 0)
    rig.manager.moves.observe()
    assert rig.manager.moves.move_rate is None  # no rate before two samples
    for state in states:
        copying(state, 500_000_000)
    rig.clock.advance(10)
    rig.manager.moves.observe()  # 1 GB in 10 s over 2 moves in flight: 50 MB/s each
    assert rig.manager.moves.move_rate == pytest.approx(50e6)
    for state in states:
        copying(state, 800_000_000)
    rig.clock.advance(1)
    rig.manager.moves.observe()  # within progress_sample_s of the last sample: not counted
    assert rig.manager.moves.move_rate == pytest.approx(50e6)
    for state in states:
        copying(state, 1_000_000_000)
    rig.clock.advance(rig.executor.config.progress_sample_s)
    rig.manager.moves.observe()  # 2 GB in 16 s: 62.5 MB/s each, weighted 0.2
    assert rig.manager.moves.move_rate == pytest.approx(50e6 + 0.2 * 12.5e6)
    pace = rig.manager.readiness._pace()
    assert (pace.move_bytes_per_s, pace.rate_measured) == (pytest.approx(52.5e6), True)
    limits = rig.executor.config
    assert pace.max_moves_per_broker == limits.max_moves_per_broker
