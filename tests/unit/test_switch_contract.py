"""The switch contract (issue 39.2), one row per switch of ``policy.goals``: with the switch on
its goal acts; off, the same snapshot is still decided - a ``would_act`` noop naming the
switch, keeping the whole plan for the audit log - counted in ``kmedic_would_act_total``,
alerted as ``disabled:<switch>`` (never for the two tidying switches, which nothing needs),
and never carried out (the daemon executes only an ``act``). A switch added without a row
here fails the first test.

The snapshots are plain data (``SCENARIOS``): scripts/decision_corpus.py keeps each one, with
its switch off, in the decision corpus."""

from __future__ import annotations

import json
from typing import Any

import pytest
from planner_fixtures import GB, MB, NOW, broker, part, snapshot_dict

from manager.analyzer.health import alerts_for
from manager.analyzer.planner import decide
from manager.model.decision import Decision
from manager.model.policy import GoalSwitches
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot
from manager.web.metrics import ManagerMetrics

RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1", 5: "/r2", 6: "/r3"}
QUIET = 10 * 1000


def _brokers(**extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [broker(b, RACKS[b], **extra.get(str(b), {})) for b in RACKS]


def dead_broker() -> dict[str, Any]:
    brokers = [broker(b, RACKS[b], alive=b != 6) for b in RACKS]
    parts = [part(n, [6, 1 + n % 5], alive={1, 2, 3, 4, 5}) for n in range(3)]
    return snapshot_dict(brokers, {"t": parts}, policy={"even_spread": False})


def failed_disk() -> dict[str, Any]:
    lost = part(0, [1, 2, 3], isr=[2, 3])
    lost["offline_replicas"] = [1]
    return snapshot_dict(_brokers(), {"t": [lost]}, policy={"even_spread": False})


def drain_request() -> dict[str, Any]:
    request = {"id": "r-1", "kind": "drain", "brokers": [3], "created_ms": 0}
    parts = [part(n, [3, 1 + n % 2], size=GB) for n in range(2)]
    return snapshot_dict(
        _brokers(), {"t": parts}, policy={"even_spread": False}, requests=[request]
    )


def hot_broker() -> dict[str, Any]:
    """Broker 1 leads four busy partitions: over its network limit."""
    brokers = [broker(b, RACKS[b]) for b in (1, 2, 3, 4)]
    hot = [part(n, [1, 2 if n % 2 else 4], bytes_in=30 * MB, bytes_out=30 * MB) for n in range(4)]
    cool = [part(n, [3, 4], size=GB, bytes_in=MB, bytes_out=MB) for n in range(4, 6)]
    return snapshot_dict(brokers, {"t": hot + cool}, policy={"even_spread": False})


def slow_broker() -> dict[str, Any]:
    slowness = {"state": "slow", "score": 5.0, "since_ms": NOW - 60_000, "evidence": "p90 250"}
    brokers = _brokers(**{"3": {"slowness": slowness}})
    parts = [
        part(n, [n % 6 + 1, (n + 1) % 6 + 1, (n + 2) % 6 + 1], bytes_in=QUIET, bytes_out=QUIET)
        for n in range(12)
    ]
    return snapshot_dict(brokers, {"t": parts}, policy={"even_spread": False})


def rejoined_broker() -> dict[str, Any]:
    """Broker 3 came back a minute ago, every replica of it in sync, leading nothing yet."""
    brokers = _brokers(**{"3": {"returned_at_ms": NOW - 60_000}})
    parts = []
    for n in range(12):
        replicas = [n % 6 + 1, (n + 1) % 6 + 1, (n + 2) % 6 + 1]
        leader = next(b for b in replicas if b != 3)
        parts.append(part(n, replicas, leader=leader, bytes_in=QUIET, bytes_out=QUIET))
    return snapshot_dict(
        brokers, {"t": parts}, policy={"even_spread": False}, kafka_auto_leader_rebalance=False
    )


def broken_placement() -> dict[str, Any]:
    """A calm cluster with one partition's two replicas in one rack."""
    pairs = [(1, 3), (3, 5), (5, 2), (2, 4), (4, 6), (6, 1)]
    parts = [part(0, [1, 4], bytes_in=QUIET, bytes_out=QUIET)]
    parts += [part(i, list(pairs[i % 6]), bytes_in=QUIET, bytes_out=QUIET) for i in range(1, 7)]
    return snapshot_dict(
        _brokers(), {"t": parts}, policy={"even_spread": False, "repair_placement": True}
    )


def new_empty_broker() -> dict[str, Any]:
    """A calm cluster with broker 4 just added, holding nothing."""
    brokers = [broker(b, f"/r{b}") for b in (1, 2, 3, 4)]
    parts = [
        part(n, [1 + n % 3, 1 + (n + 1) % 3], size=GB, bytes_in=QUIET, bytes_out=QUIET)
        for n in range(12)
    ]
    return snapshot_dict(brokers, {"t": parts})


# switch -> the snapshot on which its goal acts (the switch on, every other as it must be).
SCENARIOS: dict[str, Any] = {
    "heal_dead_brokers": dead_broker,
    "heal_failed_disks": failed_disk,
    "operator_requests": drain_request,
    "balance": hot_broker,
    "leadership_moves": hot_broker,
    "slow_brokers": slow_broker,
    "rejoin_leadership": rejoined_broker,
    "repair_placement": broken_placement,
    "even_spread": new_empty_broker,
}
TIDYING = {"repair_placement", "even_spread"}


def with_switch(data: dict[str, Any], switch: str, on: bool) -> Snapshot:
    policy = dict(data["policy"])
    goals = dict(policy.get("goals", {}))
    for old in ("even_spread", "repair_placement"):  # as older configs spell them
        if old in policy:
            goals[old] = policy.pop(old)
    policy["goals"] = {**goals, switch: on}
    return parse_snapshot(json.dumps({**data, "policy": policy}))


def test_every_switch_has_a_row() -> None:
    assert set(SCENARIOS) == set(GoalSwitches.model_fields)


@pytest.mark.parametrize("switch", sorted(SCENARIOS))
def test_on_the_goal_acts(switch: str) -> None:
    decision = decide(with_switch(SCENARIOS[switch](), switch, True))
    assert decision.outcome == "act", (switch, decision.summary)


@pytest.mark.parametrize("switch", sorted(SCENARIOS))
def test_off_it_is_decided_audited_counted_alerted_and_never_carried_out(switch: str) -> None:
    on = decide(with_switch(SCENARIOS[switch](), switch, True))
    off: Decision = decide(with_switch(SCENARIOS[switch](), switch, False))
    # Decided, and told as what it would do: the whole plan, for the audit log.
    assert off.outcome == "noop", (switch, off.summary)
    assert off.would_act is not None and f"policy.goals.{switch}" in off.would_act
    assert switch in off.disabled_by
    assert off.summary == f"would act ({off.would_act}): {on.summary}"
    assert off.actions == on.actions
    # Counted.
    metrics = ManagerMetrics("c")
    metrics.observe_decision(off, heal_needed=off.kind == "heal")
    counted = metrics.registry.get_sample_value(
        "kmedic_would_act_total", {"cluster": "c", "why": off.would_act}
    )
    assert counted == 1
    # Alerted by the switch's name, unless nothing needs it.
    alerts = alerts_for(off, audit_on_failover=False)
    if switch in TIDYING:
        assert off.tidying and alerts == {}
    else:
        assert not off.tidying
        assert list(alerts) == ["disabled:" + ",".join(off.disabled_by)]
