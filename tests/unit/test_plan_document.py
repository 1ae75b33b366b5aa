"""The stored plan document: built from a decision, synced as moves finish and throttles change,
adopted back."""

from __future__ import annotations

import json

import pytest
from planner_fixtures import GB, broker, make, part

from manager.analyzer.planner import decide
from manager.coordination.move_budget import from_plan
from manager.coordination.plan_document import (
    PlanDocument,
    moves_for,
    moves_to_adopt,
    own_partitions,
    plan_document,
    stored_progress,
    stored_throttles,
    synced,
    with_progress,
)
from manager.coordination.plan_store import parse_stored_plan
from manager.coordination.znodes import CoordinationError, LeaderRecord, parse_leader
from manager.model.decision import Decision, ElectPreferredLeader, Reason
from manager.model.move_progress import MoveProgress
from manager.model.moves import Move
from manager.model.plan_progress import PlanProgress
from manager.throttling.ownership import LEADER_RATE, LEADER_REPLICAS, ThrottleRecord

NONE = ThrottleRecord()
OWNED = ThrottleRecord({("t", LEADER_REPLICAS): frozenset({"0:1"})}, {(1, LEADER_RATE): "9"})

SNAP = make(
    [broker(1, "/a"), broker(2, "/b"), broker(3, "/a"), broker(4, "/b")],
    {"t": [part(0, [1, 2], size=3 * GB), part(1, [2, 1], size=GB), part(2, [3, 4])]},
)


def decision(*actions: Move | ElectPreferredLeader) -> Decision:
    return Decision("act", "balance", "balance plan", (Reason("x", "y"),), actions)


def test_reassignments_and_lone_elections_become_moves_with_what_their_actions_carry() -> None:
    moves = moves_for(
        decision(
            Move("t", 0, (3, 2), 3 * GB, before=(1, 2)),
            ElectPreferredLeader("t", 0, 3, (3, 2)),  # follows its reassignment: no second move
            ElectPreferredLeader("t", 1, 1, (2, 1)),  # alone: a same-replicas move, no data
        )
    )
    assert moves == [Move("t", 0, (3, 2), 3 * GB), Move("t", 1, (2, 1), 0)]


def test_a_planned_move_carries_its_partitions_size_from_the_goal() -> None:
    # The snapshot's sizes reach the executor's moves through the decision alone (moves_for
    # once looked each partition up in the snapshot again).
    alive = {2, 3, 4}
    snap = make(
        [broker(1, "/a", alive=False), broker(2, "/b"), broker(3, "/a"), broker(4, "/b")],
        {
            "t": [
                part(0, [1, 2], size=3 * GB, alive=alive),
                part(1, [2, 1], size=GB, alive=alive),
                part(2, [3, 4]),
            ]
        },
    )
    healed = decide(snap)
    assert (healed.outcome, healed.kind) == ("act", "heal"), healed.summary
    sizes = {(m.topic, m.partition): m.size_bytes for m in moves_for(healed)}
    assert sizes == {("t", 0): 3 * GB, ("t", 1): GB}


def test_the_document_round_trips_through_json_with_its_history() -> None:
    moves = [Move("t", 0, (3, 2), 3 * GB)]
    raw = json.loads(
        json.dumps(plan_document(decision(), moves, 7, [(1000.0, 1)], OWNED).to_json())
    )
    doc = PlanDocument.model_validate(raw)
    assert raw["epoch"] == 7 and raw["kind"] == "balance"
    assert raw["moves"] == [{"topic": "t", "partition": 0, "target": [3, 2], "size_bytes": 3 * GB}]
    assert from_plan(raw) == [(1000.0, 1)]
    assert moves_to_adopt(doc, set()) == moves
    assert moves_to_adopt(doc, {("t", 0)}) == []
    assert own_partitions(doc) == {("t", 0)}
    assert own_partitions(None) == frozenset()
    assert stored_throttles(doc) == OWNED


def test_a_plan_without_a_throttle_record_owns_no_throttle() -> None:
    assert stored_throttles(PlanDocument.model_validate({"moves": []})) == NONE
    assert stored_throttles(None) == NONE


def test_finished_moves_are_trimmed_and_the_document_is_emptied_not_dropped() -> None:
    moves = [Move("t", 0, (3, 2), 1), Move("t", 1, (1, 2), 1)]
    doc = plan_document(decision(), moves, 7, [(1000.0, 2)], NONE)
    assert synced(doc, {("t", 0), ("t", 1)}, NONE) is None  # nothing changed: no write
    one_left = synced(doc, {("t", 1)}, NONE)
    assert one_left is not None and [m["partition"] for m in one_left.to_json()["moves"]] == [1]
    empty = synced(one_left, set(), NONE)
    assert empty is not None and empty.to_json()["moves"] == []
    assert from_plan(empty.to_json()) == [(1000.0, 2)], "the history outlives the plan"
    assert synced(empty, set(), NONE) is None


def test_a_change_of_owned_throttles_alone_is_written() -> None:
    doc = plan_document(decision(), [Move("t", 0, (3, 2), 1)], 7, [], NONE)
    now_owned = synced(doc, {("t", 0)}, OWNED)
    assert now_owned is not None and stored_throttles(now_owned) == OWNED
    assert now_owned.to_json()["moves"] == doc.to_json()["moves"]
    assert synced(now_owned, {("t", 0)}, OWNED) is None
    released = synced(now_owned, {("t", 0)}, NONE)
    assert released is not None and stored_throttles(released) == NONE


