"""`kmedic decommission` in the planner: a drain while the brokers hold replicas; then a noop
asking for them to be stopped; once stopped, one telling the daemon to unregister them; and a
refusal while a reassignment in progress still names them."""

from __future__ import annotations

from typing import Any

from planner_fixtures import GB, NOW, broker, make, part

from manager.analyzer.planner import decide
from manager.model.moves import Move
from manager.model.snapshot import Snapshot

RACKS = {1: "/r1", 2: "/r2", 3: "/r1", 4: "/r2", 5: "/r1", 6: "/r2"}
REQUEST = {"id": "r-1", "kind": "decommission", "brokers": [4], "created_ms": NOW - 60_000}


def cluster(*, on_four: bool, alive: bool = True, **extra: Any) -> Snapshot:
    brokers = [broker(b, RACKS[b], alive=alive or b != 4) for b in RACKS]
    live = {b for b in RACKS if alive or b != 4}
    pairs = [(1, 4), (4, 3), (5, 6)] if on_four else [(1, 2), (2, 3), (5, 6)]
    parts = [part(n, list(p), size=GB, alive=live) for n, p in enumerate(pairs)]
    return make(brokers, {"t": parts}, policy={"even_spread": False}, requests=[REQUEST], **extra)


def test_a_broker_with_replicas_is_drained_first() -> None:
    decision = decide(cluster(on_four=True))
    assert decision.outcome == "act" and decision.request == "r-1", decision.summary
    assert decision.summary.startswith("request r-1 (decommission brokers 4): 2 partitions")
    moves = [a for a in decision.actions if isinstance(a, Move)]
    assert {m.partition for m in moves} == {0, 1}
    assert all(4 not in m.target for m in moves)
    assert decision.unregister == ()


def test_an_empty_running_broker_waits_to_be_stopped() -> None:
    decision = decide(cluster(on_four=False))
    assert decision.outcome == "noop" and not decision.request_done
    assert decision.summary == (
        "request r-1 (decommission brokers 4): the brokers hold nothing; stop [4] to have them "
        "unregistered"
    )
    assert decision.unregister == ()


def test_an_empty_stopped_broker_is_unregistered() -> None:
    decision = decide(cluster(on_four=False, alive=False))
    assert decision.outcome == "noop" and decision.unregister == (4,), decision.summary
    assert "are stopped: unregistering them" in decision.summary


def test_a_reassignment_naming_the_broker_refuses_until_it_ends() -> None:
    moving = {"topic": "t", "partition": 0, "adding_replicas": [4], "removing_replicas": [1]}
    snap = cluster(
        on_four=False, alive=False, reassignments=[moving | {"started_by_kmedic": False}]
    )
    decision = decide(snap)
    assert decision.outcome == "refuse" and decision.unregister == ()
    said = " ".join(r.message for r in decision.reasons)
    assert "reassignments in progress name its brokers: t:0" in said, said


def test_a_decommissioned_broker_takes_no_replica_from_a_heal() -> None:
    brokers = [broker(b, RACKS[b], alive=b != 2) for b in RACKS]
    parts = [part(0, [2, 1], size=GB, alive={1, 3, 4, 5, 6})]
    snap = make(brokers, {"t": parts}, policy={"even_spread": False}, requests=[REQUEST])
    decision = decide(snap)
    moves = [a for a in decision.actions if isinstance(a, Move)]
    assert moves and all(4 not in m.target for m in moves), decision.summary


def test_a_broker_stopped_a_moment_ago_is_unregistered_without_a_grace_period() -> None:
    """It holds nothing: there is nothing to wait for, as there would be for a broker that may
    come back with its data."""
    snap = cluster(on_four=False, alive=False)
    just = [
        b.model_copy(update={"dead_since_ms": NOW - 1_000}) if b.id == 4 else b
        for b in snap.brokers
    ]
    decision = decide(snap.model_copy(update={"brokers": tuple(just)}))
    assert decision.unregister == (4,), decision.summary


def test_the_operator_requests_switch_holds_the_unregistration_too() -> None:
    snap = cluster(on_four=False, alive=False)
    off = snap.model_copy(
        update={
            "policy": snap.policy.model_copy(
                update={"goals": snap.policy.goals.model_copy(update={"operator_requests": False})}
            )
        }
    )
    # Issue 39.2: decided like any switched-off plan - a would_act naming the switch, with
    # the brokers it would unregister (the daemon unregisters nothing held back).
    decision = decide(off)
    assert decision.outcome == "noop"
    assert decision.would_act == "disabled by policy.goals.operator_requests"
    assert decision.disabled_by == ("operator_requests",)
    assert decision.unregister == (4,)
    assert decision.summary.startswith(
        "would act (disabled by policy.goals.operator_requests): request"
    )
    assert decision.summary.endswith("the brokers hold nothing and are stopped: unregistering them")
