"""`kmedic topics set-rf` in the planner: a topic's partitions gain replicas up to the factor,
placed as a heal places (new racks first, the isolation group held), nothing else moving; all
or nothing; within the move budget; done once every partition has the factor."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from planner_fixtures import GB, NOW, broker, make, part
from pydantic import ValidationError

from manager.analyzer.planner import decide
from manager.model.moves import Move
from manager.model.snapshot import OperatorRequest, Snapshot

RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1", 5: "/r2", 6: "/r3"}


def set_rf(topic: str, factor: int) -> dict[str, Any]:
    return {
        "id": "r-1",
        "kind": "set_rf",
        "topic": topic,
        "replication_factor": factor,
        "created_ms": NOW - 60_000,
    }


def cluster(factor: int, rf: int = 1, partitions: int = 6, **extra: Any) -> Snapshot:
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    low = [part(n, [n % 6 + 1, (n + 1) % 6 + 1][:rf], size=(n + 1) * GB) for n in range(partitions)]
    other = [part(n, [1, 2, 3]) for n in range(3)]
    return make(
        brokers,
        {"low": low, "other": other},
        policy={"even_spread": False},
        requests=[set_rf("low", factor)],
        **extra,
    )


def moves(snap: Snapshot) -> list[Move]:
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    return [a for a in decision.actions if isinstance(a, Move)]


def test_each_partition_gains_replicas_on_new_racks_and_nothing_else_moves() -> None:
    snap = cluster(3)
    decision = decide(snap)
    assert decision.summary.startswith("request r-1 (set_rf topic low to 3): 6 partitions")
    assert decision.request == "r-1"
    found = [a for a in decision.actions if isinstance(a, Move)]
    assert {m.topic for m in found} == {"low"} and len(found) == 6
    for m in found:
        assert m.target[: len(m.before)] == m.before  # kept, leader first
        assert len(m.target) == 3
        assert len({RACKS[b] for b in m.target}) == 3  # one per rack
    sizes = {p.partition: p.size_bytes for p in snap.topics[0].partitions}
    assert decision.bytes_to_move == sum(2 * sizes[n] for n in sizes)


def test_a_topic_at_its_factor_is_done_and_one_above_it_is_left_alone() -> None:
    done = decide(cluster(1))
    assert done.outcome == "noop" and done.request_done, done.summary
    assert "every partition of low has 1 or more replicas" in done.summary
    assert decide(cluster(1, rf=2)).request_done  # never lowered


def test_a_factor_beyond_the_brokers_blocks_the_whole_request_with_why() -> None:
    decision = decide(cluster(7))
    assert decision.outcome == "refuse" and not decision.actions
    said = " ".join(r.message for r in decision.reasons)
    assert "request r-1 (set_rf topic low to 7) cannot go on" in said
    assert "no live broker outside its replica set" in said


def test_an_isolation_group_keeps_the_new_replicas_on_its_brokers() -> None:
    snap = cluster(
        2,
        broker_groups=[{"name": "g", "brokers": [1, 2, 3, 4]}],
        isolation_groups=[{"name": "i", "topics": ["low"], "primary": "g"}],
    )
    # Partitions 4 and 5 sit on 5 and 6, outside the group: placement repair's business; the
    # new replicas of every partition land inside it.
    for m in moves(snap):
        assert set(m.target) - set(m.before) <= {1, 2, 3, 4}


def test_the_move_budget_bounds_each_plan() -> None:
    snap = cluster(2)
    budget = snap.model_copy(
        update={"policy": snap.policy.model_copy(update={"max_moves_per_cycle": 4})}
    )
    found = moves(budget)
    assert len(found) == 4
    # Largest first: the partitions sized 6, 5, 4 and 3 GB.
    assert sorted(m.partition for m in found) == [2, 3, 4, 5]


def test_a_request_names_what_its_kind_needs() -> None:
    with pytest.raises(ValidationError, match="names a topic and a replication_factor only"):
        OperatorRequest(id="r", kind="set_rf", topic="t", created_ms=0)
    with pytest.raises(ValidationError, match="a drain request names brokers only"):
        OperatorRequest(id="r", kind="drain", topic="t", replication_factor=2, created_ms=0)
    ok = OperatorRequest(id="r", kind="set_rf", topic="t", replication_factor=2, created_ms=0)
    assert ok.subject == "set_rf topic t to 2"


@given(st.integers(1, 4), st.integers(1, 2), st.integers(1, 8))
def test_every_partition_ends_at_the_factor_on_distinct_live_brokers(
    factor: int, rf: int, partitions: int
) -> None:
    snap = cluster(factor, rf=rf, partitions=partitions)
    decision = decide(snap)
    if rf >= factor:
        assert decision.request_done
        return
    found = {m.partition: m for m in moves(snap)}
    assert set(found) == set(range(partitions))
    for m in found.values():
        assert len(m.target) == factor == len(set(m.target))
        assert set(m.before) < set(m.target)


def test_the_independent_check_allows_only_the_raise_the_request_names() -> None:
    from manager.analyzer.placement_check import BrokerTotals, check_plan
    from manager.analyzer.placement_state import ClusterState

    state = ClusterState(cluster(3))
    totals = BrokerTotals.of(state)
    p = state.topic.index("low")  # low:0 on [1]
    q = state.topic.index("other")  # other:0 on [1, 2, 3]

    def problems(p: int, old: tuple[int, ...], new: tuple[int, ...], raising: Any) -> list[str]:
        return [x for x in check_plan(state, totals, [(p, old, new)], raising) if "factor" in x]

    assert problems(p, (1,), (1, 2, 3), ("low", 3)) == []
    assert problems(p, (1,), (1, 2), None)  # no request: never
    assert problems(p, (1,), (1, 2, 3), ("low", 2))  # beyond the factor asked
    assert problems(p, (1,), (2, 3), ("low", 3))  # a replica lost on the way
    assert problems(q, (1, 2, 3), (1, 2, 3, 4), ("low", 4))  # another topic
