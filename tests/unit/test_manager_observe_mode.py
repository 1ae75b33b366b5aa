"""Observe mode: the leader decides, audits ``would_act`` with the full plan and alerts as
usual, and writes nothing to the cluster (no stored plan, no move, no adopted move, no
throttle released); ``kmedic mode`` switches it at run time, audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from manager_fakes import EPOCH, NOW_S, Rig

from manager.coordination.mode_store import ModeRecord
from manager.coordination.plan_document import PlanDocument
from manager.coordination.plan_store import StoredPlan
from manager.daemon.mode import ModeTracker

DEAD_BROKERS_PARTITIONS = [("t", 1), ("t", 2)]  # on broker 4 in the fake cluster


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    r = Rig(tmp_path)
    r.manager.mode = ModeTracker("observe")  # `mode: observe` in the config
    return r


def mode_gauge(rig: Rig, mode: str) -> float | None:
    registry = rig.manager.metrics.registry
    return registry.get_sample_value("kmedic_mode", {"cluster": "c", "mode": mode})


def test_a_dead_broker_under_observe_mode_is_a_would_act_and_nothing_is_written(rig: Rig) -> None:
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop"
    assert outcome.sentence.startswith("noop (heal): would act (observe mode): heal dead brokers 4")
    assert rig.coordinator.plans.writes == []
    assert rig.executor.submitted == [] and rig.executor.steps == 0
    [would] = [r for r in rig.sink.records if r.kind == "would_act"]
    moved = sorted((a["topic"], a["partition"]) for a in would.details["actions"])
    assert moved == DEAD_BROKERS_PARTITIONS  # the full plan, for on-call to read
    [said] = rig.summaries()[:1]
    assert said.startswith("mode observe (from the config): nothing is written to the cluster")
    assert mode_gauge(rig, "observe") == 1 and mode_gauge(rig, "act") == 0
    assert rig.manager.status()["mode"] == "observe"
    assert rig.manager.health()[1]["mode"] == "observe"
    rig.manager.cycle()
    assert len([r for r in rig.sink.records if r.kind == "would_act"]) == 2  # every cycle
    assert rig.summaries().count(said) == 1  # the mode is told once


def test_switching_to_act_at_run_time_heals_and_is_audited(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.manager.cycle()
    rig.coordinator.mode = ModeRecord(mode="act", by="ops@host", set_ms=1, why="trust it")
    outcome = rig.manager.cycle()
    assert outcome.kind == "act"
    assert sorted(m.tp for m in rig.executor.submitted) == DEAD_BROKERS_PARTITIONS
    switched = [s for s in rig.summaries() if s.startswith("mode observe -> act")]
    assert switched == [
        "mode observe -> act (set by `kmedic mode`: act, set by ops@host: trust it): kmedic acts"
    ]
    assert mode_gauge(rig, "act") == 1


def test_the_zookeeper_mode_wins_over_the_config(tmp_path: Path) -> None:
    rig = Rig(tmp_path)  # act in the config
    rig.coordinator.mode = ModeRecord(mode="observe", by="ops@host")
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "noop"
    assert rig.executor.submitted == [] and rig.coordinator.plans.writes == []


def test_observe_mode_adopts_no_stored_plan_and_releases_no_throttle(rig: Rig) -> None:
    owned = {"replicas": [], "rates": [{"broker": 2, "config": "x", "value": "1000"}]}
    moves = [{"topic": "t", "partition": 1, "target": [2, 3, 1], "size_bytes": 10}]
    plan = PlanDocument.model_validate({"moves": moves, "throttles": owned})
    rig.coordinator.stored = StoredPlan(plan, 7, 2, "m0", NOW_S - 60)
    rig.coordinator.acquire(EPOCH + 1)
    rig.manager.cycle()
    rig.manager.cycle()
    assert rig.executor.submitted == [] and rig.executor.released == []
    assert rig.coordinator.plans.writes == []


def test_a_refusal_under_observe_mode_still_alerts(rig: Rig) -> None:
    rig.sources.dead = {3, 4}
    rig.manager.cycle()
    raised = {r.reasons[0] for r in rig.sink.records if r.kind == "alert_raised"}
    assert "refused:too_many_dead_brokers" in raised
