"""Properties over random clusters: hard constraints hold, heal touches only dead replicas,
the same snapshot gives the same plan, and every refusal carries a reason."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, MB, broker, part, snapshot_dict, unhealed_partitions

from manager.analyzer.planner import decide
from manager.model.decision import Decision
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(3, 9))
    racks = draw(st.integers(1, 4))
    dead = set(draw(st.sets(st.integers(1, n), max_size=2)))
    alive = set(range(1, n + 1)) - dead
    brokers = [broker(b, f"/r{b % racks}", alive=b in alive) for b in range(1, n + 1)]
    topics: dict[str, list[dict[str, Any]]] = {}
    for t in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(2, min(3, n)))
        parts = []
        for p in range(draw(st.integers(1, 6))):
            reps = draw(st.permutations(range(1, n + 1)))[:rf]
            parts.append(
                part(
                    p,
                    list(reps),
                    alive=alive,
                    size=draw(st.integers(0, 50)) * GB,
                    bytes_in=draw(st.integers(0, 45)) * MB,
                    bytes_out=draw(st.integers(0, 60)) * MB,
                )
            )
        topics[f"t{t}"] = parts
    policy = {
        "enforce_min_racks": draw(st.booleans()),
        "min_racks": draw(st.integers(1, 3)),
        "max_replicas_per_broker": draw(st.none() | st.integers(2, 12)),
        "balance_threshold": draw(st.sampled_from([1.1, 1.5, 10.0])),
    }
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["broker_groups"] = [
            {"name": "g", "brokers": sorted(draw(st.sets(st.integers(1, n), min_size=1)))}
        ]
        extra["isolation_groups"] = [{"name": "i", "topics": ["t0"], "primary": "g"}]
    if draw(st.booleans()):
        extra["anti_affinity_groups"] = [{"name": "a", "topics": sorted(topics)}]
    if draw(st.booleans()):
        extra["maintenance_domains"] = [draw(st.sampled_from(sorted({b["rack"] for b in brokers})))]
    return snapshot_dict(brokers, topics, policy=policy, **extra)


def _parse(data: dict[str, Any]) -> Snapshot:
    return parse_snapshot(json.dumps(data))


def _final_assignment(snap: Snapshot, decision: Decision) -> dict[tuple[str, int], Any]:
    """Replay the actions: partition -> (replicas, leader)."""
    state = {
        (t.name, p.partition): (p.replicas, p.leader) for t in snap.topics for p in t.partitions
    }
    for action in decision.actions:
        a = action.to_dict()
        key = (a["topic"], a["partition"])
        reps, leader = state[key]
        if a["type"] == "reassign":
            assert tuple(a["from"]) == reps
            to = tuple(a["to"])
            state[key] = (to, leader if leader in to else to[0])
        else:
            assert a["leader"] == reps[0], "an election needs its leader first in the list"
            state[key] = (reps, a["leader"])
    return state


def _loads(snap: Snapshot, assignment: dict[tuple[str, int], Any]) -> dict[int, list[float]]:
    loads: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for t in snap.topics:
        for p in t.partitions:
            reps, leader = assignment[(t.name, p.partition)]
            assert p.load is not None
            for b in reps:
                loads[b][0] += p.load.bytes_in_per_s
                loads[b][2] += p.size_bytes
                loads[b][3] += 1
            if leader is not None:
                loads[leader][1] += p.load.bytes_out_per_s
    return loads


def _check_hard_constraints(snap: Snapshot, decision: Decision) -> None:
    policy = snap.policy
    by_id = {b.id: b for b in snap.brokers}
    domain = {b.id: b.rack for b in snap.brokers}
    frozen = {b for b, d in domain.items() if d in snap.maintenance_domains}
    groups = {g.name: set(g.brokers) for g in snap.broker_groups}
    isolation = {t: groups[i.primary] for i in snap.isolation_groups for t in i.topics}
    before = {
        (t.name, p.partition): (p.replicas, p.leader) for t in snap.topics for p in t.partitions
    }
    after = _final_assignment(snap, decision)
    for key, (reps, _) in after.items():
        old = before[key][0]
        if reps == old:
            continue
        assert len(set(reps)) == len(reps) == len(old)
        added = set(reps) - set(old)
        assert all(by_id[b].alive for b in added)
        assert not (added | (set(old) - set(reps))) & frozen
        if key[0] in isolation:
            assert added <= isolation[key[0]]
        if policy.enforce_min_racks and added:
            assert len({domain[b] for b in reps}) >= min(policy.min_racks, len(reps))
    lim = policy.limits
    was, now = _loads(snap, before), _loads(snap, after)
    for b in by_id:
        cap = 100 * MB
        for dim, fraction, capacity in (
            (0, lim.network_in_fraction, cap),
            (1, lim.network_out_fraction, cap),
            (2, lim.disk_fraction, 1000 * GB),
        ):
            if now[b][dim] > was[b][dim] + 1e-3:
                assert now[b][dim] <= fraction * capacity + 1e-3, (b, dim)
        if policy.max_replicas_per_broker and now[b][3] > was[b][3]:
            assert now[b][3] <= policy.max_replicas_per_broker
        predicted = decision.loads_after[b]
        assert abs(predicted.network_in - now[b][0]) < 1e-3
        assert abs(predicted.network_out - now[b][1]) < 1e-3
        assert predicted.replicas == now[b][3]


@SETTINGS
@given(clusters())
def test_every_plan_meets_every_hard_constraint(data: dict[str, Any]) -> None:
    snap = _parse(data)
    decision = decide(snap)
    if decision.outcome == "act" or decision.would_act is not None:
        # What a switched-off goal would do is held to the same constraints (issue 39.2).
        assert decision.actions
        _check_hard_constraints(snap, decision)
    else:
        assert decision.actions == ()


@SETTINGS
@given(clusters())
def test_heal_moves_only_dead_broker_replicas(data: dict[str, Any]) -> None:
    snap = _parse(data)
    dead = {b.id for b in snap.brokers if not b.alive}
    decision = decide(snap)
    if decision.kind != "heal" or decision.outcome != "act":
        return
    moved = 0
    sizes = {(t.name, p.partition): p.size_bytes for t in snap.topics for p in t.partitions}
    leaders = {(t.name, p.partition): p.leader for t in snap.topics for p in t.partitions}
    for action in decision.actions:
        a = action.to_dict()
        assert a["type"] == "reassign"
        gone = set(a["from"]) - set(a["to"])
        assert gone and gone <= dead
        assert a["to"][0] == leaders[(a["topic"], a["partition"])], "the leader stays first"
        moved += len(gone) * sizes[(a["topic"], a["partition"])]
    # A partial heal: every partition with a dead replica is moved, or refused by name.
    unhealed = unhealed_partitions(decision)
    on_dead = sum(
        sizes[(t.name, p.partition)] * len(dead & set(p.replicas))
        for t in snap.topics
        for p in t.partitions
        if (t.name, p.partition) not in unhealed
    )
    assert decision.bytes_to_move == moved == on_dead
    touched = {(a.topic, a.partition) for a in decision.actions}
    lost = {
        (t.name, p.partition) for t in snap.topics for p in t.partitions if dead & set(p.replicas)
    }
    assert touched | unhealed == lost and not touched & unhealed


@SETTINGS
@given(clusters())
def test_same_snapshot_same_plan_and_refusals_carry_reasons(data: dict[str, Any]) -> None:
    first = decide(_parse(data)).to_dict()
    second = decide(_parse(json.loads(json.dumps(data)))).to_dict()
    assert first == second
    if first["outcome"] == "refuse":
        assert first["reasons"]
        assert all(r["code"] and r["message"] for r in first["reasons"])


@SETTINGS
@given(clusters())
def test_balance_leaves_no_broker_over_a_limit_unreported(data: dict[str, Any]) -> None:
    snap = _parse(data)
    decision = decide(snap)
    if decision.kind != "balance" or decision.outcome != "act":
        return
    lim = snap.policy.limits
    unresolved = " ".join(r.message for r in decision.reasons if r.code == "limits_unresolved")
    now = _loads(snap, _final_assignment(snap, decision))
    frozen = {b.id for b in snap.brokers if b.rack in snap.maintenance_domains}
    for b in snap.brokers:
        if not b.alive or b.id in frozen:
            continue
        load = now[b.id]
        over = (
            load[0] > lim.network_in_fraction * 100 * MB + 1e-3
            or load[1] > lim.network_out_fraction * 100 * MB + 1e-3
            or load[2] > lim.disk_fraction * 1000 * GB + 1e-3
        )
        if over:
            assert f"broker {b.id} stays over" in unresolved
