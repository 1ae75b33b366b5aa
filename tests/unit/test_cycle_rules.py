"""The daemon's own rules over a decision (degraded mode, one plan at a time), and the audit
trail's alert bookkeeping."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from manager_fakes import MemorySink
from planner_fixtures import broker, make, part

from manager.analyzer.health import alerts_for, heal_needed
from manager.analyzer.situation import degrade, wait_for_plan
from manager.audit.log import AuditLog, AuditRecord
from manager.daemon.alert_timing import AlertTiming
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.blind import blind
from manager.executor.move_state import MoveState
from manager.model.decision import Decision, Reason
from manager.model.moves import Move
from manager.model.snapshot import Snapshot
from manager.web.metrics import ManagerMetrics

MOVE = Move("t", 0, (2, 3), before=(1, 2))


def act(kind: str) -> Decision:
    return Decision("act", kind, f"{kind} plan", (Reason("x", "y"),), (MOVE,), 10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("failover", "reliable", "expect"),
    [
        (False, True, "act"),
        (True, True, "refuse"),
        (False, False, "refuse"),
        (True, False, "refuse"),
    ],
)
def test_degraded_mode_pauses_balancing(failover: bool, reliable: bool, expect: str) -> None:
    out = degrade(act("balance"), audit_on_failover=failover, coordination_reliable=reliable)
    assert out.outcome == expect
    if expect == "refuse":
        assert [r.code for r in out.reasons] == ["degraded_mode"]
        assert out.actions == ()


def test_degraded_mode_still_heals() -> None:
    heal = act("heal")
    assert degrade(heal, audit_on_failover=True, coordination_reliable=False) is heal


def test_degraded_mode_still_demotes_a_slow_broker() -> None:
    """Found by CI (test_network_faults.py's slow link, the audit topic led by the slow
    broker): the audit's first write timed out on the slow link, the log went to its spool,
    and degraded mode refused the demotion that would have taken the audit topic's leadership
    off that broker - three times, 9 s, until the spool replayed."""
    demotion = replace(act("balance"), demotes_slow=(4,))
    assert degrade(demotion, audit_on_failover=True, coordination_reliable=False) is demotion


def test_a_new_plan_waits_for_the_running_one() -> None:
    out = wait_for_plan(act("heal"), running=2, queued=5)
    assert out.outcome == "noop"
    assert out.actions == ()
    assert "2 moves running, 5 queued" in out.summary
    idle = act("heal")
    assert wait_for_plan(idle, running=0, queued=0) is idle


def test_alerts_are_recorded_when_raised_and_when_cleared(tmp_path: Path) -> None:
    sink = MemorySink()
    trail = AuditTrail(
        AuditLog(sink, tmp_path), ManagerMetrics("c"), cluster="c", instance="i", epoch=lambda: 4
    )
    trail.alerts({"a": "A happened"})
    trail.alerts({"a": "A happened", "b": "B happened"})
    trail.alerts({"b": "B happened"})
    trail.alerts({})
    kinds = [(r.kind, r.reasons) for r in sink.records]
    assert kinds == [
        ("alert_raised", ("a",)),
        ("alert_raised", ("b",)),
        ("alert_cleared", ("a",)),
        ("alert_cleared", ("b",)),
    ]
    assert {r.epoch for r in sink.records} == {4}


def test_a_blind_cycle_refuses_names_the_failure_and_alerts(tmp_path: Path) -> None:
    decision = blind("DescribeCluster timed out 3 times")
    assert decision.outcome == "refuse" and decision.actions == ()
    assert [r.code for r in decision.reasons] == ["cluster_unobservable"]
    assert "DescribeCluster timed out 3 times" in decision.reasons[0].message
    assert set(alerts_for(decision, audit_on_failover=True)) == {
        "refused:cluster_unobservable",
        "audit_on_failover",
    }
    sink = MemorySink()
    trail = AuditTrail(
        AuditLog(sink, tmp_path), ManagerMetrics("c"), cluster="c", instance="i", epoch=lambda: 2
    )
    trail.decision(decision, None)
    (record,) = sink.records
    assert record.kind == "decision"
    assert record.summary.startswith("refuse: nothing is decided")
    assert record.reasons[0].startswith("cluster_unobservable: the cluster cannot be observed")
    assert record.details["dead_brokers"] == [] and record.details["snapshot_taken_at"] is None


def test_an_unknown_heal_need_keeps_the_refusing_to_heal_gauge() -> None:
    metrics = ManagerMetrics("c")

    def refusing() -> float | None:
        return metrics.registry.get_sample_value("kmedic_refusing_to_heal", {"cluster": "c"})

    metrics.record_decision("refuse", ["too_many_dead_brokers"], heal_needed=True)
    assert refusing() == 1
    metrics.record_decision("refuse", ["cluster_unobservable"], heal_needed=None)
    assert refusing() == 1
    metrics.record_decision("noop", [], heal_needed=False)
    assert refusing() == 0


def test_a_partial_heal_keeps_refusing_to_heal_and_names_what_it_left() -> None:
    metrics = ManagerMetrics("c")
    metrics.record_decision("act", ["broker_dead", "no_live_replica"], heal_needed=True)
    assert metrics.registry.get_sample_value("kmedic_refusing_to_heal", {"cluster": "c"}) == 0
    metrics.record_decision("act", ["broker_dead"], heal_needed=True, unhealed=True)
    assert metrics.registry.get_sample_value("kmedic_refusing_to_heal", {"cluster": "c"}) == 1
    partial = Decision(
        "act",
        "heal",
        "heal dead brokers 3: 1 partitions reassigned",
        (Reason("broker_dead", "broker 3 is dead"),),
        unhealed=(
            Reason("no_live_replica", "gone:0 has no live leader to copy from"),
            Reason("plan_violates_constraints", "pay:1: no broker of its isolation group"),
        ),
    )
    alerts = alerts_for(partial, audit_on_failover=False)
    assert list(alerts) == ["refused:no_live_replica", "refused:plan_violates_constraints"]
    assert "gone:0 has no live leader" in alerts["refused:no_live_replica"]
    assert "pay:1: no broker" in alerts["refused:plan_violates_constraints"]


def test_a_dead_broker_that_holds_nothing_needs_no_heal() -> None:
    """After a heal the dead broker holds no replica: a refusal for stale loads (which only
    holds back balancing) is not refusing to heal (it paged after every heal)."""
    healed = make(
        [broker(1, "/r1"), broker(2, "/r2"), broker(3, "/r1", alive=False)],
        {"t": [part(0, [1, 2])]},
    )
    assert not heal_needed(healed)
    still = make(
        [broker(1, "/r1"), broker(2, "/r2"), broker(3, "/r1", alive=False)],
        {"t": [part(0, [1, 3], alive={1, 2})]},
    )
    assert heal_needed(still)
    disk = make([broker(1, "/r1"), broker(2, "/r2")], {"t": [part(0, [1, 2])]})
    data = disk.model_dump()
    data["topics"][0]["partitions"][0]["offline_replicas"] = [2]
    assert heal_needed(Snapshot.model_validate(data))


class _SwitchableSink(MemorySink):
    """A primary that can be down (takes nothing) or up."""

    def __init__(self) -> None:
        super().__init__()
        self.up = True

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        return super().send(records, timeout_s) if self.up else 0


def test_a_short_audit_failover_is_counted_not_alerted(tmp_path: Path) -> None:
    """A broker death moves the audit topic's leadership: records spool for seconds. That
    paged through audit_on_failover 2 s after a routine kill; now only past the bound."""
    sink = _SwitchableSink()
    metrics = ManagerMetrics("c")
    log = AuditLog(sink, tmp_path, retry_interval_s=0.0)
    trail = AuditTrail(log, metrics, cluster="c", instance="i", epoch=lambda: 1)
    timing = AlertTiming(
        metrics,
        epoch=lambda: 1,
        failover_spell=lambda: log.failover_spell,
        failover_alert_after_s=60,
    )
    assert not timing.failover_alerting(now=0.0)
    sink.up = False
    trail.record("decision", "while the audit topic has no leader")
    assert log.on_failover
    assert not timing.failover_alerting(now=10.0)
    assert not timing.failover_alerting(now=69.0)
    assert timing.failover_alerting(now=70.0)  # 60 s on the failover sink: now it is news
    assert metrics.registry.get_sample_value("kmedic_audit_failovers_total", {"cluster": "c"}) == 1
    sink.up = True
    log.replay(force=True)
    assert not log.on_failover and not timing.failover_alerting(now=71.0)
    assert [r.summary for r in sink.records] == ["while the audit topic has no leader"]


def test_a_spell_replayed_and_the_next_begun_between_two_cycles_count_apart(
    tmp_path: Path,
) -> None:
    """Two audit-topic outages back to back, then its leader killed: the spool was replayed
    empty 1 s before the next failover began, no cycle looking in between, and the alert came
    60 s after the first spell's start, 3 s into the third (the 60-minute soak of seed 7401)."""
    sink = _SwitchableSink()
    metrics = ManagerMetrics("c")
    log = AuditLog(sink, tmp_path, retry_interval_s=0.0)
    trail = AuditTrail(log, metrics, cluster="c", instance="i", epoch=lambda: 1)
    timing = AlertTiming(metrics, epoch=lambda: 1, failover_spell=lambda: log.failover_spell)
    sink.up = False
    trail.record("decision", "the audit topic's brokers killed")
    assert not timing.failover_alerting(now=0.0)
    assert not timing.failover_alerting(now=56.0)
    sink.up = True
    assert log.replay(force=True) == 1  # back, replayed: the spell is over
    sink.up = False
    trail.record("decision", "its new leader killed a second later")
    assert not timing.failover_alerting(now=61.0)  # a new spell, seen now
    assert not timing.failover_alerting(now=120.0)
    assert timing.failover_alerting(now=121.0)
    assert metrics.registry.get_sample_value("kmedic_audit_failovers_total", {"cluster": "c"}) == 2


