"""Operator requests in the planner: drain moves every replica off (as a heal would place
them), fill moves onto the new brokers only, demote moves leadership only; each says when it
is done, and goes through the same gates and checks as any plan."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, NOW, broker, make, part

from manager.analyzer.planner import decide
from manager.model.decision import Decision, ElectPreferredLeader
from manager.model.moves import Move
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import SnapshotError

QUIET = 10 * 1000
SLOW = {"state": "slow", "score": 5.0, "since_ms": NOW - 60_000, "evidence": "p90 250 ms"}
RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1", 5: "/r2", 6: "/r3"}


def _request(kind: str, *brokers: int, rid: str = "r-1") -> dict[str, Any]:
    return {"id": rid, "kind": kind, "brokers": list(brokers), "created_ms": NOW - 60_000}


def _cluster(
    requests: list[dict[str, Any]], ids: tuple[int, ...] = (1, 2, 3, 4, 5, 6), **policy: Any
) -> Snapshot:
    brokers = [broker(b, RACKS[b]) for b in ids]
    pairs = [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 1), (1, 5), (2, 6), (3, 1), (4, 2)]
    used = [pr for pr in pairs if pr[0] in ids and pr[1] in ids]
    parts = [
        part(n, list(used[n % len(used)]), size=(n + 1) * GB, bytes_in=QUIET, bytes_out=QUIET)
        for n in range(12)
    ]
    return make(brokers, {"t": parts}, policy={"even_spread": False, **policy}, requests=requests)


def _moves(decision: Decision) -> list[Move]:
    return [a for a in decision.actions if isinstance(a, Move)]


def test_a_drain_moves_every_replica_off_and_only_those() -> None:
    snap = _cluster([_request("drain", 4)])
    decision = decide(snap)
    assert decision.outcome == "act" and decision.request == "r-1", decision.summary
    assert decision.summary.startswith("request r-1 (drain brokers 4)")
    moves = _moves(decision)
    on_four = {p.partition for t in snap.topics for p in t.partitions if 4 in p.replicas}
    assert {m.partition for m in moves} == on_four
    for m in moves:
        assert 4 not in m.target
        assert set(m.before) - {4} <= set(m.target)  # nothing else moves
        assert len({RACKS[b] for b in m.target}) == 2  # racks kept apart
    sizes = {p.partition: p.size_bytes for t in snap.topics for p in t.partitions}
    assert decision.bytes_to_move == sum(sizes[p] for p in on_four)


def test_a_drained_broker_takes_nothing_from_a_heal() -> None:
    brokers = [broker(b, RACKS[b], alive=b != 6) for b in (1, 2, 3, 4, 5, 6)]
    parts = [part(n, [6, 1 + n % 5], alive={1, 2, 3, 4, 5}) for n in range(10)]
    snap = make(brokers, {"t": parts}, requests=[_request("drain", 4)])
    decision = decide(snap)
    assert decision.kind == "heal" and decision.outcome == "act", decision.summary
    assert all(4 not in set(m.target) - set(m.before) for m in _moves(decision))


def test_a_drained_broker_says_done() -> None:
    # Every partition on brokers 1-5; broker 6 (already drained) holds none.
    drained = _cluster([], ids=(1, 2, 3, 4, 5))
    brokers = [b.model_dump() for b in drained.brokers] + [broker(6, "/r3")]
    parts = [p.model_dump() for p in drained.topics[0].partitions]
    decision = decide(make(brokers, {"t": parts}, requests=[_request("drain", 6)]))
    assert decision.outcome == "noop" and decision.request_done, decision.summary
    assert "hold no replica" in decision.summary


def test_a_drain_the_rest_cannot_take_is_refused_with_reasons() -> None:
    # 24 replicas and three brokers left with room for 7 each.
    snap = _cluster([_request("drain", 4, 5, 6)], max_replicas_per_broker=7)
    decision = decide(snap)
    assert decision.outcome == "refuse" and decision.request == "r-1"
    codes = {r.code for r in decision.reasons}
    assert "operator_request" in codes and "plan_violates_constraints" in codes


def test_demote_moves_leadership_and_no_data() -> None:
    snap = _cluster([_request("demote", 1)])
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    assert decision.bytes_to_move == 0
    led = {p.partition for t in snap.topics for p in t.partitions if p.leader == 1}
    elected = {
        a.partition: a.leader for a in decision.actions if isinstance(a, ElectPreferredLeader)
    }
    assert set(elected) == led and 1 not in elected.values()
    for m in _moves(decision):
        assert set(m.target) == set(m.before)  # a reorder only
        assert m.target[-1] == 1  # the demoted broker last


def test_a_demoted_broker_leading_nothing_says_done() -> None:
    snap = _cluster([_request("demote", 1)])
    data = snap.model_dump()
    for t in data["topics"]:
        for p in t["partitions"]:
            if p["leader"] == 1:
                p["replicas"] = [*(b for b in p["replicas"] if b != 1), 1]
                p["leader"] = p["replicas"][0]
    brokers = data["brokers"]
    decision = decide(
        make(brokers, {"t": data["topics"][0]["partitions"]}, requests=[_request("demote", 1)])
    )
    assert decision.outcome == "noop" and decision.request_done


def test_a_demote_keeps_what_has_no_other_replica_and_is_done_with_it_named() -> None:
    # Broker 1 leads partition 0 with a follower elsewhere and partition 1 alone (RF 1): a
    # demote moves no data, so 1 keeps that one for good; it used to stay running forever.
    brokers = [broker(b, RACKS[b]) for b in (1, 2, 3)]
    request = [_request("demote", 1)]
    decision = decide(make(brokers, {"t": [part(0, [1, 2]), part(1, [1])]}, requests=request))
    assert decision.outcome == "act", decision.summary
    assert decision.summary.startswith("request r-1 (demote brokers 1): 1 leaderships move")
    assert [
        (a.partition, a.leader) for a in decision.actions if isinstance(a, ElectPreferredLeader)
    ] == [(0, 2)]
    told = " ".join(r.message for r in decision.reasons)
    assert "1 have no replica outside [1] and stay led there: t:1" in told, told

    after = make(brokers, {"t": [part(0, [2, 1]), part(1, [1])]}, requests=request)
    done = decide(after)
    assert done.outcome == "noop" and done.request_done, done.summary
    assert done.summary == (
        "request r-1 (demote brokers 1) is done: the brokers lead no partition another broker "
        "holds; 1 have no replica outside [1] and stay led there: t:1 (a demote moves no data: "
        "drain the brokers, or raise those topics' replication factor)"
    )


@pytest.mark.parametrize(
    ("follower", "isr", "why"),
    [
        (broker(2, "/r2"), [1], "broker 2 is out of its ISR"),
        (broker(2, "/r2", slowness=SLOW), [1, 2], "broker 2 is slow"),
    ],
)
def test_a_demote_that_cannot_go_on_names_why_each_follower_cannot_lead(
    follower: dict[str, Any], isr: list[int], why: str
) -> None:
    brokers = [broker(1, "/r1"), follower, broker(3, "/r3")]
    snap = make(brokers, {"t": [part(0, [1, 2], isr=isr)]}, requests=[_request("demote", 1)])
    decision = decide(snap)
    assert decision.outcome == "refuse" and not decision.request_done, decision.summary
    said = " ".join(r.message for r in decision.reasons)
    assert f"t:0: no follower outside [1] can lead it: {why}" in said, said


def test_fill_moves_onto_the_new_broker_only() -> None:
    snap = _cluster([_request("fill", 6)], ids=(1, 2, 3, 4, 5, 6))
    data = snap.model_dump()
    parts = [p for p in data["topics"][0]["partitions"] if 6 not in p["replicas"]]
    decision = decide(make(data["brokers"], {"t": parts}, requests=[_request("fill", 6)]))
    assert decision.outcome == "act", decision.summary
    assert all(6 in m.target and 6 not in m.before for m in _moves(decision))


def test_fill_needs_fresh_loads() -> None:
    data = _cluster([_request("fill", 6)]).model_dump()
    parts = [p for p in data["topics"][0]["partitions"] if 6 not in p["replicas"]]
    for p in parts:
        p["load"]["window_valid"] = False
    decision = decide(make(data["brokers"], {"t": parts}, requests=[_request("fill", 6)]))
    assert decision.outcome == "refuse"
    assert "stale_load_data" in {r.code for r in decision.reasons}


def test_a_drain_goes_on_with_stale_loads() -> None:
    snap = _cluster([_request("drain", 4)])
    data = snap.model_dump()
    for p in data["topics"][0]["partitions"]:
        p["load"]["window_valid"] = False
    decision = decide(
        make(
            data["brokers"], {"t": data["topics"][0]["partitions"]}, requests=[_request("drain", 4)]
        )
    )
    assert decision.outcome == "act", decision.summary


def test_a_drain_without_loads_predicts_no_change_of_traffic() -> None:
    """Planned by size and count, a drain knows no traffic: its predicted loads keep each
    broker's network figures, as a heal's do (they showed every broker at zero before the
    drain shared the heal's finish step)."""
    snap = _cluster([_request("drain", 4)])
    data = snap.model_dump()
    for p in data["topics"][0]["partitions"][::2]:
        p["load"]["window_valid"] = False
    decision = decide(
        make(
            data["brokers"], {"t": data["topics"][0]["partitions"]}, requests=[_request("drain", 4)]
        )
    )
    assert decision.outcome == "act", decision.summary
    before, after = decision.loads_before, decision.loads_after
    assert any(load.network_in > 0 for load in before.values())
    for b in before:
        assert after[b].network_in == before[b].network_in
        assert after[b].network_out == before[b].network_out
    assert after[4].disk_bytes == 0 and after[4].replicas == 0


def test_a_request_naming_an_unknown_broker_is_a_bad_snapshot() -> None:
    with pytest.raises(SnapshotError, match=r"requests.0.brokers: unknown brokers \[9\]"):
        _cluster([_request("drain", 9)])


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    kind=st.sampled_from(["drain", "demote", "fill"]),
    target=st.integers(1, 6),
    cap=st.none() | st.integers(4, 12),
)
def test_every_request_plan_holds_the_constraints_or_refuses(
    kind: str, target: int, cap: int | None
) -> None:
    snap = _cluster([_request(kind, target)], max_replicas_per_broker=cap)
    decision = decide(snap)
    assert decide(snap) == decision
    assert decision.request == "r-1"
    if decision.outcome != "act":
        return
    for m in _moves(decision):
        assert len(set(m.target)) == len(m.target) == len(m.before)
        if kind == "drain":
            assert target not in m.target
        if kind == "fill":
            assert target in m.target
        if kind == "demote":
            assert m.target[0] != target
    if cap is not None:
        assert all(
            load.replicas <= max(cap, decision.loads_before[b].replicas)
            for b, load in decision.loads_after.items()
        )
