"""Issue 39.6: a partition whose acks=all writes fail (live in-sync replicas below its topic's
min.insync.replicas) does not wait its dead broker's grace: its lost replicas are healed after
the shorter ``write_unavailable_grace_ms``, first, and the audit says so; the broker's other
replicas still wait, and every other gate still holds."""

from __future__ import annotations

import json
from typing import Any

from planner_fixtures import GB, NOW, broker, part, snapshot_dict

from manager.analyzer.health import alerts_for
from manager.analyzer.planner import decide
from manager.model.decision import Decision
from manager.model.moves import Move
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot

RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1", 5: "/r2", 6: "/r3"}
DEAD = 6
ALIVE = {1, 2, 3, 4, 5}


def _snap(
    dead_for_ms: int,
    *,
    policy: dict[str, Any] | None = None,
    strict_min_insync: int | None = 2,
    extra_dead: dict[int, int] | None = None,
) -> Snapshot:
    """Broker 6 dead for ``dead_for_ms``; topic ``strict`` (RF 2, min.insync.replicas 2) has
    lost a replica with it, topic ``relaxed`` (RF 3, min.insync.replicas 1) too."""
    dead = {DEAD: dead_for_ms, **(extra_dead or {})}
    brokers = [broker(b, RACKS[b], alive=b not in dead) for b in RACKS]
    for b in brokers:
        if b["id"] in dead:
            b["dead_since_ms"] = NOW - dead[b["id"]]
    alive = set(RACKS) - set(dead)
    strict = [part(n, [1 + n % 5, DEAD], alive=alive, size=GB) for n in range(3)]
    relaxed = [part(n, [DEAD, 1 + n % 5, 2 + n % 4], alive=alive, size=5 * GB) for n in range(3)]
    data = snapshot_dict(
        brokers,
        {"strict": strict, "relaxed": relaxed},
        policy={"dead_grace_ms": 600_000, "even_spread": False, **(policy or {})},
    )
    data["topics"][0]["min_insync_replicas"] = strict_min_insync
    data["topics"][1]["min_insync_replicas"] = 1
    return parse_snapshot(json.dumps(data))


def _moved(decision: Decision) -> set[tuple[str, int]]:
    return {(a.topic, a.partition) for a in decision.actions if isinstance(a, Move)}


def test_within_the_short_grace_everything_waits_and_the_wait_says_writes_fail() -> None:
    decision = decide(_snap(20_000))
    assert decision.outcome == "wait" and decision.actions == ()
    message = decision.reasons[0].message
    assert "dead 20 s of its 600 s grace period (580 s left)" in message
    assert "3 of its partitions are under min.insync.replicas (acks=all writes fail)" in message
    assert "move once it has been dead 60 s (40 s left)" in message
    assert alerts_for(decision, audit_on_failover=False) == {}


def test_past_the_short_grace_only_the_write_unavailable_partitions_heal() -> None:
    decision = decide(_snap(61_000))
    assert decision.outcome == "act" and decision.kind == "heal", decision.summary
    assert _moved(decision) == {("strict", 0), ("strict", 1), ("strict", 2)}
    for action in decision.actions:
        assert isinstance(action, Move) and DEAD not in action.target
    assert decision.summary.startswith(
        "restore writes: 3 partitions under min.insync.replicas reassigned off dead brokers 6"
    )
    why = [r for r in decision.reasons if r.code == "writes_unavailable"]
    assert len(why) == 1
    assert "strict:0 (1 of 2 in sync)" in why[0].message
    assert "move after 60 s, not the broker's 600 s grace period" in why[0].message
    assert alerts_for(decision, audit_on_failover=False) == {}


def test_past_the_broker_grace_the_heal_takes_everything_write_unavailable_first() -> None:
    decision = decide(_snap(601_000))
    assert decision.outcome == "act" and decision.kind == "heal"
    assert _moved(decision) == {("strict", n) for n in range(3)} | {
        ("relaxed", n) for n in range(3)
    }
    order = [(a.topic, a.partition) for a in decision.actions if isinstance(a, Move)]
    # The relaxed partitions are 5x larger: largest first alone would start with them.
    assert [t for t, _ in order[:3]] == ["strict"] * 3, order
    assert not any(r.code == "writes_unavailable" for r in decision.reasons)


def test_without_a_known_min_insync_nothing_heals_early() -> None:
    decision = decide(_snap(120_000, strict_min_insync=None))
    assert decision.outcome == "wait" and decision.actions == ()
    assert "min.insync.replicas" not in decision.reasons[0].message


def test_the_short_grace_is_configurable_and_at_the_broker_grace_it_is_off() -> None:
    assert decide(_snap(20_000, policy={"write_unavailable_grace_ms": 10_000})).outcome == "act"
    off = decide(_snap(120_000, policy={"write_unavailable_grace_ms": 600_000}))
    assert off.outcome == "wait" and off.actions == ()


def test_a_switched_off_heal_is_decided_and_not_carried_out() -> None:
    decision = decide(_snap(61_000, policy={"goals": {"heal_dead_brokers": False}}))
    assert decision.outcome == "noop" and decision.kind == "heal"
    assert decision.would_act == "disabled by policy.goals.heal_dead_brokers"
    assert decision.disabled_by == ("heal_dead_brokers",)
    assert _moved(decision) == {("strict", n) for n in range(3)}  # what it would have done


def test_too_many_dead_brokers_still_holds_it_back() -> None:
    """Two brokers at once past the policy's count: an outage until they stay dead past their
    grace, however many writes fail."""
    decision = decide(
        _snap(61_000, policy={"max_dead_brokers": 1}, extra_dead={5: 61_000}),
    )
    assert decision.outcome == "wait" and decision.actions == ()
    assert [r.code for r in decision.reasons] == ["too_many_dead_brokers"]
    assert "2 of them still in their grace period" in decision.reasons[0].message


def test_a_partition_without_a_live_leader_is_not_healed_early() -> None:
    """Nothing to copy from: it waits for its broker like any other (a page at 60 s for a
    broker that restarts in two minutes would be a page for nothing)."""
    brokers = [broker(b, RACKS[b], alive=b != DEAD) for b in RACKS]
    brokers[DEAD - 1]["dead_since_ms"] = NOW - 120_000
    alive = set(RACKS) - {DEAD}
    data = snapshot_dict(
        brokers,
        {"lone": [part(0, [DEAD], alive=alive)]},
        policy={"even_spread": False},
    )
    data["topics"][0]["min_insync_replicas"] = 1
    decision = decide(parse_snapshot(json.dumps(data)))
    assert decision.outcome == "wait", decision.summary
    assert alerts_for(decision, audit_on_failover=False) == {}