def test_an_instance_leading_again_counts_the_failover_from_its_new_epoch(tmp_path: Path) -> None:
    """An instance that led, lost its lease with records spooled, and led again minutes later
    raised audit_on_failover 4 s into its new epoch: its clock had run on from its last one."""
    sink = _SwitchableSink()
    log = AuditLog(sink, tmp_path, retry_interval_s=0.0)
    epoch = [1]
    trail = AuditTrail(log, ManagerMetrics("c"), cluster="c", instance="i", epoch=lambda: epoch[0])
    timing = AlertTiming(
        ManagerMetrics("c"), epoch=lambda: epoch[0], failover_spell=lambda: log.failover_spell
    )
    sink.up = False
    trail.record("decision", "spooled as the first epoch ends")
    assert not timing.failover_alerting(now=0.0)
    epoch[0] = 3  # minutes later, leading again; the audit topic's brokers are down meanwhile
    assert not timing.failover_alerting(now=300.0)
    assert not timing.failover_alerting(now=359.0)
    assert timing.failover_alerting(now=360.0)


def test_what_a_partial_heal_left_stays_paged_while_its_healed_part_moves(
    tmp_path: Path,
) -> None:
    """A partial heal's moves run; the planner waits for them and plans nothing, so it cannot
    say what stays unhealed: the partial-heal alert and refusing-to-heal hold until a plan is
    made again (they went off while the moves ran and came back after)."""
    from manager_fakes import Rig

    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    rig.sources.replicas[("t", 3)] = (4,)  # its only replica died with broker 4
    first = rig.manager.cycle()
    assert first.kind == "act", first.sentence
    assert rig.manager.trail.active_alerts == {}  # held until it lasts refusal_alert_after_s
    refusing = {"cluster": "c"}
    registry = rig.manager.metrics.registry
    assert registry.get_sample_value("kmedic_refusing_to_heal", refusing) == 1
    for _ in range(2):
        rig.clock.advance(rig.cfg.refusal_alert_after_s / 2)
        held = rig.manager.cycle()  # the heal's moves still run
        assert "own reassignments" in held.sentence, held.sentence
        assert registry.get_sample_value("kmedic_refusing_to_heal", refusing) == 1
    assert rig.manager.trail.active_alerts.keys() == {"refused:no_live_replica"}
    assert [r.summary for r in rig.sink.records if r.kind == "alert_cleared"] == []


