"""The heal is optimal, not greedy: when a placement exists that holds every constraint the heal
finds it, and no placement an exhaustive search can find has a better rack spread."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, MB, broker, make, part, snapshot_dict

from manager.analyzer.heal import plan_heal
from manager.analyzer.heal_solver import Quality, quality
from manager.analyzer.placement import required_units
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide
from manager.model.racks import min_rack_units
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot

# Broker 5 (rack r1) is dead. Partition a (the larger, so placed first) lives on r1 and may go
# to broker 2 (r2) or 3 (r3); partition b lives on r2 and may go only to broker 3 (r3) without
# repeating a rack. Broker 3 is the emptier, so one replica at a time a takes broker 3's last
# slot and leaves b nowhere to go; the exact search gives a broker 2 and b broker 3.
RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r3", 5: "/r1", 6: "/r2"}
ALIVE = {1, 2, 3, 4, 6}


def _tight(*, spare_in_r2: bool) -> Snapshot:
    brokers = [broker(b, RACKS[b], alive=b in ALIVE) for b in (1, 2, 3, 4, 5, 6)]
    if not spare_in_r2:
        brokers = [b for b in brokers if b["id"] != 6]
    live = ALIVE if spare_in_r2 else ALIVE - {6}
    heal = [
        part(0, [1, 5], size=20 * GB, alive=live),  # a
        part(1, [2, 5], size=10 * GB, alive=live),  # b
    ]
    fill = [
        part(0, [1], alive=live),
        part(1, [1], alive=live),
        part(2, [2], bytes_in=60 * MB, alive=live),  # broker 2 is the busier
        part(3, [3], bytes_in=1 * MB, alive=live),
        part(4, [3], bytes_in=1 * MB, alive=live),
        part(5, [4], alive=live),
        part(6, [4], alive=live),
        part(7, [4], alive=live),
    ]
    if spare_in_r2:
        fill.append(part(8, [6], bytes_in=50 * MB, alive=live))  # room, but rack r2 again
    return make(brokers, {"heal": heal, "fill": fill}, policy={"max_replicas_per_broker": 3})


def _targets(decision: Any) -> dict[int, tuple[int, ...]]:
    return {a.partition: a.target for a in decision.actions if getattr(a, "topic", None) == "heal"}


def test_one_at_a_time_would_refuse_but_a_placement_exists() -> None:
    decision = decide(_tight(spare_in_r2=False))
    assert decision.outcome == "act", decision.summary
    assert _targets(decision) == {0: (1, 2), 1: (2, 3)}
    exact = [r.message for r in decision.reasons if r.code == "heal_exact_placement"]
    assert exact and "1 partitions found no broker one replica at a time" in exact[0], exact


def test_one_at_a_time_would_repeat_a_rack_but_a_rack_distinct_placement_exists() -> None:
    snap = _tight(spare_in_r2=True)
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    # a goes to r2 (broker 6, the emptier there), b to broker 3: four racks, none repeated.
    assert _targets(decision) == {0: (1, 6), 1: (2, 3)}
    exact = [r.message for r in decision.reasons if r.code == "heal_exact_placement"]
    assert exact and "repeated rack" in exact[0], exact
    assert "4 distinct racks, against 3 distinct racks" in exact[0], exact


def test_a_heal_with_no_placement_is_refused_and_says_the_search_proved_it() -> None:
    data = json.loads(_tight(spare_in_r2=False).model_dump_json())
    data["policy"]["max_replicas_per_broker"] = 2  # now nobody has room: 2 and 3 are full
    decision = decide(parse_snapshot(json.dumps(data)))
    assert decision.outcome == "refuse"
    messages = " | ".join(r.message for r in decision.reasons)
    assert "max_replicas_per_broker" in messages


def test_a_heal_the_greedy_places_well_skips_the_exact_search() -> None:
    brokers = [broker(b, f"/r{b % 3}", alive=b != 6) for b in range(1, 7)]
    alive = {1, 2, 3, 4, 5}
    parts = [part(n, [6, 1 + n % 5], alive=alive) for n in range(5)]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act"
    assert "heal_exact_placement" not in {r.code for r in decision.reasons}


def test_the_exact_plan_holds_every_limit() -> None:
    snap = _tight(spare_in_r2=False)
    state = ClusterState(snap)
    plan = plan_heal(state)
    assert plan.exact is not None and not plan.blocked
    for b in state.broker_ids:
        assert state.count[b] <= 3
        assert state.load_in[b] <= state.lim_in[b]
        assert state.load_disk[b] <= state.lim_disk[b]


# -- property: the heal acts exactly when an exhaustive search finds a placement ---------------

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_COMBINATIONS = 20_000


@st.composite
def tight_clusters(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(3, 7))
    racks = draw(st.integers(1, 4))
    dead = set(draw(st.sets(st.integers(1, n), min_size=1, max_size=2)))
    alive = set(range(1, n + 1)) - dead
    disk_gb = draw(st.sampled_from([40, 80, 1000]))
    brokers = [
        broker(
            b,
            f"/r{draw(st.integers(0, racks - 1))}",
            alive=b in alive,
            capacity={
                "network_in_bytes_per_s": 100 * MB,
                "network_out_bytes_per_s": 100 * MB,
                "disk_bytes": disk_gb * GB,
            },
        )
        for b in range(1, n + 1)
    ]
    topics: dict[str, list[dict[str, Any]]] = {}
    for t in range(draw(st.integers(1, 2))):
        rf = draw(st.integers(2, min(3, n)))
        parts = []
        for p in range(draw(st.integers(1, 5))):
            reps = list(draw(st.permutations(range(1, n + 1)))[:rf])
            if dead.isdisjoint(reps) and draw(st.booleans()):
                reps[draw(st.integers(0, rf - 1))] = min(dead)  # most partitions need healing
            size = draw(st.integers(0, 30)) * GB
            parts.append(
                part(p, reps, alive=alive, size=size, bytes_in=draw(st.integers(0, 40)) * MB)
            )
        topics[f"t{t}"] = parts
    policy = {
        "enforce_min_racks": draw(st.booleans()),
        "min_racks": draw(st.integers(1, 3)),
        "max_replicas_per_broker": draw(st.none() | st.integers(1, 5)),
    }
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        primary = sorted(draw(st.sets(st.integers(1, n), min_size=1)))
        extra["broker_groups"] = [{"name": "g", "brokers": primary}]
        isolation: dict[str, Any] = {"name": "i", "topics": ["t0"], "primary": "g"}
        if draw(st.booleans()):
            second = sorted(draw(st.sets(st.integers(1, n), min_size=1)))
            extra["broker_groups"].append({"name": "h", "brokers": second})
            isolation["secondary"] = "h"
        extra["isolation_groups"] = [isolation]
    if draw(st.booleans()):
        extra["anti_affinity_groups"] = [{"name": "a", "topics": sorted(topics)}]
    return snapshot_dict(brokers, topics, policy=policy, **extra)


def exhaustive(state: ClusterState) -> Quality | None:
    """The best quality over every valid placement of the dead replicas; None if none is."""
    dead = frozenset(state.dead)
    affected = [p for p, reps in enumerate(state.replicas) if not dead.isdisjoint(reps)]
    slots: list[tuple[int, list[int]]] = []
    for p in affected:
        leader = state.leader[p]
        if leader is None or leader in dead or leader in state.kept_out.frozen:
            return None
        live = [b for b in state.replicas[p] if b not in dead]
        sets = state.allowed_sets(p)
        allowed = frozenset().union(*sets) if sets is not None else None
        cands = [
            b
            for b in state.broker_ids
            if state.usable(b) and b not in live and (allowed is None or b in allowed)
        ]
        slots += [(p, cands) for b in state.replicas[p] if b in dead]
    assume(math.prod(len(c) for _, c in slots) <= MAX_COMBINATIONS)
    best: Quality | None = None
    cap = state.policy.max_replicas_per_broker
    for choice in itertools.product(*(c for _, c in slots)):
        new: dict[int, list[int]] = {}
        for (p, _), b in zip(slots, choice, strict=True):
            new.setdefault(p, []).append(b)
        if any(len(set(bs)) != len(bs) for bs in new.values()):
            continue
        gained: dict[int, list[int]] = {}
        for (p, _), b in zip(slots, choice, strict=True):
            gained.setdefault(b, []).append(p)
        if not all(_fits(state, b, ps, cap) for b, ps in gained.items()):
            continue
        sets_of = {p: [*(x for x in state.replicas[p] if x not in dead), *new[p]] for p in new}
        if any(_short_of_racks(state, reps) for reps in sets_of.values()):
            continue
        got = _quality_of(state, sets_of)
        if best is None or got > best:
            best = got
    return best


def _fits(state: ClusterState, b: int, ps: list[int], cap: int | None) -> bool:
    d_in = [state.bin[p] for p in ps if state.bin[p] > 0]
    size = [state.size[p] for p in ps if state.size[p] > 0]
    return (
        (not d_in or state.load_in[b] + sum(d_in) <= state.lim_in[b])
        and (not size or state.load_disk[b] + sum(size) <= state.lim_disk[b])
        and (cap is None or state.count[b] + len(ps) <= cap)
    )


def _short_of_racks(state: ClusterState, reps: list[int]) -> bool:
    need = required_units(state, len(reps))
    return min_rack_units((state.loc[b] for b in reps), state.kind) < need


def _quality_of(state: ClusterState, sets_of: dict[int, list[int]]) -> Quality:
    """The oracle's own measure of a placement, written apart from the solver's objective on
    purpose: replicas in their group's primary set, then distinct tops, then distinct racks,
    summed over partitions. If both were one function, a wrong objective would agree with
    itself and the property could not fail."""
    primary = tops = racks = 0
    for p, reps in sets_of.items():
        sets = state.allowed_sets(p)
        if sets is not None:
            primary += sum(1 for b in reps if b in sets[0])
        tops += len({state.loc[b].top for b in reps})
        racks += len({state.loc[b].rack for b in reps})
    return Quality(primary, tops, racks)


@SETTINGS
@given(tight_clusters())
def test_the_heal_acts_exactly_when_a_placement_exists_and_none_is_better(
    data: dict[str, Any],
) -> None:
    snap = parse_snapshot(json.dumps(data))
    best = exhaustive(ClusterState(snap))
    state = ClusterState(snap)
    plan = plan_heal(state)
    assert (not plan.blocked) == (best is not None), (plan.blocked, best, plan.exact)
    if best is None:
        return
    dead = frozenset(state.dead)
    healed = [m.p for m in plan.moves]
    assert all(dead.isdisjoint(state.replicas[p]) for p in healed)
    assert quality(state, healed) == best, plan.exact
