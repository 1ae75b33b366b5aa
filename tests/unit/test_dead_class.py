"""A dead broker's class from its agent's evidence (manager.monitor.dead_class), and what the
grace rule and the planner make of it: two witnesses to heal early, never one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from manager_fakes import stats
from test_observe import NOW, node, observation

from kmedic.brokerstats import BrokerStats, Heartbeat, to_json
from manager.analyzer.health import next_grace_end_ms
from manager.analyzer.planner import decide
from manager.model.death import Death
from manager.model.policy import Policy, WaitOrHeal
from manager.model.snapshot import Broker
from manager.monitor.dead_class import classify
from manager.monitor.feed_pair import decode_agent, merge_agent
from manager.monitor.observation import AgentView
from manager.monitor.observe import CapacitySettings, build_snapshot

GRACE = 600_000
RULES = WaitOrHeal()


def process(state: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "state": state,
        "broker_state": None,
        "logs_to_recover": None,
        "segments_to_recover": None,
        "listening": state != "not_running",
        "down_since_ms": None,
        "restarts": 0,
        "restart_window_s": 600.0,
    }
    return body | extra


def record(ts: int, proc: dict[str, Any] | None, *, failed: bool = True) -> BrokerStats:
    return stats(4, ts=ts, failed=failed, process=proc)


def agent(ts: int, proc: dict[str, Any] | None, *, read_to: int | None = NOW) -> AgentView:
    """Its newest record at ``ts``; the manager's feed has read its partition to ``read_to``
    (by default to the moment judged: every record the agent wrote is in)."""
    return AgentView(
        latest=record(ts, proc),
        last_healthy_ms=NOW - 3_600_000,
        healthy=None,
        read_to_ms=read_to,
    )


def judge(view: AgentView | None, *, fenced_for: int = 20_000, rules: WaitOrHeal = RULES) -> Death:
    return classify(NOW, NOW - fenced_for, NOW - fenced_for, view, rules, GRACE)


def test_an_agent_silent_past_its_promise_with_the_broker_fenced_is_a_lost_host() -> None:
    # The records come at most 10 s apart; the last one is 21 s old: 11 s past its promise.
    death = judge(agent(NOW - 21_000, process("running")), fenced_for=12_000)
    assert (death.kind, death.heal_now) == ("host_lost", True)
    assert death.evidence == (
        "fenced 12 s ago and its agent silent 11 s past the record it promised (every 10 s at "
        "most): healing now, not after the 600 s grace"
    )


def test_one_witness_alone_is_no_lost_host() -> None:
    # The broker fenced long ago, its agent still speaking inside its promise.
    assert judge(agent(NOW - 15_000, process("not_running")), fenced_for=60_000).kind == ("unknown")
    # Its agent silent, but not yet the confirmation past its promise (10 s, then 9 s past).
    assert judge(agent(NOW - 19_000, process("running")), fenced_for=60_000).kind == "unknown"


def test_an_agent_the_manager_cannot_read_is_not_silent() -> None:
    """Found by the audit cut (test_network_faults.py): the manager cut off from the broker
    leading the stats partition that holds a killed broker's agent's records saw that agent
    fall silent - its own feed could not fetch the partition - and healed the killed broker as
    a lost host 37 s into its 300 s grace, on the controller's witness alone. The silence
    counts only as far as the feed has read the agent's partition."""
    silent = process("running")
    # The same record 21 s old, 11 s past its promise; the feed read its partition to 25 s
    # ago (asked every second, unanswered since): the agent's record then was not yet due.
    blind = judge(agent(NOW - 21_000, silent, read_to=NOW - 25_000), fenced_for=30_000)
    assert (blind.kind, blind.heal_now) == ("unknown", False)
    assert blind.evidence == (
        "its agent sees it running: the 600 s grace applies (its agent's partition read only "
        "to 25 s ago: its silence counts only that far)"
    )
    # Looked at again within 2 s, not at the next tick (a shipped cycle is 30 s).
    assert blind.recheck_at_ms is not None and NOW < blind.recheck_at_ms <= NOW + 2_000
    # Read to 9 s past the promise: not yet the 10 s confirmation.
    assert judge(agent(NOW - 21_000, silent, read_to=NOW - 2_000)).kind == "unknown"
    # Read to 10 s past it: a lost host, its silence measured to the moment read.
    lost = judge(agent(NOW - 21_000, silent, read_to=NOW - 1_000), fenced_for=12_000)
    assert (lost.kind, lost.heal_now) == ("host_lost", True)
    assert "its agent silent 10 s past the record it promised" in lost.evidence
    # Never vouched for (a feed just started, or a partition never reached): no silence.
    never = judge(agent(NOW - 60_000, silent, read_to=None), fenced_for=60_000)
    assert never.kind == "unknown"
    assert never.evidence.endswith(
        "(its agent's partition not yet read to any moment: its silence is no evidence)"
    )


