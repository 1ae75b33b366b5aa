"""The stored plan document: built from a decision, trimmed as moves finish, adopted back."""

from __future__ import annotations

import json

from planner_fixtures import GB, broker, make, part

from manager.coordination.move_budget import from_plan
from manager.coordination.plan_document import (
    moves_for,
    moves_to_adopt,
    own_partitions,
    plan_document,
    trimmed,
)
from manager.model.decision import Decision, ElectPreferredLeader, Reason, Reassign
from manager.model.moves import Move

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
    doc = json.loads(json.dumps(plan_document(decision(), moves, 7, [(1000.0, 1)])))
    assert doc["epoch"] == 7 and doc["kind"] == "balance"
    assert doc["moves"] == [{"topic": "t", "partition": 0, "target": [3, 2], "size_bytes": 3 * GB}]
    assert from_plan(doc) == [(1000.0, 1)]
    assert moves_to_adopt(doc, set()) == moves
    assert moves_to_adopt(doc, {("t", 0)}) == []
    assert own_partitions(doc) == {("t", 0)}
    assert own_partitions(None) == frozenset()


def test_finished_moves_are_trimmed_and_the_document_is_emptied_not_dropped() -> None:
    moves = [Move("t", 0, (3, 2), 1), Move("t", 1, (1, 2), 1)]
    doc = plan_document(decision(), moves, 7, [(1000.0, 2)])
    assert trimmed(doc, {("t", 0), ("t", 1)}) is None  # nothing finished: no write
    one_left = trimmed(doc, {("t", 1)})
    assert one_left is not None and [m["partition"] for m in one_left["moves"]] == [1]
    empty = trimmed(one_left, set())
    assert empty is not None and empty["moves"] == []
    assert from_plan(empty) == [(1000.0, 2)], "the history outlives the plan"
    assert trimmed(empty, set()) is None
