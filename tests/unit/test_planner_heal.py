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


def test_a_partial_heal_heals_what_it_can_and_refuses_the_rest_by_name() -> None:
    # Topic "stuck" is isolated to brokers {1, 6}: nowhere to go. "ok" is healed all the same;
    # "stuck:0" is refused by name (until the goals took one shape, one stuck partition kept
    # every other one under-replicated).
    parts = {"ok": [part(0, [6, 1], alive=ALIVE)], "stuck": [part(0, [6, 1], alive=ALIVE)]}
    snap = make(
        _brokers(),
        parts,
        broker_groups=[{"name": "tiny", "brokers": [1, 6]}],
        isolation_groups=[{"name": "i", "topics": ["stuck"], "primary": "tiny"}],
    )
    decision = decide(snap)
    assert decision.outcome == "act" and decision.kind == "heal"
    assert [(a.topic, a.partition) for a in decision.actions] == [("ok", 0)]
    assert decision.bytes_to_move == snap.topics[0].partitions[0].size_bytes
    assert "1 partitions cannot be healed" in decision.summary
    assert [r.code for r in decision.unhealed] == ["plan_violates_constraints"]
    assert "stuck:0" in decision.unhealed[0].message
    assert "isolation" in decision.unhealed[0].message
    assert decision.to_dict()["unhealed"] == [r.to_dict() for r in decision.unhealed]
    assert "left unhealed (refused, paged):" in decision.render_text()
    # The planner itself: partial on request; all or nothing otherwise (a drain).
    assert len(plan_heal(ClusterState(snap), partial=True).moves) == 1
    plan = plan_heal(ClusterState(snap))
    assert plan.moves == [] and len(plan.blocked) == 1


def test_a_partition_with_no_live_replica_beside_healable_ones() -> None:
    # "gone:0" lived only on dead broker 6: nothing to copy from. "ok:0" is healed.
    parts = {"ok": [part(0, [6, 1], alive=ALIVE)], "gone": [part(0, [6], alive=ALIVE)]}
    decision = decide(make(_brokers(), parts))
    assert decision.outcome == "act"
    assert [(a.topic, a.partition) for a in decision.actions] == [("ok", 0)]
    assert [r.code for r in decision.unhealed] == ["no_live_replica"]
    assert decision.unhealed[0].message.startswith("gone:0")


def test_gates_still_stop_a_partial_heal() -> None:
    # Too many dead brokers: nothing is healed, not even what could be placed.
    parts = {"ok": [part(0, [6, 1], alive=ALIVE)], "gone": [part(0, [6], alive=ALIVE)]}
    decision = decide(make(_brokers(), parts, policy={"max_dead_brokers": 0}))
    assert decision.outcome == "refuse" and decision.actions == () and decision.unhealed == ()
    codes = [r.code for r in decision.reasons]
    assert codes[0] == "too_many_dead_brokers" and "no_live_replica" in codes


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


def test_a_broker_a_move_stalled_on_receives_no_replica_of_the_heal() -> None:
    # The watchdog cancelled a move to broker 4: the replan heals onto the others only.
    brokers = [
        broker(
            i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE, **({"stalled_at_ms": 1} if i == 4 else {})
        )
        for i in range(1, 7)
    ]
    # Racks /r3, /r2, /r3: the replica lost with broker 6 goes to /r1, broker 1 or 4.
    parts = [part(n, [6, 2, 3], size=GB, alive=ALIVE) for n in range(6)]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act" and decision.kind == "heal"
    assert len(decision.actions) >= 6
    assert all(4 not in a.to_dict()["to"] for a in decision.actions)
    # The same cluster without the mark uses broker 4 (the test would pass vacuously else).
    plain = decide(make(_brokers(), {"t": parts}))
    assert any(4 in a.to_dict()["to"] for a in plain.actions)


def test_a_partition_led_by_a_broker_a_move_stalled_on_is_left_for_later_with_why() -> None:
    # Every copy comes from the leader: a move to anywhere would stall the same way.
    brokers = [
        broker(
            i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE, **({"stalled_at_ms": 1} if i == 2 else {})
        )
        for i in range(1, 7)
    ]
    parts = [part(0, [2, 6], size=GB, alive=ALIVE), part(1, [1, 6], size=GB, alive=ALIVE)]
    decision = decide(make(brokers, {"t": parts}))
    assert [a.to_dict()["partition"] for a in decision.actions] == [1]
    [why] = decision.unhealed
    assert why.code == "plan_violates_constraints"
    assert "t:0 is led by broker 2, on which a move made no progress" in why.message
