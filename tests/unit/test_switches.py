"""Goal switches set at run time: applied over the config's goals (only those named), refused
when a name is not a goal, and audited by the leader once per change."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from manager.coordination.switch_store import GOALS, SwitchRecord, switched
from manager.daemon.switches import SwitchTracker
from manager.model.policy import GoalSwitches, Policy


class Trail:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, dict[str, Any]]] = []

    def record(self, kind: str, summary: str, **fields: Any) -> None:
        self.records.append((kind, summary, fields))


def test_the_goals_are_the_policys_switches() -> None:
    assert tuple(GoalSwitches.model_fields) == GOALS
    assert "balance" in GOALS and "heal_dead_brokers" in GOALS


def test_only_the_named_switches_replace_the_configs() -> None:
    policy = Policy.model_validate({"goals": {"repair_placement": True}})
    assert switched(policy, None) is policy
    assert switched(policy, SwitchRecord()) is policy
    turned = switched(policy, SwitchRecord(goals={"balance": False, "even_spread": False}))
    assert (turned.goals.balance, turned.goals.even_spread) == (False, False)
    assert turned.goals.repair_placement is True  # not named: as configured
    assert turned.goals.heal_dead_brokers is True
    assert turned.limits == policy.limits and policy.goals.balance is True


def test_a_name_that_is_not_a_goal_is_refused_naming_the_goals() -> None:
    with pytest.raises(ValidationError, match=r"not a goal: heal \(goals: heal_dead_brokers"):
        SwitchRecord(goals={"heal": False})


def test_the_leader_audits_each_change_once_and_a_clearing() -> None:
    trail, tracker = Trail(), SwitchTracker()
    tracker.follow(None, trail)  # type: ignore[arg-type]
    assert trail.records == []
    off = SwitchRecord(goals={"balance": False}, by="ops via the API from 10.0.0.1", why="x")
    tracker.follow(off, trail)  # type: ignore[arg-type]
    tracker.follow(off, trail)  # type: ignore[arg-type]
    assert [s for _, s, _ in trail.records] == [
        "goal switches: balance off, set by ops via the API from 10.0.0.1: x; unnamed goals "
        "as configured"
    ]
    assert trail.records[0][2]["reasons"] == ["switch: balance off"]
    tracker.follow(None, trail)  # type: ignore[arg-type]
    assert trail.records[-1][1] == "goal switches cleared: every goal as configured"
    assert len(trail.records) == 2