@given(
    age=st.integers(0, 200_000),
    read_age=st.none() | st.integers(-5_000, 200_000),
    fenced_for=st.integers(0, 200_000),
)
def test_a_lost_host_needs_the_silence_read_to_its_confirmation(
    age: int, read_age: int | None, fenced_for: int
) -> None:
    read_to = None if read_age is None else NOW - read_age
    death = judge(agent(NOW - age, process("running"), read_to=read_to), fenced_for=fenced_for)
    due = NOW - age + 10_000  # every 10 s at most
    read = read_to is not None and min(NOW, read_to) - due >= RULES.host_lost_confirm_ms
    assert (death.kind == "host_lost") == read
    if death.recheck_at_ms is not None:
        assert death.recheck_at_ms > NOW  # never a look back in time


def test_the_fencing_needs_no_confirmation_of_its_own() -> None:
    """The controller fenced it after its own session timeout (9 s at Kafka's default): a
    host lost is healed once its agent's silence is confirmed - at Kafka's defaults within 6 s
    of the fencing - not 10 s after the fencing at the earliest, as while the fencing waited
    for a confirmation of its own (issue 75's bound: the first move within 10 s of it)."""
    death = judge(agent(NOW - 21_000, process("running")), fenced_for=1_000)
    assert (death.kind, death.heal_now) == ("host_lost", True)


def test_an_agent_that_cannot_see_the_process_leaves_the_timer() -> None:
    for view in (None, agent(NOW - 60_000, None), agent(NOW - 60_000, process("unknown"))):
        death = judge(view)
        assert (death.kind, death.heal_now, death.wait_until_ms) == ("unknown", False, None)
        assert death.evidence.endswith("the 600 s grace applies")


def test_a_broker_that_keeps_dying_as_it_comes_back_is_crash_looping() -> None:
    down = process("not_running", restarts=3, down_since_ms=NOW - 2_000)
    death = judge(agent(NOW - 1_000, down))
    assert (death.kind, death.heal_now) == ("crash_looping", True)
    assert "come back and die again 3 times in 10 minutes" in death.evidence
    # Starting for the fourth time: three deaths after a comeback so far.
    starting = process("starting", restarts=4, progress_ms=NOW - 1_000)
    assert judge(agent(NOW - 1_000, starting)).kind == "crash_looping"
    # Twice is not a loop: a restart, then one more.
    twice = process("not_running", restarts=2, down_since_ms=NOW - 2_000)
    assert judge(agent(NOW - 1_000, twice)).kind == "unknown"


def test_a_recovering_broker_moving_forward_is_waited_for_up_to_the_cap() -> None:
    recovering = process(
        "recovering", logs_to_recover=40, segments_to_recover=900, progress_ms=NOW - 3_000
    )
    death = judge(agent(NOW - 2_000, recovering), fenced_for=700_000)
    assert (death.kind, death.heal_now) == ("restarting", False)
    assert death.wait_until_ms == NOW - 700_000 + RULES.restart_wait_cap_ms
    assert "recovering (40 logs, 900 segments left to recover), moving forward 3 s ago" in (
        death.evidence
    )
    # A start that has not moved for longer than the stall bound is no evidence.
    stalled = recovering | {"progress_ms": NOW - RULES.restart_stall_ms - 1}
    assert judge(agent(NOW - 2_000, stalled)).kind == "unknown"


