"""Heal: only dead-broker replicas move, leader kept first, all or nothing, bytes accounted."""

from __future__ import annotations

from planner_fixtures import GB, broker, make, part

from manager.analyzer.heal import plan_heal
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide

ALIVE = {1, 2, 3, 4, 5}


def _brokers() -> list[dict[str, object]]:
    return [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE) for i in range(1, 7)]


def test_only_dead_replicas_move_and_leader_goes_first() -> None:
    parts = [
        part(0, [6, 1, 2], size=3 * GB, alive=ALIVE),  # leader 1 after 6 died
        part(1, [1, 6, 2], size=2 * GB, alive=ALIVE),
        part(2, [1, 2, 3], size=GB, alive=ALIVE),  # untouched
    ]
    decision = decide(make(_brokers(), {"t": parts}))
    assert decision.outcome == "act" and decision.kind == "heal"
    moves = {a.to_dict()["partition"]: a.to_dict() for a in decision.actions}
    assert set(moves) == {0, 1}
    for move in moves.values():
        kept = [b for b in move["from"] if b != 6]
        assert [b for b in move["to"] if b in kept] == kept
        assert 6 not in move["to"]
        assert move["to"][0] == 1  # the current leader stays preferred
    assert decision.bytes_to_move == 5 * GB


def test_heal_orders_partitions_largest_first() -> None:
    parts = [part(n, [6, 1], size=(n + 1) * GB, alive=ALIVE) for n in range(4)]
    decision = decide(make(_brokers(), {"t": parts}))
    assert [a.to_dict()["partition"] for a in decision.actions] == [3, 2, 1, 0]


def test_heal_bytes_equal_the_dead_brokers_replica_bytes() -> None:
    parts = [part(n, [6, 1 + n % 5], size=(n + 1) * GB, alive=ALIVE) for n in range(7)]
    snap = make(_brokers(), {"t": parts})
    dead_bytes = sum(p["size_bytes"] for p in parts)
    decision = decide(snap)
    assert decision.bytes_to_move == dead_bytes
    assert decision.loads_after[6].replicas == 0
    assert decision.loads_after[6].disk_bytes == 0


def test_all_or_nothing() -> None:
    # Partition 1 is isolated to brokers {1, 6}: nowhere to go, so partition 0 does not move.
    parts = {"ok": [part(0, [6, 1], alive=ALIVE)], "stuck": [part(0, [6, 1], alive=ALIVE)]}
    snap = make(
        _brokers(),
        parts,
        broker_groups=[{"name": "tiny", "brokers": [1, 6]}],
        isolation_groups=[{"name": "i", "topics": ["stuck"], "primary": "tiny"}],
    )
    decision = decide(snap)
    assert decision.outcome == "refuse"
    assert decision.actions == ()
    assert decision.bytes_to_move == 0
    assert "stuck:0" in decision.reasons[0].message
    state = ClusterState(snap)
    plan = plan_heal(state)
    assert plan.moves == [] and len(plan.blocked) == 1


def test_partition_without_live_leader_refuses() -> None:
    parts = [part(0, [6], alive=ALIVE)]
    decision = decide(make(_brokers(), {"t": parts}))
    assert decision.outcome == "refuse"
    assert decision.reasons[0].code == "no_live_replica"


def test_two_dead_replicas_of_one_partition() -> None:
    alive = {1, 2, 3, 4}
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in alive) for i in range(1, 7)]
    decision = decide(make(brokers, {"t": [part(0, [5, 6, 1], alive=alive)]}))
    assert decision.outcome == "act"
    to = decision.actions[0].to_dict()["to"]
    assert to[0] == 1 and len(set(to)) == 3 and not {5, 6} & set(to)
