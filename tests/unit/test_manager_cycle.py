"""Manager.cycle() with fake collaborators: every cycle returns one outcome with one sentence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from manager_fakes import EPOCH, NOW_MS, NOW_S, Rig

from manager.coordination.leadership import FencedError
from manager.coordination.plan_document import PlanDocument
from manager.coordination.plan_store import PlanConflictError, StoredPlan
from manager.coordination.znodes import CoordinationError
from manager.model.move_progress import MoveProgress
from manager.model.snapshot import Quorum
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE, ThrottleRecord

DEAD_BROKERS_PARTITIONS = [("t", 1), ("t", 2)]


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def test_a_healthy_cluster_is_a_noop_read_once(rig: Rig) -> None:
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop"
    assert outcome.sentence == "noop: every broker is alive and within its limits"
    assert rig.coordinator.reads == 1
    # A leader's first cycle says which mode holds and where it came from (issue 71.2).
    assert rig.summaries() == [
        "mode act (from the config): kmedic acts",
        "noop: every broker is alive and within its limits",
    ]
    assert rig.coordinator.plans.writes == []


def test_a_dead_broker_is_healed_the_plan_stored_before_the_moves_start(rig: Rig) -> None:
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "act"
    assert outcome.sentence.startswith("act (heal): heal dead brokers 4")
    assert outcome.decision is not None and len(outcome.decision.actions) == 2
    assert rig.coordinator.reads == 1
    [(plan, expected_version), (fenced, fenced_version)] = rig.coordinator.plans.writes
    assert expected_version is None  # created: nothing was stored
    assert plan["epoch"] == EPOCH
    assert sorted((m["topic"], m["partition"]) for m in plan["moves"]) == DEAD_BROKERS_PARTITIONS
    assert plan["moves_started"] == [[NOW_S, 2]]
    assert plan["throttles"] == {"replicas": [], "rates": []}
    # then, just before the batch starts, the fenced write recording its throttles
    assert fenced_version == 0
    assert fenced == {**plan, "throttles": fenced["throttles"]}
    assert {r["broker"] for r in fenced["throttles"]["rates"]} == {
        m.target[0] for m in rig.executor.submitted
    }
    assert sorted(m.tp for m in rig.executor.submitted) == DEAD_BROKERS_PARTITIONS
    assert all(4 not in m.target for m in rig.executor.submitted)
    assert rig.executor.steps == 1


def test_the_plan_is_read_once_a_cycle_and_written_back_with_the_version_it_got(
    rig: Rig,
) -> None:
    rig.sources.dead = {4}
    rig.manager.cycle()
    waiting = rig.manager.cycle()
    assert waiting.kind == "noop"
    # The moves in flight count as kmedic's own reassignments even where a read of the
    # reassignment list misses them (this fake lists none), so the planner itself holds.
    assert waiting.sentence == (
        "noop: waiting for kmedic's own reassignments to finish before planning again"
    )
    rig.executor.complete_all()
    rig.sources.dead = set()  # healed: nothing left to plan
    rig.manager.cycle()
    assert rig.coordinator.reads == 3
    # the trimmed plan is written over the version the cycle's own write returned
    assert [v for _, v in rig.coordinator.plans.writes] == [None, 0, 1]
    emptied, _ = rig.coordinator.plans.writes[2]
    assert emptied["moves"] == []
    assert emptied["throttles"] == {"replicas": [], "rates": []}
    assert emptied["moves_started"] == [[NOW_S, 2]]  # the history outlives the plan


def test_a_standby_decides_nothing_and_names_the_leader(rig: Rig) -> None:
    rig.coordinator.is_leader = False
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "standby"
    assert outcome.sentence == f"standby: m2 leads with epoch {EPOCH}; 1 dead brokers seen"
    assert outcome.decision is None
    assert rig.sink.records == []
    assert rig.coordinator.plans.writes == [] and rig.executor.submitted == []


def test_zookeeper_unreachable_is_a_blind_cycle_without_reads(rig: Rig) -> None:
    rig.coordinator.connected = False
    outcome = rig.manager.cycle()
    assert outcome.kind == "blind"
    assert "ZooKeeper is unreachable" in outcome.sentence
    assert rig.coordinator.reads == 0 and rig.sources.calls == []
    assert rig.sink.records == []


def test_a_leader_that_cannot_read_the_cluster_is_blind_and_audits_the_refusal(
    rig: Rig,
) -> None:
    rig.sources.unavailable = "no broker answered within 4s"
    outcome = rig.manager.cycle()
    assert outcome.kind == "blind"
    assert outcome.sentence == "blind: no broker answered within 4s; refusal audited"
    assert outcome.reasons == ("cluster_unobservable",)
    assert rig.summaries() == ["refuse: nothing is decided while the cluster cannot be observed"]
    # A short blind spell (a broker dying under a read, ZooKeeper paused) is no page; one past
    # blind_alert_after_s (60 s by default) raises the alert.
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(59)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(1)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == [
        "alert refused:cluster_unobservable: the cluster cannot be observed: "
        "no broker answered within 4s"
    ]


def test_a_blind_spell_ends_with_a_cycle_that_sees(rig: Rig) -> None:
    rig.sources.unavailable = "no broker answered within 4s"
    rig.manager.cycle()
    rig.clock.advance(50)
    rig.manager.cycle()
    rig.sources.unavailable = None
    rig.manager.cycle()  # seen clearly: the next spell starts its own count
    rig.sources.unavailable = "no broker answered within 4s"
    rig.clock.advance(20)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []


def test_a_failed_zookeeper_read_pages_only_past_the_blind_bound(rig: Rig) -> None:
    rig.coordinator.read_error = CoordinationError("cannot read /kmedic/c/config: ConnectionLoss")
    rig.manager.cycle()
    rig.clock.advance(30)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []


def test_a_failed_zookeeper_read_is_blind_too(rig: Rig) -> None:
    rig.coordinator.read_error = CoordinationError("cannot read /kmedic/c/manager: timeout")
    outcome = rig.manager.cycle()
    assert outcome.kind == "blind"
    assert "ZooKeeper read failed: cannot read /kmedic/c/manager" in outcome.sentence
    assert rig.sources.calls == []


def test_a_standby_that_cannot_read_the_cluster_is_blind_and_quiet(rig: Rig) -> None:
    rig.coordinator.is_leader = False
    rig.sources.unavailable = "no broker answered"
    outcome = rig.manager.cycle()
    assert (outcome.kind, outcome.sentence) == ("blind", "blind: no broker answered")
    assert rig.sink.records == []


def test_a_fenced_plan_write_starts_nothing_and_drops_the_moves(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.coordinator.plans.fail = FencedError("instance m1 holds epoch 3 but a newer leader exists")
    outcome = rig.manager.cycle()
    assert outcome.kind == "standby"
    assert "nothing started: fenced: instance m1 holds epoch 3" in outcome.sentence
    assert rig.executor.submitted == [] and rig.executor.steps == 0
    rig.coordinator.is_leader = False
    assert rig.manager.cycle().kind == "standby"
    assert rig.executor.forgotten == 1


def test_a_plan_that_changed_underneath_starts_nothing(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.coordinator.plans.fail = PlanConflictError("the in-flight plan changed underneath")
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop"
    assert "the in-flight plan could not be stored" in outcome.sentence
    assert rig.executor.submitted == []


def test_leadership_not_verified_just_before_acting_starts_nothing(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.coordinator.verified = False
    outcome = rig.manager.cycle()
    assert outcome.kind == "standby"
    assert outcome.sentence.endswith(
        "nothing started: leadership could not be verified just before acting"
    )
    assert rig.coordinator.plans.writes == [] and rig.executor.submitted == []


def _stored_plan(moves: list[dict[str, Any]], history: list[list[float]]) -> StoredPlan:
    plan = {"decision": "heal", "kind": "heal", "epoch": 2, "moves": moves}
    plan["moves_started"] = history
    return StoredPlan(
        PlanDocument.model_validate(plan), version=7, epoch=2, instance="m0", written_at=NOW_S - 60
    )


def test_a_new_leader_adopts_the_stored_plan_and_its_move_history(rig: Rig) -> None:
    rig.sources.dead = {4}
    moves = [
        {"topic": "t", "partition": 1, "target": [2, 3, 1], "size_bytes": 10},
        {"topic": "t", "partition": 2, "target": [3, 2, 1], "size_bytes": 20},
    ]
    rig.coordinator.stored = _stored_plan(moves, [[NOW_S - 60, 2]])
    rig.coordinator.acquire(EPOCH + 1)
    outcome = rig.manager.cycle()
    assert sorted(m.tp for m in rig.executor.submitted) == DEAD_BROKERS_PARTITIONS
    assert rig.summaries()[:2] == [
        "mode act (from the config): kmedic acts",
        "adopted the in-flight plan of epoch 2 by m0: 2 moves to continue",
    ]
    # Their starts were the predecessor's to tell: only their ends are this leader's.
    assert all(s.adopted for s in rig.executor.states.values())
    # the adopted moves are kmedic's own and count against the hourly budget
    assert rig.sources.calls[0]["own_moves"] == frozenset(DEAD_BROKERS_PARTITIONS)
    assert rig.sources.calls[0]["moves_last_hour"] == 2
    # nothing new is planned while the adopted moves run
    assert outcome.kind == "noop"
    assert outcome.sentence.startswith("noop (heal): waiting for the current plan: 2 moves running")
    # The adopted batch started only after a fenced write of the plan, over the version read,
    # recording the throttles it set (the moves themselves unchanged).
    [(written, version)] = rig.coordinator.plans.writes
    assert version == 7 and written["moves"] == moves
    assert written["throttles"]["rates"] == [
        {"broker": 2, "config": LEADER_RATE, "value": "1000"},
        {"broker": 3, "config": LEADER_RATE, "value": "1000"},
    ]


OWNED = {"replicas": [], "rates": [{"broker": 2, "config": LEADER_RATE, "value": "1000"}]}


def test_adopting_an_empty_plan_releases_the_throttles_it_records_and_no_others(
    rig: Rig,
) -> None:
    stored = _stored_plan([], [])
    rig.coordinator.stored = StoredPlan(
        PlanDocument.model_validate({**stored.plan.to_json(), "throttles": OWNED}),
        stored.version,
        2,
        "m0",
        NOW_S - 60,
    )
    rig.coordinator.acquire(EPOCH + 1)
    rig.manager.cycle()
    assert [r.to_field() for r in rig.executor.released] == [OWNED]
    # the plan now says kmedic owns none
    [(written, _)] = rig.coordinator.plans.writes
    assert written["throttles"] == {"replicas": [], "rates": []}
    rig.manager.cycle()
    assert len(rig.executor.released) == 1  # nothing owned: nothing to release


def test_a_plan_without_a_throttle_record_releases_nothing(rig: Rig) -> None:
    """Written before kmedic recorded throttles, or by hand: what kmedic cannot prove it set
    is an operator's."""
    rig.coordinator.stored = _stored_plan([], [])
    rig.coordinator.acquire(EPOCH + 1)
    rig.manager.cycle()
    rig.manager.cycle()
    assert rig.executor.released == [] and rig.coordinator.plans.writes == []


