"""Stale loads (the Spark job down) hold back balancing only. With nothing to balance they
refuse nothing: a cluster at rest is a noop that says balancing waits (the cycle after a heal
with the job stopped refused stale_load_data and kept kmedic_refusing_to_heal at 1)."""

from __future__ import annotations

from planner_fixtures import GB, broker, make, part

from manager.analyzer.health import alerts_for
from manager.analyzer.planner import decide

RACKS = {1: "/r1", 2: "/r2", 3: "/r1", 4: "/r2"}


def _cluster(
    *, dead: int | None = None, hot: bool = False, own_move: bool = False, leaderless: bool = False
) -> object:
    brokers = [broker(b, RACKS[b], alive=b != dead) for b in RACKS]
    size = 450 * GB if hot else GB  # two on a broker put it over its disk limit (850 GB)
    pairs = [(1, 2), (2, 3), (3, 4), (4, 1)]  # one replica per rack
    parts = [part(n, list(pairs[n]), size=size, valid=False) for n in range(4)]
    extra = {}
    if own_move:
        extra["reassignments"] = [
            {"topic": "t", "partition": 0, "adding_replicas": [], "removing_replicas": []}
            | {"started_by_kmedic": True}
        ]
    if leaderless:
        extra["quorum"] = {"state": "leaderless", "error": "no quorum leader answered"}
    return make(brokers, {"t": parts}, policy={"even_spread": False}, **extra)


def test_a_cluster_at_rest_with_stale_loads_is_a_noop() -> None:
    decision = decide(_cluster())  # type: ignore[arg-type]
    assert decision.outcome == "noop", decision.summary
    assert decision.summary == "nothing to heal; balancing waits for fresh loads"
    assert [r.code for r in decision.reasons] == ["stale_load_data"]


def test_a_dead_broker_that_holds_nothing_with_stale_loads_is_a_noop() -> None:
    brokers = [broker(b, RACKS[b], alive=b != 4) for b in RACKS]
    parts = [part(n, [1, 2], valid=False) for n in range(2)]
    decision = decide(make(brokers, {"t": parts}, policy={"even_spread": False}))
    assert decision.outcome == "noop", decision.summary


def test_own_moves_running_with_stale_loads_is_a_noop() -> None:
    decision = decide(_cluster(own_move=True))  # type: ignore[arg-type]
    assert decision.outcome == "noop"
    assert [r.code for r in decision.reasons] == ["own_reassignment_in_progress"]


def test_a_broker_over_its_limit_with_stale_loads_is_still_refused() -> None:
    decision = decide(_cluster(hot=True))  # type: ignore[arg-type]
    assert decision.outcome == "refuse" and decision.kind == "balance"
    assert "stale_load_data" in {r.code for r in decision.reasons}


def test_stale_loads_beside_a_gate_that_holds_are_no_reason_and_page_nobody() -> None:
    """Found by CI: a quorum election at rest refused for quorum_without_leader (its alert held
    for the blind bound) and for a broker whose agent had not reported yet, which raised
    refused:stale_load_data at once - a page for loads no balance was waiting on."""
    for own_move in (False, True):
        decision = decide(_cluster(own_move=own_move, leaderless=True))  # type: ignore[arg-type]
        assert decision.outcome == "refuse", decision.summary
        assert [r.code for r in decision.reasons] == ["quorum_without_leader"]
        assert list(alerts_for(decision, audit_on_failover=False)) == [
            "refused:quorum_without_leader"
        ]


def test_stale_loads_beside_a_gate_still_hold_a_broker_over_its_limit() -> None:
    decision = decide(_cluster(hot=True, leaderless=True))  # type: ignore[arg-type]
    assert decision.outcome == "refuse"
    assert {"stale_load_data", "quorum_without_leader"} <= {r.code for r in decision.reasons}
