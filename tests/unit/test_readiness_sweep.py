"""The leader's readiness sweep: paced to its share of the time, audited once and again only
when its summary changes (by the cycle, the audit log's one writer), gauges per loss, the
status page's section, and no sweep on a standby (fake collaborators, the real planner)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for
from manager_fakes import Rig
from planner_fixtures import broker, make, part

import manager.daemon.readiness_sweep as module
from manager.analyzer.heal_time import Pace
from manager.config import ReadinessSettings
from manager.daemon.readiness_sweep import ReadinessSweep
from manager.executor.config import ExecutorConfig
from manager.model.snapshot import Snapshot

RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}


def snapshot(**policy: Any) -> Snapshot:
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    topics = {"t": [part(n, [n % 2 + 1, n % 2 + 3, n % 2 + 5]) for n in range(4)]}
    return make(brokers, topics, policy=policy or None)


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def records(rig: Rig) -> list[str]:
    return [r.summary for r in rig.sink.records if r.kind == "readiness"]


def gauge(rig: Rig, metric: str, **labels: str) -> float | None:
    return rig.manager.metrics.registry.get_sample_value(metric, {"cluster": "c", **labels})


def test_a_sweep_is_audited_once_and_again_only_when_it_changes(rig: Rig) -> None:
    sweep = rig.manager.readiness
    sweep.settings = ReadinessSettings(cpu_share=1.0)
    ready = snapshot()
    sweep.sweep(ready)
    assert records(rig) == []  # the sweep thread never writes the audit log itself
    sweep.report(ready)
    sweep.report(ready)
    assert records(rig) == ["readiness: 9 of 9 losses healable"]
    sweep.sweep(ready)
    sweep.report(ready)
    assert len(records(rig)) == 1, "the same summary is not audited twice"

    strict = snapshot(max_dead_brokers=1)
    sweep.sweep(strict)
    sweep.report(strict)
    changed = records(rig)[-1]
    assert changed.startswith(
        "readiness: 6 of 9 losses healable, 3 left to an operator by policy; losing rack /r1 "
        "(brokers [1, 2]): left to an operator by policy"
    )
    # Issue 39.4: a policy refusal is reported (its own gauge), never the alerted series.
    assert gauge(rig, "kmedic_readiness_unhealable", scenario="rack") == 0
    assert gauge(rig, "kmedic_readiness_unhealable", scenario="broker") == 0
    labels = {"scenario": "rack", "name": "/r1", "reason": "too_many_dead_brokers"}
    assert gauge(rig, "kmedic_readiness_unhealable_loss", **labels) is None
    assert gauge(rig, "kmedic_readiness_left_to_operator", **labels) == 1
    assert gauge(rig, "kmedic_readiness_max_heal_bytes") == 2_000_000_000
    page = rig.manager.status()["readiness"]
    assert page["summary"] == changed
    assert [s["healable"] for s in page["scenarios"]] == [True] * 6 + [False] * 3


def test_a_sweep_leaves_the_interpreter_to_the_cycle_between_scenarios(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    waits: list[float] = []
    sweep = ReadinessSweep(
        ReadinessSettings(cpu_share=0.25),
        rig.coordinator,
        rig.manager.trail,
        rig.manager.metrics,
        clock=lambda: now[0],
    )

    def decide_slowly(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        return False

    sweep._stop.wait = decide_slowly  # type: ignore[method-assign]
    real_verdict = module.verdict

    def timed(snap: Snapshot, scenario: Any, pace: Pace, plan: Any) -> Any:
        now[0] += 0.2  # each scenario takes 0.2 s
        return real_verdict(snap, scenario, pace, plan)

    monkeypatch.setattr(module, "verdict", timed)
    assert sweep.sweep(snapshot()) is not None
    # 25 % of the time: 0.6 s of rest after each 0.2 s scenario (the keys took no time here).
    assert waits == pytest.approx([0.0] + [0.6] * 9)


def test_the_thread_sweeps_the_leaders_snapshot_and_a_standby_does_not(rig: Rig) -> None:
    sweep = ReadinessSweep(
        ReadinessSettings(cpu_share=1.0, period_s=60, first_sweep_s=0),
        rig.coordinator,
        rig.manager.trail,
        rig.manager.metrics,
    )
    rig.coordinator.is_leader = False
    sweep.report(snapshot())
    sweep.start()
    try:
        assert sweep.latest == ()
        rig.coordinator.is_leader = True
        wait_for(lambda: sweep.latest, timeout=15, what="a sweep once leading")
    finally:
        sweep.stop()
    assert len(sweep.latest) == 9


def test_scenarios_nothing_changed_for_are_kept_from_the_last_sweep(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = rig.manager.readiness
    sweep.settings = ReadinessSettings(cpu_share=1.0)
    decided: list[str] = []
    real_verdict = module.verdict

    def counted(snap: Snapshot, scenario: Any, pace: Pace, plan: Any) -> Any:
        decided.append(scenario.name)
        return real_verdict(snap, scenario, pace, plan)

    monkeypatch.setattr(module, "verdict", counted)
    first = sweep.sweep(snapshot())
    assert len(decided) == 9 and sweep.cost is not None and sweep.cost.reused == 0
    decided.clear()
    later = snapshot().model_copy(update={"taken_at": snapshot().taken_at + 60_000})
    assert sweep.sweep(later) == first and decided == []
    assert sweep.cost.reused == 9
    assert gauge(rig, "kmedic_readiness_last_sweep_reused_scenarios") == 9
    cpu = gauge(rig, "kmedic_readiness_last_sweep_cpu_seconds")
    assert cpu is not None and cpu > 0
    # A measured copy rate changes every estimate: every scenario is decided again.
    rig.manager.moves.move_rate = 5e6
    again = sweep.sweep(later)
    assert len(decided) == 9 and again is not None
    assert again[0].heal_s is not None and first is not None and first[0].heal_s is not None
    assert again[0].heal_s > first[0].heal_s  # 5 MB/s per move measured, 20 assumed


def test_no_scenario_starts_while_a_cycle_runs(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = rig.manager.readiness
    sweep.settings = ReadinessSettings(cpu_share=1.0)

    class CycleForTwoLooks:
        """The sweep's view of the cycle: running for its first two looks, then over."""

        looks = 0

        def wait(self, timeout: float | None = None) -> bool:
            self.looks += 1
            return self.looks > 2

    cycles = CycleForTwoLooks()
    sweep._no_cycle = cycles  # type: ignore[assignment]
    real_verdict = module.verdict

    def after_the_cycle(snap: Snapshot, scenario: Any, pace: Pace, plan: Any) -> Any:
        assert cycles.looks > 2, "a scenario started while a cycle ran"
        return real_verdict(snap, scenario, pace, plan)

    monkeypatch.setattr(module, "verdict", after_the_cycle)
    assert sweep.sweep(snapshot()) is not None


