"""The soak's pure parts: a seeded schedule (same seed, same faults; the faults every run
must see), and the invariants over audit records and tallies."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from composition.prometheus import FiredAlert
from composition.soak.appended import Appended
from composition.soak.cuts import Cut
from composition.soak.invariants import (
    Warranted,
    alerts,
    end_state,
    heal_times,
    in_order,
    lease_as_the_brokers_saw,
    lease_verdicts,
    messages,
    no_duplicate_move,
    on_schedule,
    one_actor,
    one_end_per_move,
    pages,
    quiet_as_kafka_saw,
    quiet_when_cut,
    roles_running,
    tail_readable,
)
from composition.soak.report import run_wide
from composition.soak.request_log import Seen
from composition.soak.run import SoakSettings, cluster_spec
from composition.soak.schedule import EPISODE_S, NETWORK_KINDS, Overlap, draw, peer_of
from kmedic.localcluster.layout import plan_nodes
from manager.audit.log import AuditRecord
from manager.model.replication_settings import ReplicationSettings, settings_off

BROKERS = [1, 2, 3, 4, 5, 6]


def schedule(seed: int, length_s: float = 240.0):  # type: ignore[no-untyped-def]
    return draw(seed, length_s=length_s, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0)


@given(st.integers(min_value=0, max_value=2**32), st.floats(min_value=60, max_value=3600))
def test_a_seed_draws_one_schedule_and_every_run_kills_a_manager_mid_heal(
    seed: int, length_s: float
) -> None:
    drawn = schedule(seed, length_s)
    assert drawn == schedule(seed, length_s)
    first = drawn.episodes[0]
    assert first.kind == "heal"
    assert next(o.kind for o in first.overlaps) == "manager_kill"
    assert drawn.fault_count() >= 3  # the heal, the manager kill, one more overlapping
    for episode in drawn.episodes:
        assert episode.broker in BROKERS or episode.kind == "audit_outage"
        if episode.kind == "bounce":
            assert 0 < episode.hold_s < 15.0  # inside the grace period
        if episode.kind == "pause":
            assert 0 < episode.hold_s < 9.0  # shorter than the broker session timeout
        if episode.kind == "hang":
            assert 9.0 < episode.hold_s < 12.0  # fenced, back well inside the grace period


@given(st.integers(min_value=0, max_value=2**32))
def test_without_the_spark_job_no_fault_kills_it(seed: int) -> None:
    drawn = draw(
        seed, length_s=1800, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0, stream=False
    )
    kinds = [o.kind for e in drawn.episodes for o in e.overlaps]
    assert "stream_kill" not in kinds
    assert drawn.episodes[0].overlaps[1].kind == "zookeeper_pause"


def test_the_schedule_is_printed_and_saved() -> None:
    drawn = schedule(7, 600.0)
    lines = drawn.lines()
    assert lines[0].startswith("1. broker ") and "killed past its grace (a heal), with" in lines[0]
    assert '"seed": 7' in drawn.dumps()


def record(
    kind: str, t: int, epoch: int, instance: str, part: str = "t:0", to=(1, 2)
) -> AuditRecord:  # type: ignore[no-untyped-def]
    return AuditRecord(
        time_ms=t,
        cluster="c",
        instance=instance,
        epoch=epoch,
        kind=kind,  # type: ignore[arg-type]
        summary=f"{kind} {part}",
        partitions=(part,),
        after={"replicas": list(to)},
    )


def test_a_successor_acting_after_its_predecessor_is_one_actor() -> None:
    records = [
        record("action_started", 1, 1, "a"),
        record("action_progress", 5, 2, "b"),
        record("action_completed", 9, 2, "b"),
    ]
    assert one_actor(records).held
    assert no_duplicate_move(records).held


def test_overlapping_epochs_and_a_shared_epoch_are_found() -> None:
    overlap = [record("action_started", 1, 1, "a"), record("action_started", 3, 2, "b", "t:1"),
               record("action_completed", 5, 1, "a")]  # fmt: skip
    (problem,) = one_actor(overlap).problems
    assert problem == "epoch 1 acted until 5, after epoch 2 began acting at 3 (2 ms)"
    shared = [record("action_started", 1, 3, "a"), record("action_started", 2, 3, "b", "t:1")]
    assert one_actor(shared).problems == ("epoch 3 acted from 2 instances: ['a', 'b']",)


def test_a_move_started_again_while_it_runs_is_a_duplicate() -> None:
    again = [record("action_started", 1, 1, "a"), record("action_started", 4, 2, "b")]
    (problem,) = no_duplicate_move(again).problems
    assert problem == "t:0 -> [1, 2] started again by b (epoch 2) while it was running"
    after_done = [*again[:1], record("action_completed", 2, 1, "a"), again[1]]
    assert no_duplicate_move(after_done).held


def test_a_moves_end_told_again_by_the_leader_that_adopted_it_is_found() -> None:
    told = [record("action_started", 1, 1, "a"), record("action_completed", 3, 1, "a")]
    assert one_end_per_move(told).held
    again = [*told, record("action_progress", 5, 2, "b"), record("action_completed", 6, 2, "b")]
    (problem,) = one_end_per_move(again).problems
    assert (
        problem == "t:0: action_completed told again by b (epoch 2), 3 ms after a (epoch 1) "
        "told its action_completed"
    )
    # A new move of the partition, started and ended, is its own.
    later = [*told, record("action_started", 8, 2, "b"), record("action_failed", 9, 2, "b")]
    assert one_end_per_move(later).held
    # A move of the next plan that failed before it started (its destination died while it
    # waited) is its own record too (the 60-minute shaped run: after a completed move).
    unstarted = record("action_failed", 8, 2, "b").model_copy(
        update={"details": {"not_started": True}}
    )
    assert one_end_per_move([*told, unstarted]).held
    (problem,) = one_end_per_move([*told, unstarted, record("action_failed", 9, 2, "b")]).problems
    assert problem.startswith("t:0: action_failed told again by b (epoch 2), 1 ms after b")


def test_alerts_lost_messages_and_the_end_state_are_told_with_numbers() -> None:
    raised = AuditRecord(
        time_ms=7, cluster="c", instance="a", epoch=1, kind="alert_raised",
        summary="alert refused:x: y", reasons=("refused:x",),
    )  # fmt: skip
    assert alerts([raised]).problems == ("7: alert refused:x: y (a, epoch 1)",)
    assert alerts([]).held
    # Raised where an episode warranted a page (7 ms: inside 0-0.001 s and its slack).
    assert alerts([raised], [Warranted("episode 2", ("P",), 0.0, 0.001)]).held
    assert not alerts([raised], [Warranted("episode 2", ("P",), 0.008, 1.0)]).held
    assert messages({"a": 2, "b": 0}, {"a": 10, "b": 5}).problems == (
        "a: 2 of 10 acknowledged messages never consumed",
    )
    assert messages({"a": 0}, {"a": 0}).problems == ("a: no message was acknowledged",)
    whole = end_state([], [], [], 0)
    assert whole.held
    assert end_state(["t:0"], ["t:1"], ["broker 1 leader rate"], 2).problems == (
        "1 partitions not fully replicated: ['t:0']",
        "1 reassignments still running: ['t:1']",
        "throttles left in place: ['broker 1 leader rate']",
        "2 audit records left in the spool",
    )
    assert end_state([], [], [], 0, ["soak.isolated:2 on [1, 4, 5]"]).problems == (
        "placement constraints broken: ['soak.isolated:2 on [1, 4, 5]']",
    )
    assert end_state([], [], [], -1).problems == (
        "a manager's audit spool could not be read (its /metrics did not answer)",
    )


def test_every_record_must_be_printed_once_by_actions_tail() -> None:
    records = [record("action_started", 1, 1, "a"), record("action_completed", 2, 1, "a")]
    ids = [r.id for r in records]
    assert tail_readable(records, ids, "").held
    (missing,) = tail_readable(records, ids[:1], "").problems
    assert missing == f"1 of 2 records not printed: ['{ids[1]}']"
    (twice,) = tail_readable(records, [*ids, ids[0]], "").problems
    assert twice == f"1 records printed more than once: ['{ids[0]}']"
    assert tail_readable(records, ids, "exit 2: no Kafka").problems == (
        "kmedic actions tail failed: exit 2: no Kafka",
    )


def test_a_role_that_died_before_the_end_is_named() -> None:
    assert roles_running([]).held
    assert roles_running(["stream", "m1"]).problems == (
        "m1 is not running at the end",
        "stream is not running at the end",
    )


def test_each_managers_records_must_keep_their_order() -> None:
    a1, a2 = record("action_started", 1, 1, "a"), record("action_completed", 5, 1, "a")
    b1 = record("action_started", 3, 2, "b")
    assert in_order([a1, b1, a2]).held, "two writers interleave; each in its own order"
    (problem,) = in_order([a2, a1]).problems
    assert problem == "a (epoch 1): action_started of 1 after action_completed of 5 (via primary)"


def test_an_audit_outage_is_drawn_inside_the_grace_and_can_be_asked_for() -> None:
    drawn = schedule(11, 3600.0)
    outages = [e for e in drawn.episodes if e.kind == "audit_outage"]
    assert outages, "an hour's schedule draws every kind"
    assert all(e.broker == 0 and 3.0 <= e.hold_s <= 4.5 for e in outages)
    asked = drawn.with_audit_outage(15.0)
    assert asked.episodes[:-1] == drawn.episodes
    assert asked.episodes[-1].kind == "audit_outage" and asked.episodes[-1].hold_s == 4.5


@given(st.integers(min_value=0, max_value=2**32))
def test_controller_faults_overlap_some_episodes_and_leave_the_seeds_episodes_alone(
    seed: int,
) -> None:
    one = draw(seed, length_s=1800, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0)
    three = draw(
        seed, length_s=1800, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0, controllers=3
    )
    assert [(e.kind, e.broker, e.hold_s) for e in three.episodes] == [
        (e.kind, e.broker, e.hold_s) for e in one.episodes
    ]
    for before, after in zip(one.episodes, three.episodes, strict=True):
        added = after.overlaps[len(before.overlaps) :]
        assert after.overlaps[: len(before.overlaps)] == before.overlaps
        assert len(added) <= 1
        for fault in added:
            assert fault.kind in ("voter_kill", "quorum_leader_kill")
            assert 4.0 <= fault.hold_s <= 12.0  # down for seconds, then started again
    assert not any(
        o.kind in ("voter_kill", "quorum_leader_kill") for e in one.episodes for o in e.overlaps
    )


def test_a_long_run_on_three_voters_kills_the_quorum_leader_and_a_voter() -> None:
    drawn = draw(
        4242, length_s=3600, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0, controllers=3
    )
    kinds = [o.kind for e in drawn.episodes for o in e.overlaps]
    assert {"voter_kill", "quorum_leader_kill"} <= set(kinds)
    line = next(line for line in drawn.lines() if "quorum_leader_kill" in line)
    assert "quorum_leader_kill for " in line


def test_an_alert_that_fired_in_prometheus_is_a_page_for_nothing_told_with_its_time() -> None:
    assert pages([]).held
    fired = FiredAlert("KmedicStuckMove", {"cluster": "soak-1", "severity": "page"}, 1_130.0)
    sentence = fired.sentence(1_000.0)
    assert sentence == "KmedicStuckMove{cluster=soak-1, severity=page} firing from +130 s"
    assert pages([fired], since_s=1_000.0).problems == (
        f"{sentence}: a page for nothing (no episode warranted it)",
    )


@given(st.integers(min_value=0, max_value=2**32))
def test_a_session_loss_pauses_zookeeper_past_the_managers_session_alone(seed: int) -> None:
    kwargs = {"length_s": 1800, "brokers": BROKERS, "grace_s": 15.0, "session_timeout_s": 9.0}
    plain = draw(seed, **kwargs)  # type: ignore[arg-type]
    drawn = draw(seed, manager_session_s=6.0, **kwargs)  # type: ignore[arg-type]
    # The same episodes, fewer of them where the losses make them longer than asked.
    kinds = [e.kind for e in drawn.episodes]
    assert kinds == [e.kind for e in plain.episodes][: len(kinds)]
    assert drawn.episodes[0] == plain.episodes[0]  # the first failover stays a manager kill
    for episode in drawn.episodes:
        losses = [o for o in episode.overlaps if o.kind == "session_loss"]
        assert len(losses) <= 1
        for loss in losses:
            assert 12.0 <= loss.hold_s <= 18.0  # two to three sessions
            assert all(o.kind != "zookeeper_pause" for o in episode.overlaps)


@given(st.integers(min_value=0, max_value=2**32))
def test_a_leader_cut_cuts_one_manager_off_zookeeper_past_its_session_alone(seed: int) -> None:
    kwargs = {"length_s": 1800, "brokers": BROKERS, "grace_s": 15.0, "session_timeout_s": 9.0}
    drawn = draw(seed, manager_session_s=6.0, **kwargs)  # type: ignore[arg-type]
    assert not any(o.kind == "leader_cut" for o in drawn.episodes[0].overlaps)
    for episode in drawn.episodes:
        cuts = [o for o in episode.overlaps if o.kind == "leader_cut"]
        assert len(cuts) <= 1
        for cut in cuts:
            assert 12.0 <= cut.hold_s <= 18.0  # two to three of the managers' sessions
            paused = {"zookeeper_pause", "session_loss"}
            assert all(o.kind not in paused for o in episode.overlaps)  # one is cut, not all


def test_a_long_run_cuts_a_leader_off_zookeeper() -> None:
    drawn = draw(
        4242, length_s=3600, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0,
        manager_session_s=6.0,
    )  # fmt: skip
    assert any(o.kind == "leader_cut" for e in drawn.episodes for o in e.overlaps)
    assert any("leader_cut for " in line for line in drawn.lines())


def test_a_manager_cut_off_zookeeper_starts_nothing() -> None:
    cut = Cut("m1", start_ms=10_000, end_ms=25_000, lease_end_ms=13_000)
    fine = [
        record("action_started", 10_500, 3, "m1"),  # a cycle begun before the cut
        record("action_started", 14_000, 4, "m2"),  # the one that took over
        record("action_started", 26_000, 5, "m1"),  # back, and leading again
        record("decision", 20_000, 3, "m1"),  # a refusal: it says what it cannot do
    ]
    assert quiet_when_cut(fine, [cut]).held
    late = record("action_started", 12_000, 3, "m1", part="t:4")
    (problem,) = quiet_when_cut([*fine, late], [cut]).problems
    assert (
        problem == "m1 wrote action_started (action_started t:4) 2000 ms into its cut off ZooKeeper"
    )
    assert quiet_when_cut([late], []).held  # no cut, nothing to judge


@given(st.integers(min_value=0, max_value=2**32))
def test_network_faults_are_drawn_on_a_shaped_cluster_only(seed: int) -> None:
    kwargs = {"length_s": 3600, "brokers": BROKERS, "grace_s": 15.0, "session_timeout_s": 9.0}
    plain = draw(seed, **kwargs)  # type: ignore[arg-type]
    shaped = draw(seed, network=True, **kwargs)  # type: ignore[arg-type]
    assert not any(e.kind in NETWORK_KINDS for e in plain.episodes)
    assert not any(o.kind == "audit_cut" for e in plain.episodes for o in e.overlaps)
    assert shaped.episodes[0] == plain.episodes[0]  # every run's first failover, as before
    for episode in shaped.episodes:
        for cut in [o for o in episode.overlaps if o.kind == "audit_cut"]:
            assert 10.0 <= cut.hold_s <= 40.0
            assert episode.kind != "audit_outage"  # its leader is dead there, not cut off
            assert all(o.kind != "leader_cut" for o in episode.overlaps)
    for episode in shaped.episodes:
        if episode.kind == "peer_cut":
            assert 8.0 <= episode.hold_s <= 40.0
            peer = peer_of(episode.broker)
            assert peer != episode.broker and (peer - 1) % 3 != (episode.broker - 1) % 3
        elif episode.kind == "slow_link":
            assert 20.0 <= episode.hold_s <= 40.0


def test_an_hour_on_a_shaped_cluster_draws_every_network_fault() -> None:
    drawn = draw(
        4242, length_s=3600, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0, network=True
    )
    assert {"isolate", "peer_cut", "slow_link"} <= {e.kind for e in drawn.episodes}
    assert any(o.kind == "audit_cut" for e in drawn.episodes for o in e.overlaps)
    lines = "\n".join(drawn.lines())
    assert "cut off from the controllers past its grace" in lines
    assert "cut off from each other for " in lines and "slowed to a tenth for " in lines


def test_a_cut_manager_is_judged_by_when_kafka_appended_its_records_too() -> None:
    cut = Cut("m1", start_ms=10_000, end_ms=25_000, lease_end_ms=13_000)
    fine = [
        Appended(record("action_started", 9_000, 3, "m1"), 14_000),  # made before: a replay
        Appended(record("action_started", 14_000, 4, "m2"), 14_050),  # the one that took over
        Appended(record("action_started", 26_000, 5, "m1"), 26_010),  # back, leading again
        Appended(record("decision", 20_000, 3, "m1"), 20_010),  # a refusal
    ]
    assert quiet_as_kafka_saw(fine, [cut]).held
    # Made in the cut's first second (a cycle begun before it), appended late: judged by Kafka.
    slow = Appended(record("action_started", 10_400, 3, "m1", part="t:4"), 15_000)
    assert not quiet_as_kafka_saw([*fine, slow], [cut]).held
    assert quiet_when_cut([slow.record], [cut]).held  # which its own times would have let by
    late = Appended(record("action_started", 12_000, 3, "m1", part="t:4"), 12_020)
    (problem,) = quiet_as_kafka_saw([*fine, late], [cut]).problems
    assert problem == (
        "m1 wrote action_started (action_started t:4), appended by Kafka 2020 ms into its cut "
        "off ZooKeeper"
    )
    unread = quiet_as_kafka_saw([], [cut], "the audit topic could not be read: timed out")
    assert unread.problems == ("the audit topic could not be read: timed out",)


def test_a_topic_without_settings_loses_no_acknowledged_write_on_the_soaks_cluster(
    tmp_path: Path,
) -> None:
    # Found by the 60-minute run: the broker default min.insync.replicas was Kafka's 1, so
    # the internal topics (RF 3) were rightly warned of by KmedicUnsafeTopic. Then found
    # again with 2 in every broker's file: the controllers write the cluster-wide default
    # from their own (eligible leader replicas), and theirs was Kafka's 1.
    spec = cluster_spec(SoakSettings(seed=1, length_s=60, workdir=Path("unused")))
    nodes = plan_nodes(spec, tmp_path, None)
    kafka = [n for n in nodes if n.kind in ("broker", "controller")]
    assert {n.kind for n in kafka} == {"broker", "controller"}
    for node in kafka:
        lines = Path(node.config).read_text().splitlines()
        assert "min.insync.replicas=2" in lines, (node.kind, node.node_id)
    broker = Path(next(n for n in kafka if n.kind == "broker").config).read_text().splitlines()
    assert "transaction.state.log.min.isr=2" in broker
    assert "transaction.state.log.min.isr=1" not in broker
    # Found by a 4-minute run's Prometheus: at Kafka's defaults KmedicBrokerReplicationSettingOff
    # stood pending from the start, a warning that would fire in any run past 10 minutes.
    values = dict(line.split("=", 1) for line in broker if "=" in line)
    settings = ReplicationSettings(
        quota_window_s=int(values["replication.quota.window.num"]) * 1.0,
        fetch_backoff_ms=int(values["replica.fetch.backoff.ms"]),
        fetch_wait_ms=int(values["replica.fetch.wait.max.ms"]),
    )
    assert settings_off(1, settings) == []


def test_a_time_box_starts_no_episode_once_its_minutes_are_over(monkeypatch: Any) -> None:
    from composition.soak import run

    schedule = draw(
        4242, length_s=3600, brokers=[1, 2, 3, 4, 5, 6], grace_s=15.0, session_timeout_s=6.0
    )
    started: list[int] = []

    def episode_of_100_s(rig: Any, number: int, episode: Any) -> None:
        started.append(number)
        rig.timeline.started -= 100  # as if the episode took 100 s

    monkeypatch.setattr(run, "run_episode", episode_of_100_s)
    rig = SimpleNamespace()
    done: list[int] = []
    assert run.run_schedule(rig, schedule, done.append, stop_after_s=250) == 3  # type: ignore[arg-type]
    assert started == done == [1, 2, 3]
    assert rig.timeline.events[-1][1] == (
        f"the time box of {250 / 60:g} minutes is over: 3 of {len(schedule.episodes)} episodes ran"
    )
    assert schedule.first(3).episodes == schedule.episodes[:3]
    assert run.run_schedule(rig, schedule, done.append) == len(schedule.episodes)  # type: ignore[arg-type]


def test_a_stream_kill_is_over_once_the_manager_plans_from_valid_loads_again(
    monkeypatch: Any,
) -> None:
    # Found by a shaped run on a busy machine: the Spark job took minutes to write loads
    # again, the next episode's fill was refused on stale loads past the refusal alert's wait.
    from composition.soak import run

    monkeypatch.setattr(run.time, "sleep", lambda s: None)  # the job's 20 s down
    monkeypatch.setattr(run.probes, "wait", _wait_without_pauses)
    wrote, valid = iter([False, False, True]), iter([False, True])
    stream = SimpleNamespace(running=lambda: True)
    calls: list[str] = []
    rig = SimpleNamespace(
        timeline=run.Timeline(),
        launch=lambda start: start(),
        stream_wrote=lambda: calls.append("batch?") or next(wrote),
        loads_valid=lambda: calls.append("valid?") or next(valid),
        pipeline=SimpleNamespace(
            roles={"stream": stream},
            stop_role=lambda name, sig: calls.append(f"stop {name}"),
            start_stream=lambda: calls.append("start stream"),
        ),
    )
    run._overlap(rig, Overlap("stream_kill", 1.0, 0.0))  # type: ignore[arg-type]
    assert calls == [
        *("stop stream", "start stream"),
        *("batch?", "batch?", "batch?"),
        *("valid?", "valid?"),
    ]
    said = [what for _, what in rig.timeline.events]
    assert said[-1].startswith("the Spark job wrote loads again ") and said[-1].endswith(
        " s after its restart"
    )


def _wait_without_pauses(check: Any, timeout_s: float, what: str, interval_s: float = 1) -> Any:
    while not (found := check()):
        pass
    return found


def seen(instance: str, api: str, at_ms: int, writer: str = "executor") -> Seen:
    client = f"kmedic-{writer}-{instance}"
    return Seen("broker-1", instance, client, api, at_ms, at_ms + 3, "127.0.1.1:9092-x-1")


def test_a_cut_managers_writes_are_judged_by_the_brokers_request_logs() -> None:
    # A silent drop at 10 s, a session of 6 s: the lease over by 13 s at the latest.
    cut = Cut("m1", start_ms=10_000, end_ms=25_000, lease_end_ms=13_000, kind="a silent drop")
    fine = [
        seen("m1", "ALTER_PARTITION_REASSIGNMENTS", 9_000),  # before the cut
        seen("m1", "PRODUCE", 13_900, "audit"),  # sent at its lease's last moment
        seen("m1", "DESCRIBE_CONFIGS", 20_000),  # a read: no write
        seen("m2", "INCREMENTAL_ALTER_CONFIGS", 16_500),  # the one that took over
        seen("m1", "PRODUCE", 26_000, "audit"),  # back, and leading again
    ]
    assert lease_as_the_brokers_saw(fine, [cut]).held
    late = seen("m1", "INCREMENTAL_ALTER_CONFIGS", 14_300)  # after its lease
    (problem,) = lease_as_the_brokers_saw([*fine, late], [cut]).problems
    assert problem == (
        "INCREMENTAL_ALTER_CONFIGS from kmedic-executor-m1 received by broker-1 at 14300, "
        "4300 ms into its cut off ZooKeeper (a silent drop): its lease had ended at +3000 ms, its "
        "successor wrote from +6500 ms"
    )
    # Its audit record sent within the lease to a broker that hung, appended when it resumed
    # (the soak, seed 5150): told, and read back in epoch order (manager.audit.epoch_order).
    held = seen("m1", "PRODUCE", 14_300, "audit")
    assert lease_as_the_brokers_saw([*fine, held], [cut]).held
    assert lease_verdicts([*fine, held], [cut])[0].endswith(
        "; its audit records appended after its lease, at +4300 ms (a request held on its way, "
        "by a hung broker or the network: read back in epoch order)"
    )
    # Interleaved: a write of the cut manager after its successor's first, lease or not.
    early = Cut("m1", start_ms=10_000, end_ms=25_000, lease_end_ms=30_000)
    after_successor = seen("m1", "ELECT_LEADERS", 17_000)
    assert not lease_as_the_brokers_saw([*fine, after_successor], [early]).held
    assert lease_as_the_brokers_saw([late], []).held  # no cut, nothing to judge
    unread = lease_as_the_brokers_saw([], [cut], "the request logs could not be read: gone")
    assert unread.problems == ("the request logs could not be read: gone",)
    assert lease_verdicts(fine, [cut]) == [
        "m1 cut off ZooKeeper (a silent drop, 15000 ms): lease over by +3000 ms; its last "
        "write at +3900 ms; the successor's first at +6500 ms"
    ]


def test_an_hour_draws_both_kinds_of_leader_cut() -> None:
    drawn = draw(
        4242, length_s=3600, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0,
        manager_session_s=6.0,
    )  # fmt: skip
    kinds = {o.kind for e in drawn.episodes for o in e.overlaps}
    assert {"leader_cut", "leader_drop"} <= kinds
    for episode in drawn.episodes:
        drops = [o for o in episode.overlaps if o.kind == "leader_drop"]
        if drops:
            assert not {"zookeeper_pause", "session_loss", "leader_cut"} & {
                o.kind for o in episode.overlaps
            }
            assert all(12.0 <= d.hold_s <= 18.0 for d in drops)


def test_a_short_run_drops_the_leaders_packets_in_its_warranted_episode() -> None:
    drawn = draw(20261125, length_s=60, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0)
    with pytest.raises(ValueError, match="needs a second episode"):
        drawn.with_leader_drop(6.0, at_s=25.0)
    paged = drawn.with_warranted_page(15.0)
    dropped = paged.with_leader_drop(6.0, at_s=25.0)
    assert dropped.episodes[0] == paged.episodes[0]
    assert dropped.episodes[1].overlaps[-1] == Overlap("leader_drop", 25.0, 15.0)
    assert dropped.episodes[1].warrants == ("KmedicRefusingToHeal",)
    assert dropped.estimated_s() > paged.estimated_s()  # the drop's overlap is counted


def test_a_run_with_a_warranted_page_gets_it_second() -> None:
    drawn = draw(20261125, length_s=60, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0)
    with_page = drawn.with_warranted_page(15.0)
    assert with_page.episodes[0] == drawn.episodes[0]  # the failover every run sees, first
    refused = with_page.episodes[1]
    assert (refused.kind, refused.warrants, refused.hold_s) == (
        "refused_heal",
        ("KmedicRefusingToHeal",),
        180.0,
    )
    assert with_page.episodes[2:] == drawn.episodes[1:]
    assert with_page.lines()[1] == (
        "2. brokers 2 and 3 killed together for 180 s, one more than max_dead_brokers: the "
        "heal refused, a page warranted (KmedicRefusingToHeal)"
    )
    assert all(e.warrants == () for e in drawn.episodes)


def test_every_page_is_matched_to_the_episode_that_warranted_it() -> None:
    since = 1_000.0
    refused = Warranted("episode 2", ("KmedicRefusingToHeal",), 1_100.0, 1_280.0)
    page = FiredAlert("KmedicRefusingToHeal", {"cluster": "soak-1"}, 1_250.0)
    held = pages([page], [refused], since)
    assert held.held and held.name.startswith("the pages: 1 fired as warranted by 1 episodes")
    # Warranted and silent: the page that should have woken someone.
    (missing,) = pages([], [refused], since).problems
    assert missing == (
        "KmedicRefusingToHeal did not fire during episode 2 (+100 s to +280 s): a page that "
        "should have woken someone"
    )
    # Fired outside its episode (and its minute of slack), or another alert: for nothing.
    late = FiredAlert("KmedicRefusingToHeal", {"cluster": "soak-1"}, 1_341.0)
    other = FiredAlert("KmedicStuckMove", {"cluster": "soak-1"}, 1_200.0)
    problems = pages([late, other], [refused], since).problems
    assert problems == (
        "KmedicRefusingToHeal{cluster=soak-1} firing from +341 s: a page for nothing (no "
        "episode warranted it)",
        "KmedicStuckMove{cluster=soak-1} firing from +200 s: a page for nothing (no episode "
        "warranted it)",
        "KmedicRefusingToHeal did not fire during episode 2 (+100 s to +280 s): a page that "
        "should have woken someone",
    )
    unjudged = pages([], [], since, ["Prometheus never scraped m1"])
    assert unjudged.problems == ("Prometheus never scraped m1",)


def test_a_run_that_falls_behind_its_schedule_by_more_than_a_fifth_is_broken() -> None:
    drawn = draw(4242, length_s=3600, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0)
    estimated = drawn.estimated_s()
    assert 3000 <= estimated <= 3600  # the draw fits the hour asked, by its own estimate
    assert on_schedule(1.2 * estimated, estimated).held
    (problem,) = on_schedule(1.5 * estimated, estimated).problems
    assert problem == (
        f"the episodes took {1.5 * estimated / 60:.1f} minutes, 1.50x the "
        f"{estimated / 60:.1f} minutes estimated: behind its schedule by more than a fifth"
    )
    assert on_schedule(1.5 * estimated, estimated, judged=False).held
    assert drawn.with_warranted_page(15.0).estimated_s() == estimated + 250.0


@given(st.integers(min_value=0, max_value=2**32))
def test_a_run_without_the_spark_job_draws_no_drain(seed: int) -> None:
    kwargs = {"length_s": 1800, "brokers": BROKERS, "grace_s": 15.0, "session_timeout_s": 9.0}
    drawn = draw(seed, stream=False, **kwargs)  # type: ignore[arg-type]
    assert all(e.kind != "drain" for e in drawn.episodes)


@given(st.integers(min_value=0, max_value=2**32))
def test_an_hours_schedule_fits_the_hour_with_what_its_overlaps_add(seed: int) -> None:
    drawn = draw(
        seed, length_s=3600, brokers=BROKERS, grace_s=15.0, session_timeout_s=9.0,
        controllers=3, manager_session_s=6.0,
    )  # fmt: skip
    assert drawn.estimated_s() <= 3600 or len(drawn.episodes) == 1
    kills = sum(o.kind == "stream_kill" for e in drawn.episodes for o in e.overlaps)
    assert drawn.estimated_s() >= sum(EPISODE_S[e.kind] for e in drawn.episodes) + 150 * kills


def test_a_disk_without_replicas_is_known_before_it_fails(tmp_path: Path) -> None:
    # Found by a 60-minute run: a broker emptied by an earlier heal held nothing on the disk
    # the episode failed; Kafka never took it offline and the soak waited for that in vain.
    from composition.soak.run import partition_dirs

    data = tmp_path / "data-2"
    assert partition_dirs(data) == []  # not there at all
    data.mkdir()
    for name in ("__cluster_metadata-0", "orders-3.abc-delete", "orders-1.abc-future", "x"):
        (data / name).mkdir()
    (data / "meta.properties").write_text("")
    assert partition_dirs(data) == []
    (data / "orders-0").mkdir()
    (data / "soak.rf3-12").mkdir()
    assert partition_dirs(data) == ["orders-0", "soak.rf3-12"]


def test_heal_times_are_read_off_the_timeline_from_kill_to_whole() -> None:
    timeline = [
        (10.0, "episode 1: broker 3 killed past its grace (a heal), with manager_kill at +2 s"),
        (10.1, "broker 3 killed"),
        (40.0, "broker 5 killed"),  # a bounce: never healed
        (42.0, "broker 5 restarted after 2 s, inside its grace"),
        (71.4, "broker 3 healed: it holds no replica, every partition is whole"),
        (80.0, "broker 2 killed"),
        (138.0, "broker 2 healed: it holds no replica, every partition is whole"),
    ]
    assert heal_times(timeline) == [61.3, 58.0]
    assert heal_times([]) == []


def test_a_run_without_the_spark_job_is_not_paged_for_its_missing_loads() -> None:
    """Without the Spark job there is no load data: KmedicStaleLoadData fires once its 10
    minutes pass, which a short run outlasts on a slow day (CI: firing from +531 s, judged a
    page for nothing). The run's set-up warrants it, named in the check; any other alert is
    still a page for nothing, and a run with the job is paged for stale loads as before."""
    stale = FiredAlert("KmedicStaleLoadData", {"cluster": "s", "severity": "warning"}, 1_531.0)
    other = FiredAlert("KmedicStuckMove", {"cluster": "s", "severity": "page"}, 1_200.0)
    without = run_wide(SoakSettings(seed=1, length_s=60, workdir=Path("/x"), stream=False))
    check = pages([stale], since_s=1_000.0, run_wide=without)
    assert check.held, check
    assert "warranted by the run itself: KmedicStaleLoadData (no Spark job in this run)" in (
        check.name
    )
    assert len(pages([stale, other], since_s=1_000.0, run_wide=without).problems) == 1
    with_job = run_wide(SoakSettings(seed=1, length_s=60, workdir=Path("/x")))
    assert not pages([stale], since_s=1_000.0, run_wide=with_job).held
