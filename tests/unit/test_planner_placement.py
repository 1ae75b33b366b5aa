"""One example per placement constraint, the seed cases among them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from planner_fixtures import GB, MB, broker, make, part

from manager.analyzer.placement import LoadOrder, place_new_partition
from manager.analyzer.placement_check import check_existing
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide
from manager.model.racks import location_of, rack_name_problem, spread


def _racks_of(snap: Any, replicas: list[int]) -> set[str]:
    rack = {b.id: b.rack for b in snap.brokers}
    return {rack[b] for b in replicas}


# -- rack names and policies -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "ok"),
    [
        ("/r1", "rack", True),
        ("/eu/r1", "rack", True),
        ("/eu/r1/x", "rack", False),
        ("r1", "rack", False),
        ("/", "rack", False),
        ("/r 1", "rack", False),
        ("/eu/r1", "region", True),
        ("/r1", "region", False),
        ("/zone-a/ud1", "zone", True),
        ("/zone-a", "zone", False),
    ],
)
def test_rack_name_validation(name: str, kind: Any, ok: bool) -> None:
    assert (rack_name_problem(name, kind) is None) is ok


def test_missing_rack_gets_the_default() -> None:
    assert location_of(None, "rack").rack == "/default-rack"
    assert location_of(None, "region").top == "default-region"


def test_spread_counts_tops_then_racks() -> None:
    locs = [location_of(r, "region") for r in ("/eu/a", "/eu/b", "/us/a")]
    assert spread(locs) == (2, 3)


def test_rack_aware_heal_keeps_replicas_on_distinct_racks() -> None:
    alive = {1, 2, 3, 4, 5}
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in alive) for i in range(1, 7)]
    parts = [part(n, [6, n % 2 + 1, n % 2 + 2], alive=alive) for n in range(4)]
    snap = make(brokers, {"t": parts})
    decision = decide(snap)
    assert decision.outcome == "act"
    for action in decision.actions:
        assert 6 not in action.to_dict()["to"]
        assert len(_racks_of(snap, action.to_dict()["to"])) == 3


def test_region_aware_prefers_a_new_region_over_a_new_rack() -> None:
    racks = {1: "/eu/a", 2: "/eu/b", 3: "/us/a", 4: "/us/b", 5: "/ap/a", 6: "/ap/b"}
    alive = {1, 2, 3, 4, 6}
    brokers = [broker(b, r, alive=b in alive) for b, r in racks.items()]
    # Partition on eu/a, us/a and the dead ap/a: the replacement must come from region ap.
    snap = make(brokers, {"t": [part(0, [1, 3, 5], alive=alive)]}, policy={"placement": "region"})
    decision = decide(snap)
    assert decision.outcome == "act"
    assert decision.actions[0].to_dict()["to"] == [1, 3, 6]


def test_zone_aware_min_racks_counts_zones() -> None:
    racks = {1: "/z1/u1", 2: "/z1/u2", 3: "/z2/u1", 4: "/z2/u2"}
    alive = {1, 2, 3}
    brokers = [broker(b, r, alive=b in alive) for b, r in racks.items()]
    parts = [part(0, [1, 4], alive=alive)]
    policy = {"placement": "zone", "enforce_min_racks": True, "min_racks": 2}
    decision = decide(make(brokers, {"t": parts}, policy=policy))
    # Broker 2 is in zone z1 with broker 1: only broker 3 (zone z2) keeps two zones.
    assert decision.outcome == "act"
    assert decision.actions[0].to_dict()["to"] == [1, 3]


# -- seed case: 4 racks, 13 brokers, RF 3, two racks lost -----------------------------------


def _two_racks_lost(policy: dict[str, Any]) -> Any:
    rack_of = {b: "/r1" for b in range(1, 5)}
    rack_of |= {b: "/r2" for b in range(5, 8)}
    rack_of |= {b: "/r3" for b in range(8, 11)}
    rack_of |= {b: "/r4" for b in range(11, 14)}
    members = {r: sorted(b for b in rack_of if rack_of[b] == r) for r in set(rack_of.values())}
    order = ["/r1", "/r2", "/r3", "/r4"]
    alive = {b for b, r in rack_of.items() if r in ("/r1", "/r2")}
    brokers = [broker(b, rack_of[b], alive=b in alive) for b in sorted(rack_of)]
    parts = []
    for n in range(24):
        reps = []
        for i in range(3):
            rack = members[order[(n + i) % 4]]
            reps.append(rack[n % len(rack)])
        parts.append(part(n, reps, size=GB, alive=alive))
    return make(brokers, {"events": parts}, policy=policy)


def test_two_racks_lost_min_racks_3_enforced_refuses() -> None:
    decision = decide(_two_racks_lost({"enforce_min_racks": True, "min_racks": 3}))
    assert decision.outcome == "refuse"
    assert decision.actions == ()
    assert all(r.code == "plan_violates_constraints" for r in decision.reasons)
    assert "min_racks" in decision.reasons[0].message
    assert "events:" in decision.reasons[0].message


def test_two_racks_lost_min_racks_2_enforced_places() -> None:
    snap = _two_racks_lost({"enforce_min_racks": True, "min_racks": 2})
    decision = decide(snap)
    assert decision.outcome == "act", decision.render_text()
    for action in decision.actions:
        to = action.to_dict()["to"]
        assert len(_racks_of(snap, to)) == 2
        assert _racks_of(snap, to) <= {"/r1", "/r2"}


def test_two_racks_lost_not_enforced_places_best_effort() -> None:
    snap = _two_racks_lost({"enforce_min_racks": False, "min_racks": 3})
    decision = decide(snap)
    assert decision.outcome == "act"
    assert len(decision.actions) == 24
    # Best effort still spreads as widely as the live racks allow.
    for action in decision.actions:
        assert len(_racks_of(snap, action.to_dict()["to"])) == 2


# -- seed case: anti-affinity group over 2 domains x 2 brokers ------------------------------


def _aa_state(extra_topics: dict[str, Any] | None = None) -> ClusterState:
    brokers = [broker(b, f"/r{b}") for b in (1, 2, 3, 4)]
    snap = make(
        brokers,
        extra_topics or {},
        failure_domains=[{"name": "A", "brokers": [1, 2]}, {"name": "B", "brokers": [3, 4]}],
        anti_affinity_groups=[{"name": "g", "topics": ["t1", "t2", "t3", "t4"]}],
    )
    return ClusterState(snap)


def test_anti_affinity_group_spreads_two_per_domain_one_per_broker() -> None:
    state = _aa_state()
    order = LoadOrder(state)
    placed = [place_new_partition(state, order, t, 1, GB, MB, MB) for t in ("t1", "t2", "t3", "t4")]
    assert all(p is not None for p in placed)
    brokers = [p[0] for p in placed if p is not None]
    assert sorted(brokers) == [1, 2, 3, 4]
    domains = Counter(state.domain[b] for b in brokers)
    assert domains == {"A": 2, "B": 2}


def test_anti_affinity_beats_load_but_not_rack_spread() -> None:
    # Broker 1 is idle, yet the group already has a replica in domain A: t2 goes to domain B.
    state = _aa_state({"t1": [part(0, [2])], "other": [part(0, [3], bytes_in=50 * MB)]})
    order = LoadOrder(state)
    placed = place_new_partition(state, order, "t2", 1, GB, MB, MB)
    assert placed == (4,)


def test_joining_a_group_moves_nothing() -> None:
    # All group members sit on broker 1; a healthy cluster gives a noop, not a repair. (The
    # cluster is uneven too: even spread is off here, it has its own tests.)
    brokers = [broker(b, f"/r{b}") for b in (1, 2, 3, 4)]
    snap = make(
        brokers,
        {f"t{i}": [part(0, [1, 2])] for i in range(4)},
        anti_affinity_groups=[{"name": "g", "topics": ["t0", "t1", "t2", "t3"]}],
        policy={"even_spread": False},
    )
    assert decide(snap).outcome == "noop"


# -- isolation groups, capacity, max replicas, maintenance ---------------------------------


def _dead_six(**extra: Any) -> tuple[list[dict[str, Any]], set[int]]:
    alive = {1, 2, 3, 4, 5}
    return [broker(i, f"/r{i}", alive=i in alive) for i in range(1, 7)], alive


def test_isolation_group_primary_then_secondary() -> None:
    brokers, alive = _dead_six()
    groups = [{"name": "gold", "brokers": [1, 2, 6]}, {"name": "silver", "brokers": [5]}]
    iso = [{"name": "i", "topics": ["t"], "primary": "gold", "secondary": "silver"}]
    snap = make(
        brokers,
        {"t": [part(0, [1, 6], alive=alive), part(1, [2, 6], alive=alive)]},
        broker_groups=groups,
        isolation_groups=iso,
    )
    decision = decide(snap)
    assert decision.outcome == "act"
    targets = {tuple(a.to_dict()["to"]) for a in decision.actions}
    # t-0 gets broker 2 (primary); t-1 cannot use 1? it can: both 1 and 2 are primary.
    assert targets == {(1, 2), (2, 1)}


def test_isolation_group_falls_back_to_secondary_then_refuses() -> None:
    brokers, alive = _dead_six()
    groups = [{"name": "gold", "brokers": [1, 6]}, {"name": "silver", "brokers": [5]}]
    iso = [{"name": "i", "topics": ["t"], "primary": "gold", "secondary": "silver"}]
    snap = make(
        brokers, {"t": [part(0, [1, 6], alive=alive)]}, broker_groups=groups, isolation_groups=iso
    )
    decision = decide(snap)
    assert decision.actions[0].to_dict()["to"] == [1, 5]
    iso[0]["secondary"] = None
    snap = make(
        brokers, {"t": [part(0, [1, 6], alive=alive)]}, broker_groups=groups, isolation_groups=iso
    )
    decision = decide(snap)
    assert decision.outcome == "refuse"
    assert "isolation_group" in decision.reasons[0].message


def test_capacity_limit_blocks_a_target() -> None:
    brokers, alive = _dead_six()
    # Brokers 2..5 are near their disk limit (850 GB of 1000 GB); only broker 1 has room.
    for b in brokers[1:5]:
        b["disk_used_bytes"] = 845 * GB
    snap = make(brokers, {"t": [part(0, [6, 1], size=10 * GB, alive=alive)]})
    decision = decide(snap)
    assert decision.outcome == "refuse"
    assert "constraint: capacity" in decision.reasons[0].message
    brokers[4]["disk_used_bytes"] = 100 * GB
    decision = decide(make(brokers, {"t": [part(0, [6, 1], size=10 * GB, alive=alive)]}))
    assert decision.actions[0].to_dict()["to"] == [1, 5]


def test_reservations_spread_one_heal_over_targets() -> None:
    brokers, alive = _dead_six()
    # Four 30 MB/s partitions led by brokers 1-4; broker 5 is idle. Without reservations all
    # four would go to broker 5 (120 MB/s, over its 80 MB/s limit).
    parts = [part(n, [6, n + 1], bytes_in=30 * MB, bytes_out=0, alive=alive) for n in range(4)]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act", decision.render_text()
    for load in decision.loads_after.values():
        assert load.network_in <= 80 * MB
    targets = [a.to_dict()["to"][1] for a in decision.actions]
    assert targets.count(5) <= 2 and len(set(targets)) >= 3


def test_max_replicas_per_broker() -> None:
    brokers, alive = _dead_six()
    parts = [part(n, [6, 1, 2], alive=alive) for n in range(2)]
    extra = [part(n, [3, 4, 5]) for n in range(3)]
    policy = {"max_replicas_per_broker": 3}
    decision = decide(make(brokers, {"t": parts, "u": extra}, policy=policy))
    assert decision.outcome == "refuse"
    assert "max_replicas_per_broker" in decision.reasons[0].message
    policy = {"max_replicas_per_broker": 5}
    decision = decide(make(brokers, {"t": parts, "u": extra}, policy=policy))
    assert decision.outcome == "act"


def test_maintenance_domain_is_neither_source_nor_target() -> None:
    brokers, alive = _dead_six()
    domains = [{"name": "blue", "brokers": [1, 2]}, {"name": "green", "brokers": [3, 4, 5, 6]}]
    snap = make(
        brokers,
        {"t": [part(n, [6, 3], alive=alive) for n in range(4)]},
        failure_domains=domains,
        maintenance_domains=["blue"],
    )
    decision = decide(snap)
    assert decision.outcome == "act"
    for action in decision.actions:
        assert not {1, 2} & set(action.to_dict()["to"])


def test_failure_domains_default_to_racks() -> None:
    brokers, _ = _dead_six()
    state = ClusterState(make(brokers, {}))
    assert state.domain[3] == "/r3"
    state = ClusterState(make(brokers, {}, failure_domains=[{"name": "d", "brokers": [3]}]))
    assert state.domain[3] == "d" and state.domain[4] == "/r4"


def test_placement_check_reports_existing_violations() -> None:
    brokers = [broker(b, f"/r{(b - 1) % 3 + 1}") for b in range(1, 7)]
    snap = make(
        brokers,
        {"t": [part(0, [1, 4, 2]), part(1, [1, 2, 3])], "iso": [part(0, [1, 2, 3])]},
        broker_groups=[{"name": "g", "brokers": [1, 2]}],
        isolation_groups=[{"name": "i", "topics": ["iso"], "primary": "g"}],
    )
    problems = check_existing(ClusterState(snap))
    assert problems == [
        "t:0: replicas [1, 4, 2] share a rack",
        "iso:0: brokers [3] are outside its isolation group",
    ]
    # Repair is off by default: decided, and told as what it would do (issue 39.2).
    decision = decide(snap)
    assert decision.outcome == "noop"
    assert decision.would_act == "disabled by policy.goals.repair_placement"
    assert "repair placement: 1 replica moves" in decision.summary
    left = [r.message for r in decision.reasons if r.code == "placement_violation"]
    assert left and left[0].startswith("1 left for later or unfixable")


def test_placement_check_reports_enforced_min_racks_shortfall() -> None:
    brokers = [broker(b, f"/r{(b - 1) % 2 + 1}") for b in range(1, 5)]
    policy = {"enforce_min_racks": True, "min_racks": 3}
    snap = make(brokers, {"t": [part(0, [1, 2, 3]), part(1, [1, 2])]}, policy=policy)
    assert check_existing(ClusterState(snap)) == [
        "t:0: replicas [1, 2, 3] span 2 racks, min_racks requires 3"
    ]


def test_a_heal_blocked_by_a_cordon_says_so_not_capacity() -> None:
    # Found by the 60-minute soak: the isolation group's last free broker was cordoned by a
    # done drain, and the refusal blamed headroom ("constraint: capacity").
    brokers, alive = _dead_six()
    brokers[4]["cordoned"] = True  # broker 5
    groups = [{"name": "gold", "brokers": [1, 5, 6]}]
    iso = [{"name": "i", "topics": ["t"], "primary": "gold"}]
    snap = make(
        brokers, {"t": [part(0, [1, 6], alive=alive)]}, broker_groups=groups, isolation_groups=iso
    )
    decision = decide(snap)
    assert decision.outcome == "refuse"
    [message] = {r.message for r in decision.reasons if "t:0" in r.message}
    assert "every eligible broker is kept out of new replicas (broker 5 cordoned by a drain)" in (
        message
    ), message
    assert "capacity" not in message, message
