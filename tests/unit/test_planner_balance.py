"""Balance: leadership first, replicas second, never pushing another broker over its limit."""

from __future__ import annotations

from typing import Any

from planner_fixtures import GB, MB, broker, make, part

from manager.analyzer.balance import plan_balance
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide


def _brokers(n: int = 6) -> list[dict[str, Any]]:
    return [broker(i, f"/r{(i - 1) % 3 + 1}") for i in range(1, n + 1)]


def _over(decision: Any) -> dict[int, Any]:
    return {
        b: load
        for b, load in decision.loads_after.items()
        if load.network_in > 80 * MB or load.network_out > 80 * MB or load.disk_bytes > 850 * GB
    }


def test_leadership_moves_come_first_and_move_no_data() -> None:
    # Broker 1 leads 10 partitions of 10 MB/s out: 100 MB/s > 80 MB/s limit.
    parts = [part(n, [1, 2 + n % 2, 4 + n % 2], bytes_in=MB, bytes_out=10 * MB) for n in range(10)]
    decision = decide(make(_brokers(), {"t": parts}, policy={"balance_threshold": 10.0}))
    assert decision.outcome == "act" and decision.kind == "balance"
    kinds = [a.to_dict()["type"] for a in decision.actions]
    assert "elect_preferred_leader" in kinds
    assert decision.bytes_to_move == 0
    assert decision.loads_after[1].network_out <= 80 * MB
    assert not _over(decision)
    # Each election follows the reorder that makes its new leader preferred.
    for i, action in enumerate(decision.actions):
        if action.to_dict()["type"] == "elect_preferred_leader":
            before = decision.actions[i - 1].to_dict()
            assert before["type"] == "reassign"
            assert before["to"][0] == action.to_dict()["leader"]
            assert sorted(before["to"]) == sorted(before["from"])


def test_replica_moves_when_leadership_cannot_help() -> None:
    # Broker 1's network in is over its limit: only moving replicas sheds bytes in.
    parts = [part(n, [2 + n % 2, 1], bytes_in=9 * MB, bytes_out=0, size=GB) for n in range(10)]
    parts += [part(10, [2, 1], bytes_in=9 * MB, bytes_out=0, size=50 * GB)]
    decision = decide(make(_brokers(), {"t": parts}, policy={"balance_threshold": 10.0}))
    assert decision.outcome == "act"
    moved = [a.to_dict() for a in decision.actions]
    assert moved and all(a["type"] == "reassign" for a in moved)
    assert all(1 in a["from"] and 1 not in a["to"] for a in moved)
    assert decision.loads_after[1].network_in <= 80 * MB
    # 99 MB/s in, 19 over: three 9 MB/s moves of 1 GB each; never the 50 GB partition.
    assert decision.bytes_to_move == 3 * GB
    assert all(a["partition"] != 10 for a in moved)
    assert not _over(decision)


def test_disk_over_limit_moves_the_fewest_bytes() -> None:
    brokers = _brokers()
    brokers[0]["disk_used_bytes"] = 870 * GB  # limit 850 GB: 20 GB over
    parts = [
        part(n, [2 + n % 4, 1], size=(n + 1) * 5 * GB, bytes_in=0, bytes_out=0) for n in range(8)
    ]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act"
    assert decision.loads_after[1].disk_bytes <= 850 * GB
    assert decision.bytes_to_move == 20 * GB


def test_never_pushes_another_broker_over() -> None:
    brokers = _brokers(4)
    parts = [part(n, [1, 2], bytes_in=25 * MB, bytes_out=0) for n in range(4)]
    parts += [part(4, [3, 4], bytes_in=60 * MB, bytes_out=0)]
    decision = decide(make(brokers, {"t": parts}))
    # Brokers 1 and 2 carry 100 MB/s in; 3 and 4 already carry 60 MB/s: any move overloads.
    assert decision.outcome == "refuse"
    assert decision.reasons[0].code == "balance_infeasible"
    assert "broker 1" in decision.reasons[0].message or "1 (" in decision.reasons[0].message


def test_partial_balance_acts_and_says_what_is_left() -> None:
    brokers = _brokers(4)
    parts = [part(n, [1, 2], bytes_in=25 * MB, bytes_out=0) for n in range(4)]
    parts += [part(4, [3, 4], bytes_in=40 * MB, bytes_out=0)]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act"
    assert not [b for b in (3, 4) if decision.loads_after[b].network_in > 80 * MB]


def test_budget_truncates_balance() -> None:
    parts = [part(n, [1, 2 + n % 2, 4 + n % 2], bytes_in=MB, bytes_out=10 * MB) for n in range(10)]
    decision = decide(
        make(_brokers(), {"t": parts}, policy={"max_moves_per_cycle": 1, "balance_threshold": 10})
    )
    assert decision.outcome == "act"
    assert sum(a.to_dict()["type"] == "elect_preferred_leader" for a in decision.actions) == 1
    assert {r.code for r in decision.reasons} >= {"budget_truncated", "limits_unresolved"}


def test_evenness_phase_reaches_threshold_when_possible() -> None:
    brokers = _brokers(6)
    # 90 MB/s in on broker 1 over 9 partitions; spread evenly is 30 MB/s per broker.
    parts = [part(n, [1, 2 + n % 5], bytes_in=10 * MB, bytes_out=0) for n in range(9)]
    state = ClusterState(make(brokers, {"t": parts}))
    plan = plan_balance(state, max_moves=100)
    assert plan.busiest_ratio <= 1.10 + 1e-9
    assert not plan.still_over


def test_partitions_in_reassignment_or_out_of_sync_are_left_alone() -> None:
    parts = [part(n, [1, 2 + n % 2, 4 + n % 2], bytes_in=MB, bytes_out=10 * MB) for n in range(10)]
    parts[0]["isr"] = [1, 2]
    reassign = [{"topic": "t", "partition": 1, "started_by_kmedic": True}]
    snap = make(_brokers(), {"t": parts}, policy={"balance_threshold": 10.0})
    state = ClusterState(snap)
    plan = plan_balance(state, max_moves=100)
    moved = {m.p for m in plan.leader_moves} | {m.p for m in plan.replica_moves}
    assert 0 not in moved
    snap = make(_brokers(), {"t": parts}, reassignments=reassign)
    assert decide(snap).outcome in ("noop", "refuse")


def test_maintenance_brokers_do_not_take_leadership() -> None:
    parts = [part(n, [1, 2, 3], bytes_in=MB, bytes_out=10 * MB) for n in range(10)]
    domains = [{"name": "blue", "brokers": [2]}]
    decision = decide(
        make(
            _brokers(),
            {"t": parts},
            failure_domains=domains,
            maintenance_domains=["blue"],
            policy={"balance_threshold": 10.0},
        )
    )
    assert decision.outcome == "act"
    for a in decision.actions:
        d = a.to_dict()
        if d["type"] == "elect_preferred_leader":
            assert d["leader"] != 2
    assert decision.loads_after[2].network_out == 0
