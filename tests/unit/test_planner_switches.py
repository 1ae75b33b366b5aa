"""A switch per capability (policy.goals): a goal switched off is still decided, its decision
to act becomes a would_act noop that keeps the whole plan and names the switch, and nothing
after it runs that cycle. The daemon counts it, alerts naming the switch, and pages for a
heal held back by one."""

from __future__ import annotations

from typing import Any

from planner_fixtures import GB, MB, broker, make, part

from manager.analyzer.health import alerts_for, switched_off
from manager.analyzer.planner import decide
from manager.model.decision import Decision
from manager.web.metrics import ManagerMetrics

RACKS = {1: "/r1", 2: "/r2", 3: "/r1", 4: "/r2"}


def _dead_broker(**goals: bool) -> Any:
    brokers = [broker(b, RACKS[b], alive=b != 4) for b in RACKS]
    parts = [part(n, [4, 1 + n % 3], alive={1, 2, 3}) for n in range(3)]
    return make(brokers, {"t": parts}, policy={"goals": goals, "even_spread": False})


def _hot_broker(**goals: bool) -> Any:
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    hot = [part(n, [1, 2 if n % 2 else 4], bytes_in=30 * MB, bytes_out=30 * MB) for n in range(4)]
    cool = [part(n, [3, 4], size=GB, bytes_in=MB, bytes_out=MB) for n in range(4, 6)]
    return make(brokers, {"t": hot + cool}, policy={"goals": goals, "even_spread": False})


def test_every_switch_on_by_default_acts() -> None:
    assert decide(_dead_broker()).outcome == "act"
    assert decide(_hot_broker()).outcome == "act"


def test_a_heal_switched_off_is_decided_audited_and_not_carried_out() -> None:
    on = decide(_dead_broker())
    off = decide(_dead_broker(heal_dead_brokers=False))
    assert off.outcome == "noop" and off.kind == "heal"
    assert off.would_act == "disabled by policy.goals.heal_dead_brokers"
    assert off.summary == f"would act (disabled by policy.goals.heal_dead_brokers): {on.summary}"
    assert off.actions == on.actions  # the whole plan, for the audit log
    assert switched_off(off)
    alerts = alerts_for(off, audit_on_failover=False)
    assert list(alerts) == ["disabled:heal_dead_brokers"]
    assert "policy.goals.heal_dead_brokers" in alerts["disabled:heal_dead_brokers"]


def test_a_balance_switched_off_runs_nothing_after_it() -> None:
    off = decide(_hot_broker(balance=False))
    assert off.outcome == "noop" and off.kind == "balance"
    assert off.would_act == "disabled by policy.goals.balance"
    assert off.actions  # what it would have done


def test_leadership_moves_off_holds_back_a_plan_that_moves_leadership() -> None:
    plan = decide(_hot_broker())
    assert any(a.to_dict()["type"] == "elect_preferred_leader" for a in plan.actions)
    off = decide(_hot_broker(leadership_moves=False))
    assert off.would_act == "disabled by policy.goals.leadership_moves"
    both = decide(_hot_broker(leadership_moves=False, balance=False))
    assert both.would_act == "disabled by policy.goals.balance, policy.goals.leadership_moves"
    # Issue 39.2: the alert names the switch that holds the plan back, not the plan's kind.
    assert off.disabled_by == ("leadership_moves",) and off.kind == "balance"
    assert list(alerts_for(off, audit_on_failover=False)) == ["disabled:leadership_moves"]
    assert list(alerts_for(both, audit_on_failover=False)) == ["disabled:balance,leadership_moves"]
    # A heal moves no leadership: the switch does not touch it.
    assert decide(_dead_broker(leadership_moves=False)).outcome == "act"


def test_operator_requests_off_and_several_switches_are_named() -> None:
    request = {"id": "r-1", "kind": "drain", "brokers": [3], "created_ms": 0}
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    parts = [part(n, [3, 1 + n % 2], size=GB) for n in range(2)]
    snap = make(
        brokers,
        {"t": parts},
        policy={"goals": {"operator_requests": False}, "even_spread": False},
        requests=[request],
    )
    off = decide(snap)
    assert off.would_act == "disabled by policy.goals.operator_requests" and off.request == "r-1"


def test_a_refusal_is_never_turned_into_a_would_act() -> None:
    snap = _dead_broker(heal_dead_brokers=False)
    refused = decide(
        snap.model_copy(update={"policy": snap.policy.model_copy(update={"max_dead_brokers": 0})})
    )
    assert refused.outcome == "refuse" and refused.would_act is None


def test_the_daemon_counts_would_act_and_pages_for_a_heal_held_by_a_switch() -> None:
    metrics = ManagerMetrics("c")
    off: Decision = decide(_dead_broker(heal_dead_brokers=False))
    metrics.record_decision(
        off.outcome, [], heal_needed=True, would_act=off.would_act, heal_disabled=True
    )
    value = metrics.registry.get_sample_value
    assert value("kmedic_would_act_total", {"cluster": "c", "why": off.would_act}) == 1
    assert value("kmedic_refusing_to_heal", {"cluster": "c"}) == 1
    metrics.record_decision("noop", [], heal_needed=True, would_act="observe mode")
    assert value("kmedic_refusing_to_heal", {"cluster": "c"}) == 0
