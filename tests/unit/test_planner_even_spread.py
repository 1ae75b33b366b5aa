"""Even spread: with no broker over a limit, an uneven cluster (a new empty broker) is evened
out with the fewest bytes, within every constraint - and never while a broker is dead or just
back, moves are running or partitions are catching up."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, MB, NOW, broker, make, part

from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide
from manager.analyzer.spread import out_of_band
from manager.model.decision import Decision
from manager.model.moves import Move
from manager.model.snapshot import Snapshot

QUIET = 10 * 1000  # bytes/s per partition: far below any network band


def _cluster(
    *, new_broker: bool = True, policy: dict[str, Any] | None = None, **kw: Any
) -> Snapshot:
    """Brokers 1-4 on racks r1/r2 carry 24 partitions (rf 2, sizes 1-24 GB); broker 5 (r1)
    was just added and holds nothing."""
    ids = [1, 2, 3, 4, 5] if new_broker else [1, 2, 3, 4]
    brokers = [broker(b, f"/r{1 + b % 2}") for b in ids]
    parts = [
        part(n, [1 + n % 4, 1 + (n + 1) % 4], size=(n + 1) * GB, bytes_in=QUIET, bytes_out=QUIET)
        for n in range(24)
    ]
    return make(brokers, {"t": parts}, policy=policy, **kw)


def _moves(decision: Decision) -> list[Move]:
    return [a for a in decision.actions if isinstance(a, Move)]


def test_a_new_empty_broker_is_filled_until_the_cluster_is_even() -> None:
    snap = _cluster()
    decision = decide(snap)
    assert decision.outcome == "act" and decision.kind == "balance", decision.summary
    assert decision.summary.startswith("even out an uneven cluster")
    messages = [r.message for r in decision.reasons if r.code == "uneven_spread"]
    assert any("broker 5 at 0.00x the average" in m for m in messages), messages
    moves = _moves(decision)
    assert moves and all(5 in m.target and 5 not in m.before for m in moves)
    after = decision.loads_after
    disks = [after[b].disk_bytes for b in (1, 2, 3, 4, 5)]
    average = sum(disks) / 5
    # Within the band now, and no more bytes than bring broker 5 to the average moved.
    assert after[5].disk_bytes >= average / 1.2 - 0.02 * 1000 * GB
    assert decision.bytes_to_move <= average + 24 * GB
    assert out_of_band_after(snap, decision) == []


def out_of_band_after(snap: Snapshot, decision: Decision) -> list[Any]:
    state = ClusterState(snap)
    index = {(state.topic[p], state.number[p]): p for p in range(state.partition_count)}
    for m in _moves(decision):
        p = index[(m.topic, m.partition)]
        (old,) = set(m.before) - set(m.target)
        (new,) = set(m.target) - set(m.before)
        state.move_replica(p, old, new)
    return [o for o in out_of_band(state, 1.2) if o.dimension != "network"]


def test_the_moves_keep_racks_apart() -> None:
    decision = decide(_cluster())
    racks = {1: "/r2", 2: "/r1", 3: "/r2", 4: "/r1", 5: "/r2"}
    for m in _moves(decision):
        assert len({racks[b] for b in m.target}) == 2, m


def test_of_two_brokers_with_empty_disks_the_one_with_fewer_replicas_receives() -> None:
    # Brokers 1 and 5 both hold no bytes, broker 1 six empty replicas, broker 5 none; broker
    # 4 is the fullest. Broker 1 could take a seventh within the band, but it receives nothing.
    brokers = [broker(b, "/r0") for b in range(1, 6)]
    sizes = {1: 0, 2: 2 * GB, 3: 2 * GB, 4: 10 * GB}
    parts = [
        part(6 * (b - 1) + n, [b], size=size, bytes_in=QUIET, bytes_out=QUIET)
        for b, size in sizes.items()
        for n in range(6)
    ]
    decision = decide(make(brokers, {"t": parts}, policy={"max_moves_per_cycle": 1}))
    assert decision.summary.startswith("even out an uneven cluster"), decision.summary
    (move,) = _moves(decision)
    assert set(move.target) - set(move.before) == {5}


def test_an_even_cluster_is_left_alone() -> None:
    decision = decide(_cluster(new_broker=False))
    assert decision.outcome == "noop", decision.summary
    assert "uneven_spread" not in {r.code for r in decision.reasons}


def test_a_cluster_one_replica_off_is_within_the_slack() -> None:
    brokers = [broker(b, f"/r{b}") for b in (1, 2, 3)]
    parts = [part(n, [1 + n % 3], size=GB // 10, bytes_in=QUIET, bytes_out=QUIET) for n in range(4)]
    decision = decide(make(brokers, {"t": parts}))  # 2, 1, 1 replicas
    assert decision.outcome == "noop", decision.summary


def test_off_by_configuration() -> None:
    decision = decide(_cluster(policy={"even_spread": False}))
    assert decision.outcome == "noop", decision.summary


def test_a_looser_threshold_leaves_a_slightly_uneven_cluster_alone() -> None:
    assert decide(_cluster(policy={"even_spread_threshold": 10.0})).outcome == "noop"


def test_never_while_a_broker_is_dead() -> None:
    data: dict[str, Any] = {"brokers_extra": broker(6, "/r1", alive=False)}
    snap = _cluster()
    brokers = [b.model_dump() for b in snap.brokers] + [data["brokers_extra"]]
    parts = [p.model_dump() for p in snap.topics[0].partitions]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "noop", decision.summary
    assert "hold no replicas" in decision.summary


def test_never_while_a_broker_is_just_back() -> None:
    snap = _cluster()
    brokers = [b.model_dump() for b in snap.brokers]
    brokers[0]["returned_at_ms"] = NOW - 60_000  # broker 1 came back a minute ago
    decision = decide(make(brokers, {"t": [p.model_dump() for p in snap.topics[0].partitions]}))
    assert decision.outcome == "noop", decision.summary


def test_never_while_a_reassignment_runs_or_a_partition_catches_up() -> None:
    snap = _cluster()
    parts = [p.model_dump() for p in snap.topics[0].partitions]
    brokers = [b.model_dump() for b in snap.brokers]
    running = [
        {
            "topic": "t",
            "partition": 0,
            "adding_replicas": [2],
            "removing_replicas": [],
            "started_by_kmedic": False,
        }
    ]
    # An operator's reassignment is a gate of its own; either way nothing is evened out.
    assert decide(make(brokers, {"t": parts}, reassignments=running)).outcome != "act"
    parts[3]["isr"] = parts[3]["isr"][:1]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome != "act", decision.summary


def test_the_move_budget_truncates_the_plan_and_says_so() -> None:
    decision = decide(_cluster(policy={"max_moves_per_cycle": 2}))
    assert decision.outcome == "act"
    assert len(_moves(decision)) == 2
    assert "budget_truncated" in {r.code for r in decision.reasons}


def test_a_standby_plans_nothing() -> None:
    lead = {"holder": "m2", "epoch": 2, "current_epoch": 3, "is_leader": False}
    assert decide(_cluster(leadership=lead)).outcome == "noop"


def test_network_alone_moves_leadership_first() -> None:
    brokers = [broker(b, f"/r{b}") for b in (1, 2, 3)]
    # Broker 1 leads every partition: 30 MB/s out against 0 on the others.
    parts = [
        part(n, [1, 2 + n % 2], size=GB // 10, bytes_in=MB, bytes_out=10 * MB) for n in range(6)
    ]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act", decision.summary
    assert decision.summary.startswith("even out network load")
    assert "uneven_spread" in {r.code for r in decision.reasons}
    assert decision.bytes_to_move == 0  # leadership only


# -- properties over random clusters ----------------------------------------------------------

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def uneven_clusters(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(3, 8))
    racks = draw(st.integers(1, 3))
    brokers = [broker(b, f"/r{b % racks}") for b in range(1, n + 1)]
    crowded = draw(st.integers(2, n))  # partitions live only on brokers 1..crowded
    parts = []
    for p in range(draw(st.integers(1, 30))):
        rf = draw(st.integers(1, min(3, crowded)))
        reps = list(draw(st.permutations(range(1, crowded + 1)))[:rf])
        parts.append(
            part(p, reps, size=draw(st.integers(0, 40)) * GB, bytes_in=QUIET, bytes_out=QUIET)
        )
    policy = {
        "enforce_min_racks": draw(st.booleans()),
        "max_replicas_per_broker": draw(st.none() | st.integers(3, 20)),
        "max_moves_per_cycle": draw(st.integers(1, 50)),
    }
    return make(brokers, {"t": parts}, policy=policy)


@SETTINGS
@given(uneven_clusters())
def test_even_spread_moves_only_narrow_gaps_and_repeat_exactly(snap: Snapshot) -> None:
    decision = decide(snap)
    assert decide(snap) == decision
    if decision.kind != "balance" or decision.outcome != "act":
        return
    before, after = decision.loads_before, decision.loads_after
    moves = _moves(decision)
    assert len(moves) <= snap.policy.max_moves_per_cycle
    for m in moves:
        assert len(m.target) == len(m.before)
    # Every receiver gained and every donor lost; nobody ends fuller than the fullest was.
    fullest = max(load.disk_bytes for load in before.values())
    assert all(load.disk_bytes <= fullest for load in after.values())
    most = max(load.replicas for load in before.values())
    assert all(load.replicas <= most for load in after.values())