def test_a_cycle_never_waits_for_a_sweep_in_the_middle_of_a_scenario(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep thread held inside one scenario's decision: cycles still run and finish (the
    sweep takes no lock a cycle needs, and a cycle starts no matter where the sweep is)."""
    sweep = rig.manager.readiness
    sweep.settings = ReadinessSettings(cpu_share=1.0)
    entered, release = threading.Event(), threading.Event()
    real_verdict = module.verdict

    def stuck(snap: Snapshot, scenario: Any, pace: Pace, plan: Any) -> Any:
        entered.set()
        release.wait(30)
        return real_verdict(snap, scenario, pace, plan)

    monkeypatch.setattr(module, "verdict", stuck)
    sweeping = threading.Thread(target=lambda: sweep.sweep(snapshot()), daemon=True)
    sweeping.start()
    try:
        assert entered.wait(10), "the sweep never started a scenario"
        rig.sources.dead = {4}
        outcomes = [rig.manager.run_once() for _ in range(3)]
        assert all(o is not None for o in outcomes)
        assert outcomes[0] is not None and outcomes[0].kind == "act"
    finally:
        release.set()
        sweeping.join(10)


def test_the_pace_carries_the_adaptive_throttles_copies_into_a_broker() -> None:
    settings = ReadinessSettings()
    adaptive = ExecutorConfig(throttle_bytes_per_s="adaptive", adaptive={"moves_into_broker": 3})
    assert module.pace_of(adaptive, settings, None).max_moves_into_broker == 3
    for throttle in (None, 20_000_000):
        fixed = ExecutorConfig(throttle_bytes_per_s=throttle)
        pace = module.pace_of(fixed, settings, 5e6)
        assert pace.max_moves_into_broker is None
        assert pace.throttle_bytes_per_s == throttle


def test_the_leaders_sweep_during_its_own_drain_keeps_the_risk_it_saw_before(rig: Rig) -> None:
    """Issue 71.3, the daemon's own sweep: a loss at risk before a drain is still at risk while
    the drain's moves run (they read "healable, 0 moves": the planner holds for own moves)."""
    from test_readiness import with_pay_group

    sweep = rig.manager.readiness
    sweep.settings = ReadinessSettings(cpu_share=1.0)
    drain = {
        "topic": "t",
        "partition": 1,
        "adding_replicas": [5],
        "removing_replicas": [6],
        "started_by_kmedic": True,
    }
    seen = []
    for snap in (with_pay_group(), with_pay_group(reassignments=[drain])):
        verdicts = sweep.sweep(snap)
        assert verdicts is not None
        seen.append(
            [v.scenario.name for v in verdicts if v.at_risk and v.scenario.kind == "broker"]
        )
        assert "1" in seen[-1], [v.sentence() for v in verdicts]
    assert seen[0] == seen[1]
    assert gauge(rig, "kmedic_readiness_unhealable", scenario="broker") == len(seen[1])
