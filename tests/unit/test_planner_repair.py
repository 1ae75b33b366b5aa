"""Placement repair: with ``repair_placement`` on, partitions that break the placement policy
as they are get one replica moved where the policy wants it; left alone, they are counted."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_fixtures import broker, make, part

from manager.analyzer.health import alerts_for
from manager.analyzer.placement_check import violations
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide
from manager.model.decision import Decision
from manager.model.moves import Move
from manager.model.snapshot import Snapshot

QUIET = 10 * 1000
RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}


def _snap(parts: list[dict[str, Any]], **policy: Any) -> Snapshot:
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    # Even spread off: these tests are about repairs alone.
    return make(brokers, {"t": parts}, policy={"even_spread": False, **policy})


def _even(n: int) -> list[dict[str, Any]]:
    """Partitions 1..n-1 on distinct racks, spread over every broker."""
    pairs = [(1, 3), (3, 5), (5, 2), (2, 4), (4, 6), (6, 1)]
    return [
        part(i, list(pairs[i % len(pairs)]), bytes_in=QUIET, bytes_out=QUIET) for i in range(1, n)
    ]


def _moves(decision: Decision) -> list[Move]:
    return [a for a in decision.actions if isinstance(a, Move)]


def test_two_replicas_in_one_rack_get_a_new_rack() -> None:
    parts = [part(0, [1, 2], bytes_in=QUIET, bytes_out=QUIET), *_even(7)]
    decision = decide(_snap(parts, repair_placement=True))
    assert decision.outcome == "act" and decision.kind == "balance", decision.summary
    assert decision.summary.startswith("repair placement: 1 replica moves")
    (move,) = _moves(decision)
    assert move.partition == 0 and move.target[0] == 1  # the leader stays
    assert RACKS[move.target[1]] != "/r1"
    assert [r.code for r in decision.reasons] == ["placement_repair"]
    assert "t:0: replicas [1, 2] share a rack" in decision.reasons[0].message
    assert decision.placement_violations == 0


def test_off_by_default_the_repair_is_decided_told_and_never_carried_out() -> None:
    """Issue 39.2: a switch like any other - decided, a would_act naming it, its plan kept
    for the audit log; and, since nothing needs it, no alert."""
    parts = [part(0, [1, 2], bytes_in=QUIET, bytes_out=QUIET), *_even(7)]
    decision = decide(_snap(parts))
    assert decision.outcome == "noop"
    assert decision.would_act == "disabled by policy.goals.repair_placement"
    assert decision.disabled_by == ("repair_placement",) and decision.tidying
    assert decision.placement_violations == 0  # what would be left after its plan
    assert len(decision.actions) == 1
    assert alerts_for(decision, audit_on_failover=False) == {}


def test_a_replica_outside_its_isolation_group_is_brought_home() -> None:
    parts = [part(0, [1, 3], bytes_in=QUIET, bytes_out=QUIET), *_even(7)]
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    snap = make(
        brokers,
        {"t": parts[:1], "u": parts[1:]},
        policy={"even_spread": False, "repair_placement": True},
        broker_groups=[{"name": "gold", "brokers": [1, 4, 6]}],
        isolation_groups=[{"name": "i", "topics": ["t"], "primary": "gold"}],
    )
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    (move,) = _moves(decision)
    assert move.topic == "t" and set(move.target) <= {1, 4, 6}
    assert len({RACKS[b] for b in move.target}) == 2


def test_a_violation_no_move_can_fix_is_left_and_counted() -> None:
    # Every broker of the other racks holds its cap of 2 replicas: a new rack cannot be had.
    parts = [part(0, [1, 2], bytes_in=QUIET, bytes_out=QUIET), *_even(7)]
    decision = decide(_snap(parts, repair_placement=True, max_replicas_per_broker=2))
    assert decision.outcome == "noop", decision.summary
    assert decision.placement_violations == 1


def test_never_while_a_broker_is_dead() -> None:
    brokers = [broker(b, RACKS[b]) for b in RACKS] + [broker(7, "/r3", alive=False)]
    parts = [part(0, [1, 2], bytes_in=QUIET, bytes_out=QUIET), *_even(7)]
    snap = make(brokers, {"t": parts}, policy={"even_spread": False, "repair_placement": True})
    assert decide(snap).outcome == "noop"


def test_three_replicas_in_one_rack_take_two_plans_and_the_count_says_so() -> None:
    # One move per partition per plan: after it, two replicas still share rack r1.
    brokers = [broker(b, f"/r{b % 3}") for b in range(1, 8)]
    parts = [part(0, [1, 7, 4], bytes_in=QUIET, bytes_out=QUIET)]
    policy = {"even_spread": False, "repair_placement": True}
    decision = decide(make(brokers, {"t": parts}, policy=policy))
    assert decision.outcome == "act" and len(_moves(decision)) == 1
    assert decision.placement_violations == 1
    assert "placement_violation" in {r.code for r in decision.reasons}


def test_the_move_budget_bounds_the_repairs() -> None:
    parts = [part(i, [1, 2], bytes_in=QUIET, bytes_out=QUIET) for i in range(3)]
    decision = decide(_snap(parts, repair_placement=True, max_moves_per_cycle=2))
    assert len(_moves(decision)) == 2
    assert "budget_truncated" in {r.code for r in decision.reasons}
    assert decision.placement_violations == 1


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(3, 7))
    racks = draw(st.integers(1, 4))
    zones = draw(st.integers(1, 2))
    # Rack r sits in zone r % zones: with two zones, a new rack is not always a new zone.
    brokers = [broker(b, f"/z{(b % racks) % zones}/r{b % racks}") for b in range(1, n + 1)]
    parts = []
    for p in range(draw(st.integers(1, 12))):
        rf = draw(st.integers(1, min(3, n)))
        reps = list(draw(st.permutations(range(1, n + 1)))[:rf])
        parts.append(part(p, reps, bytes_in=QUIET, bytes_out=QUIET))
    policy = {
        "placement": draw(st.sampled_from(["rack", "zone"])),
        "repair_placement": True,
        "even_spread": draw(st.booleans()),
        "enforce_min_racks": draw(st.booleans()),
        "max_replicas_per_broker": draw(st.none() | st.integers(2, 8)),
    }
    return make(brokers, {"t": parts}, policy=policy)


@SETTINGS
@given(clusters())
def test_repairs_only_ever_reduce_violations(snap: Snapshot) -> None:
    decision = decide(snap)
    assert decide(snap) == decision
    if not decision.summary.startswith("repair placement"):
        return
    state = ClusterState(snap)
    before = len(violations(state))
    shortfall = _shortfall(snap)
    index = {(state.topic[p], state.number[p]): p for p in range(state.partition_count)}
    for m in _moves(decision):
        p = index[(m.topic, m.partition)]
        (old,) = set(m.before) - set(m.target)
        (new,) = set(m.target) - set(m.before)
        state.move_replica(p, old, new)
        replicas = {(t.name, q.partition): q.replicas for t in snap.topics for q in t.partitions}
        replicas[(m.topic, m.partition)] = tuple(m.target)
        # Every move is a step towards the policy: a partition with three replicas in one rack
        # keeps its violation after one move, but needs one unit fewer.
        assert _shortfall(snap, replicas) < shortfall
        snap = _with_replicas(snap, replicas)
        shortfall = _shortfall(snap)
    assert len(violations(state)) == decision.placement_violations <= before


def _unit(snap: Snapshot, broker_id: int) -> str:
    rack = next(b.rack for b in snap.brokers if b.id == broker_id)
    assert rack is not None
    return rack.split("/")[1] if snap.policy.placement == "zone" else rack


def _shortfall(
    snap: Snapshot, replicas: dict[tuple[str, int], tuple[int, ...]] | None = None
) -> int:
    """Racks (zones) missing across every partition, counted from the snapshot alone: an
    oracle that shares no code with the planner's own violation check."""
    live = {_unit(snap, b.id) for b in snap.brokers if b.alive}
    need_min = snap.policy.min_racks if snap.policy.enforce_min_racks else 0
    total = 0
    for t in snap.topics:
        for q in t.partitions:
            reps = (replicas or {}).get((t.name, q.partition), q.replicas)
            units = len({_unit(snap, b) for b in reps})
            want = max(min(len(reps), len(live)), min(need_min, len(reps)))
            total += max(0, want - units)
    return total


def _with_replicas(snap: Snapshot, replicas: dict[tuple[str, int], tuple[int, ...]]) -> Snapshot:
    topics = tuple(
        t.model_copy(
            update={
                "partitions": tuple(
                    q.model_copy(update={"replicas": replicas[(t.name, q.partition)]})
                    for q in t.partitions
                )
            }
        )
        for t in snap.topics
    )
    return snap.model_copy(update={"topics": topics})
