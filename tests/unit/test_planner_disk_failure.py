"""A live broker that lost a log directory: Kafka reports its replicas there offline. The heal
moves exactly those replicas to other brokers at once (never back onto the same broker, where
Kafka would not recreate them before a restart), explains the under-replication instead of
refusing over it, and refuses when several brokers lose disks at once."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_fixtures import broker, make, part, unhealed_partitions

from manager.analyzer.health import health_facts
from manager.analyzer.planner import decide
from manager.model.decision import Decision
from manager.model.moves import Move
from manager.model.snapshot import Snapshot

RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1", 5: "/r2", 6: "/r3"}


def offline(n: int, replicas: list[int], lost: list[int], **kw: Any) -> dict[str, Any]:
    """Partition ``n`` whose copies on ``lost`` (live brokers) are offline: out of the ISR."""
    out = part(n, replicas, isr=[b for b in replicas if b not in lost], **kw)
    out["offline_replicas"] = lost
    return out


def _snap(parts: list[dict[str, Any]], **policy: Any) -> Snapshot:
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    return make(brokers, {"t": parts}, policy={"even_spread": False, **policy})


def _moves(decision: Decision) -> list[Move]:
    return [a for a in decision.actions if isinstance(a, Move)]


def test_offline_replicas_of_a_live_broker_move_to_other_brokers_at_once() -> None:
    parts = [
        offline(0, [1, 2, 3], [1]),
        offline(1, [2, 1, 6], [1]),
        part(2, [1, 5, 6]),  # broker 1's other directory still holds this one
    ]
    decision = decide(_snap(parts))
    assert decision.outcome == "act" and decision.kind == "heal", decision.summary
    assert "failed log directories on brokers 1" in decision.summary
    codes = {r.code for r in decision.reasons}
    assert "log_dir_failed" in codes and "unexplained_under_replication" not in codes
    moves = {(m.topic, m.partition): m for m in _moves(decision)}
    assert set(moves) == {("t", 0), ("t", 1)}
    for m in moves.values():
        (gone,) = set(m.before) - set(m.target)
        (new,) = set(m.target) - set(m.before)
        assert gone == 1 and new not in (1, *m.before)
        # A new rack for the replica that left rack /r1: broker 4, the other broker there.
        assert new == 4
    assert decision.bytes_to_move == 2 * parts[0]["size_bytes"]


def test_no_grace_period_applies_to_a_failed_directory() -> None:
    decision = decide(_snap([offline(0, [1, 2, 3], [1])], dead_grace_ms=3_600_000))
    assert decision.outcome == "act", decision.summary


def test_without_kafka_saying_offline_a_missing_replica_stays_unexplained() -> None:
    decision = decide(_snap([part(0, [1, 2, 3], isr=[2, 3])]))
    assert decision.outcome == "refuse"
    assert "unexplained_under_replication" in {r.code for r in decision.reasons}


def test_the_broker_that_lost_it_never_takes_it_back() -> None:
    # Two brokers: the only one outside the replica's partners is broker 1 itself, which
    # lost the copy; the heal refuses rather than put it back there.
    brokers = [broker(b, RACKS[b]) for b in (1, 2)]
    decision = decide(make(brokers, {"t": [offline(0, [1, 2], [1])]}))
    assert decision.outcome == "refuse", decision.summary
    assert not _moves(decision)
    assert any("no live broker outside its replica set" in r.message for r in decision.reasons)


def test_disks_failing_on_two_brokers_at_once_are_refused() -> None:
    parts = [offline(0, [1, 2, 3], [1]), offline(1, [2, 3, 4], [2])]
    decision = decide(_snap(parts))
    assert decision.outcome == "refuse"
    (reason,) = [r for r in decision.reasons if r.code == "too_many_failed_disks"]
    assert "brokers 1, 2" in reason.message and "max 1" in reason.message
    assert decide(_snap(parts, max_failed_disk_brokers=2)).outcome == "act"


def test_health_counts_them_as_explained() -> None:
    facts = health_facts(_snap([offline(0, [1, 2, 3], [1]), part(1, [1, 2, 3], isr=[1, 2])]))
    assert (facts.urp_explained, facts.urp_unexplained) == (1, 1)


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(3, 6))
    brokers = [broker(b, RACKS[b]) for b in range(1, n + 1)]
    failed = draw(st.integers(1, n))
    parts = []
    for p in range(draw(st.integers(1, 10))):
        rf = draw(st.integers(1, min(3, n)))
        reps = list(draw(st.permutations(range(1, n + 1)))[:rf])
        if failed in reps and len(reps) > 1 and draw(st.booleans()):
            parts.append(offline(p, reps, [failed], size=draw(st.integers(0, 5)) * 10**9))
        else:
            parts.append(part(p, reps, size=draw(st.integers(0, 5)) * 10**9))
    return make(brokers, {"t": parts}, policy={"even_spread": False})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_heal_replaces_exactly_the_offline_replicas(snap: Snapshot) -> None:
    decision = decide(snap)
    assert decide(snap) == decision
    lost = {
        (t.name, q.partition): set(q.offline_replicas) for t in snap.topics for q in t.partitions
    }
    if not any(lost.values()):
        return
    assert decision.outcome in ("act", "refuse"), decision.summary
    if decision.outcome == "refuse":
        return
    moved = {(m.topic, m.partition): m for m in _moves(decision)}
    # A partial heal: each partition with a lost replica is moved, or refused by name.
    unhealed = unhealed_partitions(decision)
    assert set(moved) | unhealed == {k for k, v in lost.items() if v}
    assert not set(moved) & unhealed
    for key, m in moved.items():
        assert set(m.before) - set(m.target) == lost[key]
        assert not (set(m.target) - set(m.before)) & lost[key]
        assert len(set(m.target)) == len(m.target) == len(m.before)