def test_the_switch_leaves_the_class_told_and_the_timer_in_charge() -> None:
    off = WaitOrHeal(early_heal=False)
    death = judge(agent(NOW - 60_000, process("running")), rules=off)
    assert (death.kind, death.heal_now) == ("host_lost", False)
    assert death.evidence.endswith("(policy.wait_or_heal.early_heal is off)")


def _dead(death: Death | None, dead_for: int) -> Broker:
    return Broker(id=4, alive=False, dead_since_ms=NOW - dead_for, death=death)


@given(
    state=st.sampled_from(
        ["running", "starting", "recovering", "shutting_down", "not_running", "unknown"]
    ),
    restarts=st.integers(0, 6),
    age=st.integers(0, 200_000),
    fenced_for=st.integers(0, 200_000),
    progress_age=st.none() | st.integers(0, 300_000),
    early=st.booleans(),
    dead_for=st.integers(0, 3_000_000),
)
def test_no_single_witness_shortens_the_grace(
    state: str,
    restarts: int,
    age: int,
    fenced_for: int,
    progress_age: int | None,
    early: bool,
    dead_for: int,
) -> None:
    proc = process(
        state,
        restarts=restarts,
        progress_ms=None if progress_age is None else NOW - progress_age,
        down_since_ms=NOW - age if state == "not_running" else None,
    )
    rules = WaitOrHeal(early_heal=early)
    death = classify(NOW, NOW - fenced_for, NOW - dead_for, agent(NOW - age, proc), rules, GRACE)
    timer = _dead(None, dead_for)
    judged = _dead(death, dead_for)
    for grace in (GRACE, 60_000):
        if judged.in_grace(NOW, grace) != timer.in_grace(NOW, grace):
            shortened = not judged.in_grace(NOW, grace)
            if shortened:
                # Ended early only on two witnesses, and only with the switch on.
                assert early and death.heal_now
                silent = age - 10_000 >= rules.host_lost_confirm_ms
                assert silent or death.kind == "crash_looping"
            else:
                # Held longer only by a start moving forward, never past the cap.
                assert death.kind == "restarting" and state in ("starting", "recovering")
                assert dead_for < rules.restart_wait_cap_ms
    if death.kind == "unknown":
        assert judged.in_grace(NOW, GRACE) == timer.in_grace(NOW, GRACE)


def _planned(agents: dict[int, AgentView], first_absent: int) -> Any:
    live = {1: node("/r1"), 2: node("/r2"), 3: node("/r1"), 5: node("/r2")}
    obs = observation(live=live, agents=agents, first_absent_ms={4: first_absent})
    return decide(build_snapshot(obs, Policy(), CapacitySettings()))


def test_the_planner_heals_a_lost_host_at_once_and_waits_for_a_restart_past_the_grace() -> None:
    # Broker 4 holds a replica of t-1; it has been fenced 15 s.
    lost = {4: agent(NOW - 40_000, process("running"))}
    decision = _planned(lost, NOW - 15_000)
    assert (decision.outcome, decision.kind) == ("act", "heal"), decision.summary
    # Fenced 15 s with its agent speaking: the 600 s timer.
    speaking = {4: agent(NOW - 1_000, process("not_running", down_since_ms=NOW - 16_000))}
    decision = _planned(speaking, NOW - 15_000)
    assert decision.outcome == "wait"
    assert "has been dead 15 s of its 600 s grace period" in decision.reasons[0].message
    # Dead 11 minutes, recovering and moving forward: still a wait, naming the restart.
    recovering = process("recovering", logs_to_recover=3, progress_ms=NOW - 4_000)
    decision = _planned({4: agent(NOW - 2_000, recovering)}, NOW - 660_000)
    assert decision.outcome == "wait", decision.summary
    assert "broker 4 is restarting, dead 660 s (its agent sees it recovering" in (
        decision.reasons[0].message
    )


def beat(ts: int, every_s: float = 5.0) -> Heartbeat:
    return Heartbeat(
        heartbeat=1,
        cluster="c",
        broker_id=4,
        timestamp_ms=ts,
        next_within_s=every_s,
        listening=True,
    )


