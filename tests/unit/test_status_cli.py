"""`kmedic status` in words (pure): the in-flight plan and maintenance lines; the real
ZooKeeper read is in tests/integration/test_request_store.py."""

from __future__ import annotations

from manager.cli.status import plan_line, status_lines
from manager.coordination.plan_document import PlanDocument, PlannedMove
from manager.coordination.plan_store import StoredPlan
from manager.coordination.state import CoordinationState
from manager.coordination.state_view import plan_json
from manager.coordination.state_view import state_document as status_document
from manager.coordination.znodes import LeaderRecord
from manager.model.placement_config import Maintenance, PlacementConfig
from manager.model.plan_progress import PlanProgress


def test_a_plan_in_flight_and_a_domain_in_maintenance_are_told() -> None:
    plan = PlanDocument(
        decision="heal dead brokers 3: 2 partitions reassigned",
        kind="heal",
        epoch=4,
        moves=(
            PlannedMove(topic="t", partition=0, target=(1, 2)),
            PlannedMove(topic="t", partition=1, target=(2, 4)),
        ),
    )
    placement = PlacementConfig(
        maintenance={"rack-b": Maintenance(domain="rack-b", reason="PDU swap", since_ms=1)}
    )
    state = CoordinationState(
        placement=placement,
        plan=StoredPlan(plan, version=7, epoch=4, instance="m1", written_at=1_000.0),
        current_epoch=4,
        leader=LeaderRecord(instance="m1", epoch=4),
    )
    lines = status_lines("c", state, now_s=1_012.4)
    assert lines[1] == "leader: m1, epoch 4"
    assert lines[3] == (
        "in-flight plan: 2 moves left of 'heal dead brokers 3: 2 partitions reassigned', "
        "written by m1 (epoch 4) 12 s ago"
    )
    assert lines[5] == "maintenance: rack-b (PDU swap)"
    doc = status_document("c", state)
    assert doc["plan"]["moves"] == 2 and doc["plan"]["kind"] == "heal"
    assert doc["maintenance"] == ["rack-b"]


def test_an_emptied_plan_is_no_plan_in_flight() -> None:
    state = CoordinationState(
        placement=PlacementConfig(),
        plan=StoredPlan(PlanDocument(decision="done", epoch=2), 3, 2, "m1", 0.0),
        current_epoch=2,
        leader=None,
    )
    assert status_lines("c", state, 10.0)[3] == "in-flight plan: none"
    assert status_document("c", state)["plan"] is None


def test_the_plans_figures_are_told_with_how_old_they_are() -> None:
    figures = PlanProgress(1_500_000_000, 3_000_000_000, 1, 2, 0, 25e6, 60.0)
    plan = PlanDocument(
        decision="drain brokers 4",
        epoch=4,
        moves=(PlannedMove(topic="t", partition=0, target=(1, 2)),),
        progress=figures,
        progress_at=1_005.0,
    )
    stored = StoredPlan(plan, version=7, epoch=4, instance="m1", written_at=1_000.0)
    assert plan_line(stored, now_s=1_012.0) == (
        "1 moves left of 'drain brokers 4', written by m1 (epoch 4) 12 s ago; "
        "1.5 GB of 3.0 GB copied (50%), 1 of 2 moves done, 25.0 MB/s, about 60 s left "
        "(as of 7 s ago)"
    )
    shown = plan_json(stored)
    assert shown is not None and shown["progress"] == {**figures.to_field(), "at": 1_005.0}


def test_with_a_config_the_status_says_which_mode_holds() -> None:
    """Issue 72.5: with no mode set at run time, the config's mode holds; given the config,
    the status says which."""
    state = CoordinationState(PlacementConfig(), None, 1, None)
    assert status_lines("c", state, 10.0, "observe")[2] == (
        "mode: observe (from the config; none set at run time, an instance's --mode aside)"
    )
    assert status_lines("c", state, 10.0)[2].startswith("mode: not set in ZooKeeper")
