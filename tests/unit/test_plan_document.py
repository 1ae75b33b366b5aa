"""The stored plan document: built from a decision, synced as moves finish and throttles change,
adopted back."""

from __future__ import annotations

import json

from planner_fixtures import GB, broker, make, part

from manager.coordination.move_budget import from_plan
from manager.coordination.plan_document import (
    moves_for,
    moves_to_adopt,
    own_partitions,
    plan_document,
    stored_throttles,
    synced,
)
from manager.model.decision import Decision, ElectPreferredLeader, Reason, Reassign
from manager.model.moves import Move
from manager.model.throttles import LEADER_RATE, LEADER_REPLICAS, ThrottleRecord

NONE = ThrottleRecord()
OWNED = ThrottleRecord({("t", LEADER_REPLICAS): frozenset({"0:1"})}, {(1, LEADER_RATE): "9"})

SNAP = make(
    [broker(1, "/a"), broker(2, "/b"), broker(3, "/a"), broker(4, "/b")],
    {"t": [part(0, [1, 2], size=3 * GB), part(1, [2, 1], size=GB), part(2, [3, 4])]},
)


def decision(*actions: Reassign | ElectPreferredLeader) -> Decision:
    return Decision("act", "balance", "balance plan", (Reason("x", "y"),), actions)


def test_reassignments_and_lone_elections_become_moves_with_sizes() -> None:
    moves = moves_for(
        decision(
            Reassign("t", 0, (1, 2), (3, 2)),
            ElectPreferredLeader("t", 0, 3),  # follows its reassignment: no second move
            ElectPreferredLeader("t", 1, 1),  # alone: a same-replicas move, no data
        ),
        SNAP,
    )
    assert moves == [Move("t", 0, (3, 2), 3 * GB), Move("t", 1, (2, 1), 0)]


def test_the_document_round_trips_through_json_with_its_history() -> None:
    moves = [Move("t", 0, (3, 2), 3 * GB)]
    doc = json.loads(json.dumps(plan_document(decision(), moves, 7, [(1000.0, 1)], OWNED)))
    assert doc["epoch"] == 7 and doc["kind"] == "balance"
    assert doc["moves"] == [{"topic": "t", "partition": 0, "target": [3, 2], "size_bytes": 3 * GB}]
    assert from_plan(doc) == [(1000.0, 1)]
    assert moves_to_adopt(doc, set()) == moves
    assert moves_to_adopt(doc, {("t", 0)}) == []
    assert own_partitions(doc) == {("t", 0)}
    assert own_partitions(None) == frozenset()
    assert stored_throttles(doc) == OWNED


def test_a_plan_without_a_throttle_record_owns_no_throttle() -> None:
    assert stored_throttles({"moves": []}) == NONE
    assert stored_throttles(None) == NONE


def test_finished_moves_are_trimmed_and_the_document_is_emptied_not_dropped() -> None:
    moves = [Move("t", 0, (3, 2), 1), Move("t", 1, (1, 2), 1)]
    doc = plan_document(decision(), moves, 7, [(1000.0, 2)], NONE)
    assert synced(doc, {("t", 0), ("t", 1)}, NONE) is None  # nothing changed: no write
    one_left = synced(doc, {("t", 1)}, NONE)
    assert one_left is not None and [m["partition"] for m in one_left["moves"]] == [1]
    empty = synced(one_left, set(), NONE)
    assert empty is not None and empty["moves"] == []
    assert from_plan(empty) == [(1000.0, 2)], "the history outlives the plan"
    assert synced(empty, set(), NONE) is None


def test_a_change_of_owned_throttles_alone_is_written() -> None:
    doc = plan_document(decision(), [Move("t", 0, (3, 2), 1)], 7, [], NONE)
    now_owned = synced(doc, {("t", 0)}, OWNED)
    assert now_owned is not None and stored_throttles(now_owned) == OWNED
    assert now_owned["moves"] == doc["moves"]
    assert synced(now_owned, {("t", 0)}, OWNED) is None
    released = synced(now_owned, {("t", 0)}, NONE)
    assert released is not None and stored_throttles(released) == NONE
