"""Observe mode: the leader decides, audits ``would_act`` with the full plan and alerts as
usual, and writes nothing to the cluster (no stored plan, no move, no adopted move, no
throttle released); ``kmedic mode`` switches it at run time, audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from manager_fakes import EPOCH, NOW_S, Rig

from manager.coordination.mode_store import ModeRecord
from manager.coordination.plan_document import PlanDocument
from manager.coordination.plan_store import StoredPlan
from manager.daemon.mode import ModeTracker

DEAD_BROKERS_PARTITIONS = [("t", 1), ("t", 2)]  # on broker 4 in the fake cluster


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    r = Rig(tmp_path)
    r.manager.mode = ModeTracker("observe")  # `mode: observe` in the config
    return r


def mode_gauge(rig: Rig, mode: str) -> float | None:
    registry = rig.manager.metrics.registry
    return registry.get_sample_value("kmedic_mode", {"cluster": "c", "mode": mode})


def test_a_dead_broker_under_observe_mode_is_a_would_act_and_nothing_is_written(rig: Rig) -> None:
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop"
    assert outcome.sentence.startswith("noop (heal): would act (observe mode): heal dead brokers 4")
    assert rig.coordinator.plans.writes == []
    assert rig.executor.submitted == [] and rig.executor.steps == 0
    [would] = [r for r in rig.sink.records if r.kind == "would_act"]
    moved = sorted((a["topic"], a["partition"]) for a in would.details["actions"])
    assert moved == DEAD_BROKERS_PARTITIONS  # the full plan, for on-call to read
    [said] = rig.summaries()[:1]
    assert said.startswith("mode observe (from the config): nothing is written to the cluster")
    assert mode_gauge(rig, "observe") == 1 and mode_gauge(rig, "act") == 0
    assert rig.manager.status()["mode"] == "observe"
    assert rig.manager.health()[1]["mode"] == "observe"
    rig.manager.cycle()
    assert len([r for r in rig.sink.records if r.kind == "would_act"]) == 2  # every cycle
    assert rig.summaries().count(said) == 1  # the mode is told once


def gauge(rig: Rig, name: str) -> float | None:
    return rig.manager.metrics.registry.get_sample_value(name, {"cluster": "c"})


def test_observe_mode_pages_for_the_heal_it_holds_back(rig: Rig) -> None:
    """Issue 71.0: a broker dead past its grace under observe mode raised no alert (status
    page "Active alerts: none", kmedic_refusing_to_heal 0). It pages as a refusal does: the
    gauge the shipped rule KmedicObserveModeWouldHeal reads, and an alert on the status page
    and in the audit log; it clears once nothing needs healing."""
    assert gauge(rig, "kmedic_would_heal") == 0
    rig.sources.dead = {4}
    rig.manager.cycle()
    assert gauge(rig, "kmedic_would_heal") == 1
    assert gauge(rig, "kmedic_refusing_to_heal") == 0  # not a refusal: a held heal
    alerts = rig.manager.status()["active_alerts"]
    assert list(alerts) == ["observe_mode:would_heal"], alerts
    assert "would act (observe mode): heal dead brokers 4" in alerts["observe_mode:would_heal"]
    raised = [r.reasons[0] for r in rig.sink.records if r.kind == "alert_raised"]
    assert raised == ["observe_mode:would_heal"]
    rig.sources.dead = set()
    rig.manager.cycle()
    assert gauge(rig, "kmedic_would_heal") == 0
    assert rig.manager.status()["active_alerts"] == {}


def test_act_mode_and_a_switched_off_heal_never_raise_the_observe_page(tmp_path: Path) -> None:
    rig = Rig(tmp_path)  # act
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    assert gauge(rig, "kmedic_would_heal") == 0
    off = Rig(tmp_path / "off", goals={"heal_dead_brokers": False})
    off.sources.dead = {4}
    off.manager.cycle()
    assert gauge(off, "kmedic_would_heal") == 0
    assert gauge(off, "kmedic_refusing_to_heal") == 1  # the switch's own page


def test_switching_to_act_at_run_time_heals_and_is_audited(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.manager.cycle()
    rig.coordinator.mode = ModeRecord(mode="act", by="ops@host", set_ms=1, why="trust it")
    outcome = rig.manager.cycle()
    assert outcome.kind == "act"
    assert sorted(m.tp for m in rig.executor.submitted) == DEAD_BROKERS_PARTITIONS
    switched = [s for s in rig.summaries() if s.startswith("mode observe -> act")]
    assert switched == [
        "mode observe -> act (set at run time: act, set by ops@host: trust it): kmedic acts"
    ]
    assert mode_gauge(rig, "act") == 1


def test_the_zookeeper_mode_wins_over_the_config(tmp_path: Path) -> None:
    rig = Rig(tmp_path)  # act in the config
    rig.coordinator.mode = ModeRecord(mode="observe", by="ops@host")
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "noop"
    assert rig.executor.submitted == [] and rig.coordinator.plans.writes == []


def test_the_command_line_flag_wins_over_a_run_time_mode_and_says_so(tmp_path: Path) -> None:
    """Issue 71.2: after one `kmedic mode act`, an instance started with `--mode observe`
    acted, and no record said why. The flag wins (this instance alone), and the audit names
    the run-time mode it overrides."""
    rig = Rig(tmp_path)  # act in the config
    rig.manager.mode = ModeTracker("act", flag="observe")
    rig.coordinator.mode = ModeRecord(mode="act", by="ops@host", why="trust it")
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "noop"
    assert rig.executor.submitted == [] and rig.coordinator.plans.writes == []
    [said] = [s for s in rig.summaries() if s.startswith("mode ")]
    assert said == (
        "mode observe (from --mode on this instance's command line; it overrides the run-time "
        "mode act, set by ops@host: trust it): nothing is written to the cluster"
    )
    assert rig.manager.status()["mode_source"] == "flag"


def test_a_cleared_run_time_mode_hands_back_to_the_config_audited(tmp_path: Path) -> None:
    """`kmedic mode --clear` deletes the run-time mode: the config's mode holds again, and the
    leader says so; a mode unchanged but from another source is told too."""
    rig = Rig(tmp_path)  # act in the config
    rig.coordinator.mode = ModeRecord(mode="observe", by="ops@host")
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "noop"
    rig.coordinator.mode = None  # cleared
    assert rig.manager.cycle().kind == "act"
    assert [s for s in rig.summaries() if s.startswith("mode ")] == [
        "mode observe (set at run time: observe, set by ops@host): nothing is written to "
        "the cluster",
        "mode observe -> act (from the config; the run-time mode was cleared): kmedic acts",
    ]
    rig.coordinator.mode = ModeRecord(mode="act", by="ops@host")  # same mode, another source
    rig.manager.cycle()
    rig.manager.cycle()
    told = [s for s in rig.summaries() if s.startswith("mode ")]
    assert told[2:] == ["mode act (set at run time: act, set by ops@host): kmedic acts"]


def test_every_new_leader_says_its_mode(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.manager.cycle()
    rig.manager.cycle()
    rig.coordinator.lose("test")
    rig.coordinator.acquire(EPOCH + 1)
    rig.manager.cycle()
    told = [s for s in rig.summaries() if s.startswith("mode ")]
    assert told == ["mode act (from the config): kmedic acts"] * 2


def test_observe_mode_adopts_no_stored_plan_and_releases_no_throttle(rig: Rig) -> None:
    owned = {"replicas": [], "rates": [{"broker": 2, "config": "x", "value": "1000"}]}
    moves = [{"topic": "t", "partition": 1, "target": [2, 3, 1], "size_bytes": 10}]
    plan = PlanDocument.model_validate({"moves": moves, "throttles": owned})
    rig.coordinator.stored = StoredPlan(plan, 7, 2, "m0", NOW_S - 60)
    rig.coordinator.acquire(EPOCH + 1)
    rig.manager.cycle()
    rig.manager.cycle()
    assert rig.executor.submitted == [] and rig.executor.released == []
    assert rig.coordinator.plans.writes == []


def test_a_refusal_under_observe_mode_still_alerts(rig: Rig) -> None:
    rig.sources.dead = {3, 4}
    rig.manager.cycle()
    rig.clock.advance(rig.cfg.refusal_alert_after_s)
    rig.manager.cycle()
    raised = {r.reasons[0] for r in rig.sink.records if r.kind == "alert_raised"}
    assert "refused:too_many_dead_brokers" in raised


def test_observe_entered_mid_plan_leaves_the_moves_to_kafka_and_keeps_deciding(
    tmp_path: Path,
) -> None:
    """Issue 39.1: a heal acts, the mode switches to observe, Kafka finishes the moves. The
    planner must not wait forever for moves nothing steps: once Kafka no longer lists them the
    cycles judge the cluster again (a new death is a would_act, not 'waiting for kmedic's own
    reassignments'), and no throttle is removed while observing."""
    rig = Rig(tmp_path)  # act
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    moved = {m.tp: m.target for m in rig.executor.submitted}
    assert sorted(moved) == DEAD_BROKERS_PARTITIONS and rig.executor.in_flight()
    owned = rig.executor.owned_throttles()
    assert owned.rates
    rig.coordinator.mode = ModeRecord(mode="observe", by="ops@host", why="look first")
    rig.sources.replicas.update(moved)  # Kafka finished the moves; nothing stepped them
    sentences = [rig.manager.cycle().sentence for _ in range(3)]
    # The switching cycle read its snapshot before it knew the mode; the next ones are free.
    assert not any("kmedic's own reassignments" in s for s in sentences[1:]), sentences
    at_rest = "noop: dead brokers 4 hold no replicas; every live broker is within limits"
    assert sentences[-1] == at_rest
    left = [s for s in rig.summaries() if "left to Kafka" in s]
    assert len(left) == 1, rig.summaries()  # told once
    assert rig.executor.released == []  # observe removes no throttle
    rig.sources.dead = {3, 4}  # a new loss while observing: decided, not frozen
    outcome = rig.manager.cycle()
    assert "would act (observe mode)" in outcome.sentence or outcome.kind == "refuse", outcome
    assert rig.executor.steps == 1  # only the act cycle stepped


def test_the_throttles_observe_mode_keeps_are_said_and_counted(tmp_path: Path) -> None:
    """Issue 71.6: observe mode kept kmedic's replication throttles for as long as it lasted,
    so a later restart's catch-up was throttled at an old heal's rate, and nothing said so."""
    rig = Rig(tmp_path)  # act
    rig.sources.dead = {4}
    rig.manager.cycle()
    moved = {m.tp: m.target for m in rig.executor.submitted}
    rig.coordinator.mode = ModeRecord(mode="observe", by="ops@host")
    rig.sources.replicas.update(moved)  # Kafka finishes the moves it was left
    for _ in range(3):
        rig.manager.cycle()
    held = [s for s in rig.summaries() if s.startswith("observe mode keeps the replication")]
    assert len(held) == 1, rig.summaries()  # said once while the set is the same
    assert "leader.replication.throttled.rate" in held[0] and "kmedic mode act" in held[0]
    assert gauge(rig, "kmedic_held_throttles") == len(rig.coordinator.stored.plan.throttles.rates)  # type: ignore[union-attr]
    assert (gauge(rig, "kmedic_held_throttles") or 0) > 0
    rig.coordinator.mode = ModeRecord(mode="act", by="ops@host")
    rig.executor.complete_all()
    rig.manager.cycle()
    assert gauge(rig, "kmedic_held_throttles") == 0


def test_act_after_observe_completes_the_left_moves_and_releases_their_throttles(
    tmp_path: Path,
) -> None:
    """Back to act: the moves left to Kafka are adopted from the stored plan (done, so they
    complete), the moves never started are not started from the old plan, and the throttles
    are released once nothing needs them."""
    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    rig.manager.cycle()
    moved = {m.tp: m.target for m in rig.executor.submitted}
    rig.coordinator.mode = ModeRecord(mode="observe", by="ops@host")
    rig.manager.cycle()
    stored = rig.coordinator.stored
    assert stored is not None and {m.tp for m in stored.plan.moves} == set(moved)
    rig.sources.replicas.update(moved)
    rig.coordinator.mode = ModeRecord(mode="act", by="ops@host")
    rig.executor.complete_all()
    for _ in range(3):
        rig.manager.cycle()
    assert rig.executor.owned_throttles() == type(rig.executor.owned)()
    completed = [r for r in rig.sink.records if r.kind == "action_completed"]
    assert len(completed) == len(moved)  # audited once each, by the act cycle that adopted them
    stored = rig.coordinator.stored
    assert stored is not None and stored.plan.moves == ()
