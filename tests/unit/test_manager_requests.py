"""The leader's side of operator requests, with fakes around the manager: the open ones reach
the planner, and each moves pending -> running -> done (or failed) by fenced writes, audited."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from manager_fakes import NOW_MS, Rig

from manager.coordination.request_store import RequestState, StoredRequest
from manager.daemon.mode import ModeTracker
from manager.daemon.requests import CONVERGE_BUDGET_S, MAX_SAME_PLANS
from manager.model.snapshot import RequestKind


def _request(
    kind: RequestKind, *brokers: int, state: RequestState = "pending", rid: str = "req-1"
) -> StoredRequest:
    return StoredRequest(
        id=rid,
        kind=kind,
        brokers=brokers,
        state=state,
        created_ms=NOW_MS - 60_000,
        by="op@host",
        updated_ms=NOW_MS - 60_000,
        note="",
        version=0,
    )


def test_a_demote_starts_and_its_request_runs(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (_request("demote", 1),)
    outcome = rig.manager.cycle()
    assert outcome.kind == "act", outcome.sentence
    assert rig.manager.last_snapshot is not None
    assert [r.id for r in rig.manager.last_snapshot.requests] == ["req-1"]
    assert rig.coordinator.requests.marked == [("req-1", "running")]
    (running,) = [s for s in rig.summaries() if s.startswith("request req-1 (demote brokers 1) is")]
    # The note is the plan, without the request's name a second time.
    assert running.startswith("request req-1 (demote brokers 1) is running: ")
    assert running.count("req-1") == 1, running
    # The status page lists the request as the cycle read it.
    assert [(r["id"], r["kind"]) for r in rig.manager.status()["requests"]] == [("req-1", "demote")]


def test_a_request_already_met_is_done(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (_request("demote", 4),)  # broker 4 leads nothing
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop", outcome.sentence
    assert rig.coordinator.requests.marked == [("req-1", "done")]
    done = [s for s in rig.summaries() if s.startswith("request req-1 (demote brokers 4) is done")]
    assert done == ["request req-1 (demote brokers 4) is done: the brokers lead no partition"]


def test_a_request_naming_a_missing_broker_fails_and_is_not_planned(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (_request("drain", 9),)
    rig.manager.cycle()
    assert rig.manager.last_snapshot is not None and rig.manager.last_snapshot.requests == ()
    assert rig.coordinator.requests.marked == [("req-1", "failed")]
    assert any("no broker [9]" in s for s in rig.summaries())


def set_rf(topic: str, factor: int, state: RequestState = "pending") -> StoredRequest:
    return replace(
        _request("set_rf", state=state), topic=topic, replication_factor=factor, brokers=()
    )


def test_a_set_rf_naming_a_missing_topic_fails_and_is_not_planned(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (set_rf("nosuch", 3),)
    rig.manager.cycle()
    assert rig.manager.last_snapshot is not None and rig.manager.last_snapshot.requests == ()
    assert rig.coordinator.requests.marked == [("req-1", "failed")]
    assert (
        "request req-1 (set_rf topic nosuch to 3) is failed: the cluster has no topic nosuch"
        in (rig.summaries())
    )


def test_a_set_rf_is_planned_and_runs(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (set_rf("t", 4),)  # the fake's topic is at RF 3
    outcome = rig.manager.cycle()
    assert outcome.kind == "act", outcome.sentence
    assert rig.coordinator.requests.marked == [("req-1", "running")]
    assert rig.executor.submitted and all(len(m.target) == 4 for m in rig.executor.submitted)


def test_cancelled_and_finished_requests_are_not_planned(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (
        _request("demote", 1, state="cancelled", rid="req-1"),
        _request("demote", 2, state="done", rid="req-2"),
    )
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop", outcome.sentence
    assert rig.coordinator.requests.marked == []


def test_a_standby_changes_no_request(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.is_leader = False
    rig.coordinator.open_requests = (_request("drain", 9),)
    rig.manager.cycle()
    assert rig.coordinator.requests.marked == []


def test_a_demote_that_does_not_converge_ends_failed_naming_the_partitions(
    tmp_path: Path,
) -> None:
    """The leader re-issued the same demote every cycle for 120 s when the preferred leader
    did not take over (issue 25). Now the request ends after MAX_SAME_PLANS such plans."""
    rig = Rig(tmp_path)
    # t:0 is already in the demoted order, and broker 1 still leads it.
    rig.sources.replicas = {("t", 0): (2, 3, 1)}
    rig.sources.leaders = {("t", 0): 1}
    rig.coordinator.open_requests = (_request("demote", 1),)
    rig.executor.complete_all()  # every move completes; the leadership never moves
    # Issue 39.3: the request says why, as the executor said it for the partition's last move.
    why = "broker 2 did not take leadership: not asked: broker 2 is not in the ISR [3, 1]"
    rig.executor.fail_with = why
    kinds = []
    for _ in range(MAX_SAME_PLANS + 1):
        kinds.append(rig.manager.cycle().kind)
        rig.coordinator.open_requests = (_request("demote", 1, state="running"),)
    assert kinds == ["act"] * (MAX_SAME_PLANS + 1)
    # Not before the budget: an election may wait for a replica to rejoin the ISR.
    assert rig.coordinator.requests.marked == [("req-1", "running")]
    rig.clock.advance(CONVERGE_BUDGET_S)
    assert rig.manager.cycle().kind == "act"
    assert rig.coordinator.requests.marked == [("req-1", "running"), ("req-1", "failed")]
    [ended] = [s for s in rig.summaries() if "is failed" in s]
    assert "did not converge: 5 plans in a row over 300 s started the same 1 moves" in ended
    assert (
        f"started the same 1 moves and the cluster still asks for them: t:0; why: t:0: {why}"
        in ended
    )


def test_a_request_that_made_progress_before_it_stuck_ends_partial(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (_request("demote", 1),)
    rig.executor.complete_all()
    assert rig.manager.cycle().kind == "act"  # t:0 (led by 1) and no other
    # t:0's leadership moved; now t:2 shows broker 1 leading it, and it never moves.
    rig.sources.replicas = {("t", 0): (2, 3, 1), ("t", 2): (3, 4, 1)}
    rig.sources.leaders = {("t", 2): 1}
    rig.coordinator.open_requests = (_request("demote", 1, state="running"),)
    for _ in range(MAX_SAME_PLANS + 1):
        rig.manager.cycle()
    rig.clock.advance(CONVERGE_BUDGET_S)
    rig.manager.cycle()
    assert rig.coordinator.requests.marked[-1] == ("req-1", "partial")


def decommission(*brokers: int, state: RequestState = "pending") -> StoredRequest:
    return _request("decommission", *brokers, state=state)


def empty_and_stopped(rig: Rig, broker: int) -> None:
    """``broker`` dead and holding nothing (the fake's partitions moved off it)."""
    rig.sources.dead = {broker}
    rig.sources.replicas = {("t", 1): (2, 3, 1), ("t", 2): (3, 2, 1)}


def test_a_decommissioned_broker_empty_and_stopped_is_unregistered_and_the_request_done(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    empty_and_stopped(rig, 4)
    rig.coordinator.open_requests = (decommission(4),)
    outcome = rig.manager.cycle()
    assert outcome.kind == "noop", outcome.sentence
    assert rig.executor.unregistered == [4]
    assert rig.coordinator.requests.marked == [("req-1", "done")]
    told = [r.summary for r in rig.sink.records]
    assert any(s.startswith("unregistered broker 4 from the cluster (request req-1)") for s in told)
    assert (
        "request req-1 (decommission brokers 4) is done: brokers [4] drained, stopped and "
        "unregistered"
    ) in told


def test_a_refused_unregister_is_audited_and_the_request_stays_open(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    empty_and_stopped(rig, 4)
    rig.executor.unregister_refusal = "Kafka refused to unregister broker 4: not fenced (102)"
    rig.coordinator.open_requests = (decommission(4),)
    rig.manager.cycle()
    assert rig.coordinator.requests.marked == []
    failed = [r for r in rig.sink.records if r.kind == "action_failed"]
    assert failed and "unregister broker 4 (request req-1) failed: Kafka refused" in (
        failed[0].summary
    )


def test_an_unregister_refused_by_the_lease_is_no_failure_and_the_request_stays_open(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    empty_and_stopped(rig, 4)
    rig.executor.lease_ended = True
    rig.coordinator.open_requests = (decommission(4),)
    rig.manager.cycle()
    assert rig.coordinator.requests.marked == []
    assert [r.summary for r in rig.sink.records if r.kind == "action_failed"] == []


def test_observe_mode_unregisters_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.manager.mode = ModeTracker("observe")
    empty_and_stopped(rig, 4)
    rig.coordinator.open_requests = (decommission(4),)
    rig.manager.cycle()
    assert rig.executor.unregistered == [] and rig.coordinator.requests.marked == []
    # Issue 39.2: audited as what it would do, not as "unregistering them".
    [said] = [r.summary for r in rig.sink.records if r.kind == "would_act"]
    assert said.startswith("noop: would act (observe mode")
    assert said.endswith("unregistering them"), said
    assert not [s for s in rig.summaries() if "unregistering them" in s]


def test_a_switched_off_request_goal_unregisters_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path, goals={"operator_requests": False})
    empty_and_stopped(rig, 4)
    rig.coordinator.open_requests = (decommission(4),)
    rig.manager.cycle()
    assert rig.executor.unregistered == [] and rig.coordinator.requests.marked == []
    [said] = [r.summary for r in rig.sink.records if r.kind == "would_act"]
    assert "disabled by policy.goals.operator_requests" in said


def test_a_decommissioned_broker_is_gone_not_dead_and_its_request_done_if_left_open(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (decommission(9, state="done"),)
    rig.manager.cycle()
    assert rig.sources.calls[-1]["retired"] == frozenset({9})
    rig.coordinator.open_requests = (decommission(9),)  # unregistered by hand, say
    rig.manager.cycle()
    assert rig.coordinator.requests.marked == [("req-1", "done")]
    assert any("brokers [9] are no longer in the cluster" in s for s in rig.summaries())


def test_a_request_that_can_never_be_met_fails_at_once_and_blocks_nothing_behind_it(
    tmp_path: Path,
) -> None:
    """Issue 72.1: `kmedic topics set-rf t --rf 1` on an RF-3 topic ended done with nothing
    changed, and a drain of every broker or an RF of 1,000,000 sat at the head of the queue
    (served oldest first), blocking the requests behind it."""
    cases = {
        "lower": (
            replace(set_rf("t", 1), id="req-1"),
            "kmedic never lowers a replication factor: t has partitions at RF 3, above the 1",
        ),
        "wider": (
            replace(set_rf("t", 1_000_000), id="req-1"),
            "RF 1000000 for t cannot be placed: the cluster has 4 brokers",
        ),
        "emptied": (
            _request("drain", 1, 2, rid="req-1"),
            "emptying brokers [1, 2] leaves 2 brokers, fewer than the replication factor 3 of t",
        ),
    }
    for name, (hopeless, why) in cases.items():
        rig = Rig(tmp_path / name)
        behind = _request("demote", 1, rid="req-2")
        rig.coordinator.open_requests = (hopeless, behind)
        outcome = rig.manager.cycle()
        assert rig.coordinator.requests.marked == [("req-1", "failed"), ("req-2", "running")]
        assert any(why in s for s in rig.summaries()), (name, rig.summaries())
        assert outcome.kind == "act", outcome.sentence  # the demote behind it is served


def test_the_status_page_shows_a_request_as_the_cycle_left_it(tmp_path: Path) -> None:
    """Issue 72.7: a request was shown running while the same page's last decision said it
    was done (the page listed the requests as the cycle read them, before it marked them)."""
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (_request("demote", 4),)  # broker 4 leads nothing: done
    rig.manager.cycle()
    assert rig.coordinator.requests.marked == [("req-1", "done")]
    assert [(r["id"], r["state"]) for r in rig.manager.status()["requests"]] == [("req-1", "done")]
