"""The leader's readiness sweep: paced to its share of the time, audited once and again only
when its summary changes (by the cycle, the audit log's one writer), gauges per loss, the
status page's section, and no sweep on a standby (fake collaborators, the real planner)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for
from manager_fakes import Rig
from planner_fixtures import broker, make, part

import manager.daemon.readiness_sweep as module
from manager.config import ReadinessSettings
from manager.daemon.readiness_sweep import ReadinessSweep
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
    assert changed.startswith("readiness: 6 of 9 losses healable; losing rack /r1 (brokers [1, 2])")
    assert gauge(rig, "kmedic_readiness_unhealable", scenario="rack") == 3
    assert gauge(rig, "kmedic_readiness_unhealable", scenario="broker") == 0
    assert (
        gauge(
            rig,
            "kmedic_readiness_unhealable_loss",
            scenario="rack",
            name="/r1",
            reason="too_many_dead_brokers",
        )
        == 1
    )
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

    def timed(snap: Snapshot, scenario: Any) -> Any:
        now[0] += 0.2  # each scenario takes 0.2 s
        return real_verdict(snap, scenario)

    monkeypatch.setattr(module, "verdict", timed)
    assert sweep.sweep(snapshot()) is not None
    # 25 % of the time: 0.6 s of rest after each 0.2 s scenario.
    assert waits == pytest.approx([0.6] * 9)


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