def test_only_a_hold_for_own_moves_keeps_what_was_left_unhealed() -> None:
    from manager.analyzer.situation import keep_unhealed

    left = (Reason("no_live_replica", "t:3 has no live replica to copy from"),)
    partial = Decision("act", "heal", "heal", (Reason("broker_dead", "4"),), unhealed=left)
    hold = Decision("noop", None, "waiting", (Reason("own_reassignment_in_progress", "running"),))
    assert keep_unhealed(hold, partial).unhealed == left
    assert keep_unhealed(hold, None).unhealed == ()
    at_rest = Decision("noop", None, "every broker is alive", ())
    assert keep_unhealed(at_rest, partial).unhealed == ()  # a plan was made again


def test_a_move_that_failed_before_it_started_says_so_in_its_record(tmp_path: Path) -> None:
    sink = MemorySink()
    trail = AuditTrail(
        AuditLog(sink, tmp_path), ManagerMetrics("c"), cluster="c", instance="i", epoch=lambda: 1
    )
    state = MoveState(Move("t", 0, (2, 4)))
    state.original = (2, 3)
    why = "destination broker 4 is not alive"
    trail.move_event("action_failed", state, {"reason": why, "not_started": True})
    trail.move_event("action_failed", state, {"reason": why})
    first, second = sink.records
    assert first.summary == f"move of t:0 [2, 3] -> [2, 4] failed before it started: {why}"
    assert first.details["not_started"] is True
    assert second.summary == f"move of t:0 [2, 3] -> [2, 4] failed: {why}"