def test_an_agent_that_heartbeats_is_judged_by_its_heartbeats_promise() -> None:
    # Its last sample a minute old (its interval 10 s), its last heartbeat 16 s old (every 5 s):
    # 11 s past the heartbeat's promise, fenced 12 s: its host is lost.
    view = replace(agent(NOW - 60_000, process("running")), heard=beat(NOW - 16_000))
    assert judge(view, fenced_for=12_000).kind == "host_lost"
    # Heartbeating still: a broker fenced while its host lives (a cut between it and the
    # controllers) waits out the timer, however old the last sample.
    speaking = replace(view, heard=beat(NOW - 2_000))
    assert judge(speaking, fenced_for=120_000).kind == "unknown"


def test_heartbeats_are_kept_beside_the_records_and_never_taken_for_one() -> None:
    first = beat(NOW - 9_000)
    assert merge_agent(None, first) is first  # heartbeats alone so far
    sample = agent(NOW - 8_000, process("running"))
    joined = merge_agent(first, sample)
    assert isinstance(joined, AgentView) and joined.heard == first
    newer = beat(NOW - 3_000)
    updated = merge_agent(joined, newer)
    assert isinstance(updated, AgentView)
    assert (updated.latest, updated.heard) == (sample.latest, newer)
    assert merge_agent(updated, first) is updated  # an older heartbeat changes nothing
    again = merge_agent(updated, agent(NOW - 1_000, process("running")))
    assert isinstance(again, AgentView) and again.heard == newer
    assert decode_agent(to_json(newer)) == newer


def test_the_daemon_looks_again_when_an_agents_silence_would_confirm_a_lost_host() -> None:
    live = {1: node("/r1"), 2: node("/r2"), 3: node("/r1"), 5: node("/r2")}
    # Fenced 3 s ago; its agent's last heartbeat 2 s old, every 5 s: silent 10 s past that
    # promise 13 s from now, read that far by the manager's feed (asked every second) 1.5 s
    # later.
    view = replace(agent(NOW - 30_000, process("running")), heard=beat(NOW - 2_000))
    obs = observation(live=live, agents={4: view}, first_absent_ms={4: NOW - 3_000})
    snap = build_snapshot(obs, Policy(), CapacitySettings())
    death = {b.id: b for b in snap.brokers}[4].death
    assert death is not None and death.recheck_at_ms == NOW + 14_500
    assert next_grace_end_ms(snap) == NOW + 14_500
    # Switched off: the next end is the timer's (the write-unavailable grace's, the shorter).
    off = Policy(wait_or_heal=WaitOrHeal(early_heal=False))
    assert next_grace_end_ms(build_snapshot(obs, off, CapacitySettings())) == NOW + 57_000


def test_a_loop_one_death_short_is_looked_at_again_with_its_agents_next_word() -> None:
    """The bench's crash loop (seed 7502, shipped intervals): the cycle woken by the last
    fencing saw two deaths after a comeback, one short of the loop; the agent's next record
    (5 s later) completed it, and the heal waited for the next 30 s tick. A broker one death
    short is looked at again when its agent's next word is read; one that came back no more
    than once keeps the usual cadence."""
    down = NOW - 2_000
    short = process("not_running", down_since_ms=down, restarts=2, listening=False)
    death = judge(agent(NOW - 1_000, short), fenced_for=1_000)
    assert death.kind == "unknown" and death.recheck_at_ms is not None
    # Its next record was due 10 s after its last (the fixture's interval), read 1.5 s later.
    assert death.recheck_at_ms == NOW - 1_000 + 10_000 + 1_500
    once = process("not_running", down_since_ms=down, restarts=1, listening=False)
    usual = judge(agent(NOW - 1_000, once), fenced_for=1_000)
    assert usual.recheck_at_ms == NOW - 1_000 + 10_000 + RULES.host_lost_confirm_ms + 1_500
    # Its next word completes the loop: healed now.
    looped = {**short, "restarts": 3}
    assert judge(agent(NOW, looped), fenced_for=6_000).kind == "crash_looping"