class _Stat:
    version = 3


def test_a_stored_plan_is_validated_on_read_and_a_corrupt_one_is_named() -> None:
    good = plan_document(decision(), [Move("t", 0, (3, 2), 1)], 7, [(1000.0, 1)], OWNED)
    stored = parse_stored_plan({"epoch": 7, "instance": "m1", "plan": good.to_json()}, _Stat())
    assert stored.plan == good and stored.version == 3 and stored.epoch == 7
    corrupt = {"plan": {"moves": [{"topic": "t", "partition": 0, "to": [1, 2]}]}}
    with pytest.raises(CoordinationError) as err:
        parse_stored_plan(corrupt, _Stat(), "/kmedic/c/manager/plan")
    assert "/kmedic/c/manager/plan holds no valid plan" in str(err.value)
    assert "plan.moves.0.target: Field required" in str(err.value)
    with pytest.raises(CoordinationError, match=r"plan.epoch"):
        parse_stored_plan({"plan": {"epoch": "seven"}}, _Stat())
    with pytest.raises(CoordinationError, match="no valid plan"):
        parse_stored_plan({"plan": [], "epoch": "x"}, _Stat())


def test_the_history_and_throttle_record_are_read_leniently() -> None:
    doc = PlanDocument.model_validate(
        {"moves_started": [[1000.0, 2], ["x", 1]], "throttles": {"rates": [{"broker": "b"}]}}
    )
    assert doc.moves_started == ((1000.0, 2),) and doc.throttles == NONE


def test_the_leader_record_is_validated_on_read() -> None:
    record = LeaderRecord(instance="m1", epoch=4, session=77)
    assert parse_leader(record.to_bytes(), "/l") == record
    assert parse_leader(b'{"instance": "m1", "epoch": null}', "/l").epoch is None
    with pytest.raises(
        CoordinationError, match="/l holds no valid leader record: instance: Field required"
    ):
        parse_leader(b'{"epoch": 3}', "/l")
    with pytest.raises(CoordinationError, match="does not hold JSON"):
        parse_leader(b"{", "/l")


def test_the_watchdogs_records_ride_along_and_force_a_write_only_for_a_stalled_move() -> None:
    moves = [Move("t", 0, (3, 2), 3 * GB), Move("t", 1, (2, 4), GB)]
    plan = plan_document(decision(), moves, 7, [], NONE)
    active = {("t", 0), ("t", 1)}
    moving = {("t", 0): MoveProgress(5_000, {3: 100})}
    # A progressing move's record changes with every sample: no write of its own.
    assert synced(plan, active, NONE, moving, stalled=[]) is None
    # A stalled one's record is written at once, so that a new leader keeps its clock.
    stalled = {**moving, ("t", 1): MoveProgress(1_000, {4: 0})}
    written = synced(plan, active, NONE, stalled, stalled=[("t", 1)])
    assert written is not None
    assert {m.tp: m.progress for m in written.moves} == stalled
    assert synced(written, active, NONE, stalled, stalled=[("t", 1)]) is None
    # Read back through JSON: the clock a successor resumes.
    raw = json.loads(json.dumps(written.to_json()))
    assert raw["moves"][1]["progress"] == {"advanced_ms": 1_000, "copied": {"4": 0}}
    assert stored_progress(PlanDocument.model_validate(raw)) == stalled
    # Records ride along with any other write (here a move that ended).
    done = synced(written, {("t", 1)}, NONE, {("t", 1): MoveProgress(9_000, {4: 7})})
    assert done is not None and [m.progress for m in done.moves] == [MoveProgress(9_000, {4: 7})]


def test_a_malformed_progress_record_restarts_the_clock_and_loses_no_move() -> None:
    raw = plan_document(decision(), [Move("t", 0, (3, 2), GB)], 7, [], NONE).to_json()
    raw["moves"][0]["progress"] = {"advanced_ms": "yesterday"}
    doc = PlanDocument.model_validate(raw)
    assert [m.tp for m in doc.moves] == [("t", 0)]
    assert stored_progress(doc) == {}


def test_the_whole_plans_figures_are_stored_read_back_leniently_and_dropped_when_done() -> None:
    moves = [Move("t", 0, (3, 2), GB), Move("t", 1, (1, 2), GB)]
    doc = plan_document(decision(), moves, 7, [], NONE)
    figures = PlanProgress(GB, 2 * GB, 1, 2, 0, 50e6, 20.0)
    raw = json.loads(json.dumps(with_progress(doc, figures, 1_234.5).to_json()))
    assert raw["plan_progress"]["at"] == 1_234.5
    back = PlanDocument.model_validate(raw)
    assert (back.progress, back.progress_at) == (figures, 1_234.5)
    # Only shown to operators: a malformed one is not shown, and the plan is still read.
    for bad in ({**raw["plan_progress"], "copied_bytes": "many"}, {"copied_bytes": 1}, "x"):
        lenient = PlanDocument.model_validate({**raw, "plan_progress": bad})
        assert lenient.progress is None and len(lenient.moves) == 2
    emptied = synced(back, set(), NONE)
    assert emptied is not None and "plan_progress" not in emptied.to_json()