def test_a_deposed_leader_neither_starts_a_batch_nor_releases_throttles(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.coordinator.stored = _stored_plan(
        [{"topic": "t", "partition": 1, "target": [2, 3, 1], "size_bytes": 10}], []
    )
    rig.coordinator.acquire(EPOCH + 1)
    rig.coordinator.plans.fail = FencedError("epoch 5 is current, this instance holds 4")
    outcome = rig.manager.cycle()
    assert rig.executor.refused_batches == 1
    assert rig.executor.in_flight() == []
    assert outcome.kind != "act"
    # the fenced write dropped the moves: a newer leader's plan is the truth
    rig.manager.cycle()
    assert rig.executor.forgotten == 1 and rig.executor.active() == []
    rig.executor.owned = ThrottleRecord.from_field(OWNED)
    rig.coordinator.verified = False
    rig.manager.cycle()
    assert rig.executor.released == []


def test_moves_are_dropped_when_leadership_is_lost_and_adopted_when_it_returns(
    rig: Rig,
) -> None:
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    assert len(rig.executor.active()) == 2
    rig.coordinator.lose("the leader znode was deleted or taken over")
    outcome = rig.manager.cycle()
    assert outcome.kind == "standby"
    assert rig.executor.forgotten == 1 and rig.executor.active() == []
    rig.coordinator.acquire(EPOCH + 1)
    rig.manager.cycle()
    assert len(rig.executor.active()) == 2  # the same two moves, from the stored plan
    assert rig.summaries()[-2].startswith("adopted the in-flight plan of epoch 3 by m1")


def test_run_once_logs_each_outcome_once(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    class Recorder:
        def info(self, event: str, **fields: Any) -> None:
            events.append((event, fields))

        warning = info

    monkeypatch.setattr("manager.daemon.manager.log", Recorder())
    rig.sources.dead = {4}
    outcome = rig.manager.run_once()
    assert outcome is not None and outcome.kind == "act"
    assert [e for e, _ in events] == ["cycle"]
    assert events[0][1]["outcome"] == "act"
    assert events[0][1]["sentence"] == outcome.sentence
    assert events[0][1]["reasons"] == ["broker_dead"]


def test_a_refusal_names_its_reasons_in_the_sentence(tmp_path: Path) -> None:
    rig = Rig(tmp_path, max_dead_brokers=0)
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "refuse"
    assert outcome.sentence == "refuse (heal): refusing to act: too_many_dead_brokers"
    assert rig.executor.submitted == []
    # Its alert record waits for the refusal to last refusal_alert_after_s (120 s, as
    # KmedicRefusingToHeal waits 2m): found by the soak, raised on a first cycle for an
    # outage that cleared in seconds.
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(100)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.sources.dead = set()  # back: the next spell counts anew
    rig.manager.cycle()
    rig.sources.dead = {4}
    rig.manager.cycle()
    rig.clock.advance(100)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(20)
    rig.manager.cycle()
    assert rig.summaries("alert_raised")[0].startswith("alert refused:too_many_dead_brokers")


def _gauge(rig: Rig, name: str) -> float | None:
    return rig.manager.metrics.registry.get_sample_value(name, {"cluster": "c"})


def test_a_broker_inside_its_grace_period_is_a_wait_audited_once_never_paged(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, dead_grace_ms=2 * 3_600_000)
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "wait"
    assert outcome.sentence == (
        "wait (heal): broker 4 has been dead 3600 s of its 7200 s grace period (3600 s left)"
    )
    assert _gauge(rig, "kmedic_waiting_brokers") == 1
    assert _gauge(rig, "kmedic_refusing_to_heal") == 0
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(30)
    assert rig.manager.cycle().kind == "wait"
    assert len(rig.summaries()) == 2  # the mode, and the wait when it started: not every cycle
    rig.sources.dead = set()
    assert rig.manager.cycle().kind == "noop"
    assert rig.summaries()[2:] == [
        "wait over: broker 4 is back",
        "noop: every broker is alive and within its limits",
    ]
    assert _gauge(rig, "kmedic_waiting_brokers") == 0
    assert rig.executor.submitted == []


def test_a_wait_is_audited_again_when_a_brokers_class_changes(tmp_path: Path) -> None:
    """Found building bench_oracle: a broker killed, then seen starting by its agent, waits as a
    restart (up to its cap, past the timer) - and the audit said only the first wait's class."""
    rig = Rig(tmp_path, dead_grace_ms=2 * 3_600_000)
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "wait"
    starting = {
        "state": "starting",
        "broker_state": 1,
        "logs_to_recover": None,
        "segments_to_recover": None,
        "down_since_ms": None,
        "listening": True,
        "restarts": 1,
        "restart_window_s": 600.0,
        "progress_ms": NOW_MS,
    }
    rig.sources.dead_process[4] = starting
    rig.clock.advance(30)
    assert rig.manager.cycle().kind == "wait"
    rig.clock.advance(30)
    assert rig.manager.cycle().kind == "wait"  # the same class: not told again
    waits = [r for r in rig.sink.records if r.summary.startswith("wait")]
    told = [[x for x in r.reasons if x.startswith("dead_broker_evidence")] for r in waits]
    assert len(told) == 2, told
    assert "; unknown: " in told[0][0] and "; restarting: " in told[1][0], told


def test_a_wait_ends_in_a_heal_once_the_grace_period_is_over(tmp_path: Path) -> None:
    rig = Rig(tmp_path, dead_grace_ms=2 * 3_600_000)
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "wait"
    rig.clock.advance(3_600)
    assert rig.manager.cycle().kind == "act"
    assert rig.summaries()[2] == "wait over: broker 4 is past its grace period"
    assert sorted(m.tp for m in rig.executor.submitted) == DEAD_BROKERS_PARTITIONS


def test_a_zookeeper_outage_is_audited_once_by_the_instance_that_leads_after_it(
    rig: Rig,
) -> None:
    rig.sources.dead = {4}
    rig.coordinator.connected = False
    for _ in range(3):
        assert rig.manager.cycle().kind == "blind"
        rig.clock.advance(5)
    assert rig.sink.records == []  # nobody can prove it leads: nobody writes
    # and it does not claim to lead: its kmedic_is_leader is 0 while it is cut off
    registry = rig.manager.metrics.registry
    assert registry.get_sample_value("kmedic_is_leader", {"cluster": "c"}) == 0
    assert registry.get_sample_value("kmedic_zookeeper_connected", {"cluster": "c"}) == 0
    rig.coordinator.connected = True
    rig.manager.cycle()
    [outage] = [r for r in rig.sink.records if "ZooKeeper" in r.summary]
    assert outage.kind == "decision"
    assert outage.summary == (
        "refuse: nothing was done for 15s (3 cycles) while ZooKeeper was unreachable: "
        "no instance could prove it leads; 1 dead brokers waited"
    )
    assert outage.reasons[0].startswith("coordination_unreachable: from ")
    assert outage.details == {"from_ms": NOW_MS, "to_ms": NOW_MS + 15_000, "cycles": 3}
    rig.manager.cycle()
    assert len([r for r in rig.sink.records if "ZooKeeper" in r.summary]) == 1


def test_a_standby_after_the_outage_leaves_it_to_the_leader(rig: Rig) -> None:
    rig.coordinator.connected = False
    rig.manager.cycle()
    rig.coordinator.connected = True
    rig.coordinator.is_leader = False
    assert rig.manager.cycle().kind == "standby"
    rig.coordinator.is_leader = True
    rig.manager.cycle()
    assert not [r for r in rig.sink.records if "ZooKeeper" in r.summary]


def test_the_leader_gauge_follows_leadership_at_once_not_at_the_next_cycle(rig: Rig) -> None:
    rig.coordinator.is_leader = False
    rig.manager.cycle()
    assert _gauge(rig, "kmedic_is_leader") == 0
    rig.coordinator.acquire(EPOCH + 1)  # no cycle in between
    assert _gauge(rig, "kmedic_is_leader") == 1
    assert _gauge(rig, "kmedic_fencing_epoch") == EPOCH + 1
    rig.coordinator.lose("the leader znode was deleted or taken over")
    assert _gauge(rig, "kmedic_is_leader") == 0


def test_a_leader_cut_off_from_zookeeper_stops_claiming_to_lead_while_a_cycle_runs(
    rig: Rig,
) -> None:
    """No callback and no new cycle when the connection drops (kazoo's SUSPENDED); a cycle may
    be waiting on a dead broker meanwhile, and the gauge must not say 1 beside the new
    leader's (cc33)."""
    rig.manager.cycle()
    assert _gauge(rig, "kmedic_is_leader") == 1
    assert _gauge(rig, "kmedic_zookeeper_connected") == 1
    rig.coordinator.connected = False
    assert _gauge(rig, "kmedic_is_leader") == 0
    assert _gauge(rig, "kmedic_zookeeper_connected") == 0


def test_a_new_leader_resumes_the_watchdogs_clock_and_avoids_a_stalled_destination(
    rig: Rig,
) -> None:
    rig.sources.dead = {4}
    stalled_since = int(NOW_S * 1000) - 200_000
    moves = [
        {
            "topic": "t",
            "partition": 1,
            "target": [2, 3, 1],
            "size_bytes": 10,
            "progress": {"advanced_ms": stalled_since, "copied": {"3": 0}},
        },
        {"topic": "t", "partition": 2, "target": [3, 2, 1], "size_bytes": 20},
    ]
    rig.coordinator.stored = _stored_plan(moves, [])
    rig.coordinator.acquire(EPOCH + 1)
    rig.executor.stalled = {3: stalled_since}
    rig.manager.cycle()
    # The predecessor's record, not a fresh clock: the move is as stalled as it was.
    assert rig.executor.states[("t", 1)].progress == MoveProgress(stalled_since, {3: 0})
    assert rig.executor.states[("t", 2)].progress is None
    # A destination the watchdog gave up on is marked in the snapshot the planner reads.
    snap = rig.manager.last_snapshot
    assert snap is not None
    assert {b.id: b.stalled_at_ms for b in snap.brokers if b.stalled_at_ms} == {3: stalled_since}


def test_a_broker_away_within_its_grace_has_its_catch_up_throttled_until_in_sync(
    tmp_path: Path,
) -> None:
    """Armed while broker 4 is down (its first fetch back is held), recorded in a plan created
    for it, audited once when it starts and once when it ends, then released."""
    rig = Rig(tmp_path, dead_grace_ms=2 * 3_600_000)  # broker 4 has been down for an hour
    rig.sources.dead = {4}
    rig.manager.cycle()
    assert [c.tp for c in rig.executor.catch_ups] == [("t", 1), ("t", 2)]
    [(plan, expected_version)] = rig.coordinator.plans.writes
    assert expected_version is None and plan["moves"] == []
    assert plan["throttles"]["rates"] == [{"broker": 4, "config": FOLLOWER_RATE, "value": "1000"}]
    [started] = [r for r in rig.sink.records if r.kind == "catch_up"]
    assert started.summary.startswith(
        "broker 4 is down within its grace: if it returns, its catch-up on 2 partitions"
    )
    assert started.partitions == ("t:1", "t:2")
    rig.manager.cycle()  # still away: said once
    assert len([r for r in rig.sink.records if r.kind == "catch_up"]) == 1
    rig.sources.dead = set()  # back, and in sync
    rig.manager.cycle()
    assert rig.executor.catch_ups == []
    assert rig.executor.released and rig.executor.owned == ThrottleRecord()
    [ended] = [r for r in rig.sink.records if r.kind == "catch_up"][1:]
    assert ended.summary == (
        "broker 4's catch-up throttle is lifted: it caught up (2 partitions behind when armed)"
    )
    assert rig.coordinator.plans.writes[-1][0]["throttles"] == {"replicas": [], "rates": []}


def test_a_catch_up_armed_for_a_broker_that_never_returns_is_lifted_when_its_grace_ends(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, dead_grace_ms=3_600_000 + 30_000)  # down an hour: 30 s of grace left
    rig.sources.dead = {4}
    rig.manager.cycle()
    assert rig.executor.catch_ups
    rig.clock.advance(60)
    assert rig.manager.cycle().kind == "act"  # healed by moves, with throttles of their own
    assert rig.executor.catch_ups == []
    armed, lifted = [r for r in rig.sink.records if r.kind == "catch_up"]
    assert armed.reasons == ("dead_within_grace",)
    assert lifted.summary == (
        "broker 4's catch-up throttle is lifted: its grace ended: a heal takes its partitions"
    )
    assert lifted.reasons == ("broker_dead",)


def test_no_catch_up_is_throttled_without_a_throttle_or_with_the_switch_off(
    tmp_path: Path,
) -> None:
    for policy, throttle in (({"rejoin": {"throttle_catch_up": False}}, 1_000_000), ({}, None)):
        rig = Rig(tmp_path / str(throttle), dead_grace_ms=2 * 3_600_000, **policy)
        rig.executor.config = rig.executor.config.model_copy(
            update={"throttle_bytes_per_s": throttle}
        )
        rig.sources.dead = {4}
        rig.manager.cycle()
        assert rig.executor.catch_ups == []
        assert rig.coordinator.plans.writes == []
        assert not [r for r in rig.sink.records if r.kind == "catch_up"]


def test_a_clean_stop_lifts_a_catch_up_throttle_but_keeps_a_moves(tmp_path: Path) -> None:
    """Nothing would lift a catch-up's throttle until another manager leads; a move's stays
    for the successor that adopts the move."""
    rig = Rig(tmp_path, dead_grace_ms=2 * 3_600_000)
    rig.sources.dead = {4}
    rig.manager.cycle()
    assert rig.executor.owned != ThrottleRecord()
    rig.manager.stop()
    assert rig.executor.owned == ThrottleRecord() and rig.executor.released
    [lifted] = [r for r in rig.sink.records if r.kind == "catch_up"][1:]
    assert lifted.summary == (
        "broker 4's catch-up throttle is lifted: this manager stops, and no move needs it"
    )
    healing = Rig(tmp_path / "heal")
    healing.sources.dead = {4}  # an hour down, past the grace: healed by moves
    assert healing.manager.cycle().kind == "act"
    healing.manager.stop()
    assert healing.executor.owned != ThrottleRecord() and not healing.executor.released


def test_a_moves_end_is_audited_once_the_stored_plan_no_longer_lists_it(rig: Rig) -> None:
    """Held while the write that removes the move fails, audited when one succeeds; never by
    an instance whose write was fenced (the leader that adopts the plan tells it)."""

    def ends() -> list[str]:
        return [p for r in rig.sink.records if r.kind == "action_completed" for p in r.partitions]

    rig.sources.dead = {4}
    rig.manager.cycle()
    rig.executor.complete_all()
    rig.coordinator.plans.fail = CoordinationError("ZooKeeper connection lost")
    rig.manager.cycle()
    assert rig.executor.active() == [] and ends() == []  # the plan still lists them
    rig.coordinator.plans.fail = None
    rig.manager.cycle()
    assert sorted(ends()) == ["t:1", "t:2"]
    rig.manager.cycle()
    assert sorted(ends()) == ["t:1", "t:2"]  # once


def test_a_moves_end_is_audited_with_the_write_that_unlists_it_before_anything_else(
    rig: Rig,
) -> None:
    """Found by the soak (seed 7): a leader SIGKILLed 0.4 s after the plan write that dropped
    two completed moves, while it set the next batch's throttles and started it, never told
    their ends (held for the next observe); its successor did not either (no longer listed)."""

    def ends() -> list[str]:
        return [p for r in rig.sink.records if r.kind == "action_completed" for p in r.partitions]

    rig.sources.dead = {4}
    rig.manager.cycle()
    rig.executor.complete_all()
    rig.manager.keeper.step()  # the moves end, and the sync writes the plan without them
    assert sorted(ends()) == ["t:1", "t:2"]  # told with that write, no observe in between


def test_a_fenced_leader_leaves_its_moves_ends_to_its_successor(rig: Rig) -> None:
    rig.sources.dead = {4}
    rig.manager.cycle()
    rig.executor.complete_all()
    rig.coordinator.plans.fail = FencedError("instance m1 holds epoch 3 but a newer leader exists")
    rig.manager.cycle()
    assert not [r for r in rig.sink.records if r.kind == "action_completed"]
    rig.coordinator.plans.fail, rig.coordinator.is_leader = None, False  # a successor leads
    rig.manager.cycle()  # drops the moves, and what it held of them
    assert not [r for r in rig.sink.records if r.kind == "action_completed"]
    assert rig.executor.forgotten == 1


def test_a_quorum_election_is_refused_each_cycle_and_pages_only_past_the_bound(
    rig: Rig,
) -> None:
    # The active controller died: the voters elect a new leader within seconds, and Kafka
    # commits nothing meanwhile. Each such cycle is a refusal, audited; a page waits for the
    # same bound as a blind spell (blind_alert_after_s, 60 s by default).
    rig.sources.quorum = Quorum(state="leaderless", error="no quorum leader answered")
    outcome = rig.manager.cycle()
    assert outcome.kind == "refuse"
    assert "quorum_without_leader" in outcome.reasons
    rig.clock.advance(30)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.sources.quorum = Quorum(state="led", leader=101)  # elected: the next spell counts anew
    rig.manager.cycle()
    rig.sources.quorum = Quorum(state="leaderless", error="no quorum leader answered")
    rig.clock.advance(40)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(60)
    rig.manager.cycle()
    [alert] = rig.summaries("alert_raised")
    assert alert.startswith("alert refused:quorum_without_leader: the KRaft controller quorum")


def test_unexplained_lag_is_refused_each_cycle_and_pages_only_once_it_lasts(rig: Rig) -> None:
    # Broker 3 cut off its leaders by the network: live, out of every ISR. Moving data would
    # not mend the link; each cycle refuses, and the page waits for lag_alert_after_s (300 s,
    # as KmedicUnexplainedUnderReplication waits 5m): a link back within it pages nobody.
    rig.sources.out_of_sync = {3}
    outcome = rig.manager.cycle()
    assert outcome.kind == "refuse" and "unexplained_under_replication" in outcome.reasons
    rig.clock.advance(200)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.sources.out_of_sync = set()  # the link is back: the next spell counts anew
    assert rig.manager.cycle().kind != "refuse"
    rig.sources.out_of_sync = {3}
    rig.manager.cycle()
    rig.clock.advance(250)
    rig.manager.cycle()
    assert rig.summaries("alert_raised") == []
    rig.clock.advance(60)
    rig.manager.cycle()
    [alert] = rig.summaries("alert_raised")
    assert alert.startswith("alert refused:unexplained_under_replication: ")
    assert "broker 3 behind leader" in alert


def test_each_cycle_says_how_long_it_spent_observing(rig: Rig) -> None:
    """The cycle's time has a part of its own for the observation (the Admin answers, the feeds'
    copy, the snapshot), so a slow cycle says whether reading or deciding took the time."""
    observe = rig.sources.observe

    def slow_observe(*args: Any, **kwargs: Any) -> Any:
        rig.clock.advance(2.5)  # the Admin answers took 2.5 s
        return observe(*args, **kwargs)

    rig.sources.observe = slow_observe  # type: ignore[method-assign]
    rig.manager.cycle()
    rig.manager.cycle()
    assert _gauge(rig, "kmedic_observe_duration_seconds_count") == 2
    assert _gauge(rig, "kmedic_observe_duration_seconds_sum") == 5.0
    assert _gauge(rig, "kmedic_cycle_duration_seconds_sum") == 5.0
    # And by stage, as the sources timed their last observation.
    registry = rig.manager.metrics.registry
    by_stage = {
        stage: registry.get_sample_value(
            "kmedic_observe_stage_seconds", {"cluster": "c", "stage": stage}
        )
        for stage in ("admin", "feeds")
    }
    assert by_stage == {"admin": 0.25, "feeds": 0.5}
