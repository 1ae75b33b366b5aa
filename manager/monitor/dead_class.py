"""A dead broker's class, judged once per cycle from two witnesses (manager.model.death).

The controller's fencing (the broker absent from the metadata: ``observe.dead_since``) is one
witness; the agent beside the broker is the other - what it says of the process (starting,
recovering and how far, exited, how often it came back lately) and its silence, which counts
only once it has missed the next record it promised (a record says how far apart its records
come: ``interval_s``). One witness alone never shortens the grace:

- **host_lost** - fenced, and its agent silent ``host_lost_confirm_ms`` past its promise: the
  host went with the broker. Heal now. The fencing needs no confirmation of kmedic's: the
  controller fences a broker whose heartbeats stopped for its session timeout.
- **crash_looping** - it came back and died again ``crash_loop_restarts`` times within its
  agent's restart window, its agent still speaking. Heal now.
- **restarting** - its agent sees it starting or recovering its logs, moving forward within
  ``restart_stall_ms``: wait (no copy, no page), its write-unavailable partitions too, up to
  ``restart_wait_cap_ms`` after its death.
- **unknown** - anything else (no agent, an agent before the process field, an agent that cannot
  see the process, an exit not yet repeated, a start that stalled): the timer, as before.

Pure: the observation in, the verdict out; the thresholds are the policy's ``wait_or_heal``.
"""

from __future__ import annotations

from kmedic.brokerstats import BrokerStats, Process
from manager.model.death import Death
from manager.model.policy import WaitOrHeal
from manager.monitor.observation import AgentView

_STARTING = ("starting", "recovering")
# The feed vouches for a partition about every second (manager.monitor.read_to), so what it
# has read lags the clock by up to about that: the daemon looks again that much after the
# silence would be confirmed, and 2 s later while the feed cannot read it at all.
_READ_LAG_MS = 1_500
_READ_AGAIN_MS = 2_000


def _s(ms: float) -> str:
    return f"{ms / 1000:.0f} s"


def classify(
    now_ms: int,
    fenced_since_ms: int,
    dead_since_ms: int,
    agent: AgentView | None,
    rules: WaitOrHeal,
    grace_ms: int,
) -> Death:
    """The class of a dead broker at ``now_ms``: fenced (absent from the metadata) since
    ``fenced_since_ms``, dead since ``dead_since_ms``; ``grace_ms`` is the timer it replaces."""
    timer = f"the {_s(grace_ms)} grace applies"
    if agent is None:
        return Death(kind="unknown", evidence=f"no record from its agent: {timer}")
    latest = agent.latest
    process = latest.process
    if process is None or process.state == "unknown":
        seen = "does not report" if process is None else "cannot see"
        return Death(kind="unknown", evidence=f"its agent {seen} the process: {timer}")
    early = rules.early_heal
    fenced_for = now_ms - fenced_since_ms
    last_ms, promise_s = _last_word(agent)
    due_ms = last_ms + int(promise_s * 1000)  # its next record was due then
    # Silent only as far as the feed has read its partition: a partition this manager cannot
    # fetch (its leader cut off from the manager alone) is no silence of the agent's.
    read_to = agent.read_to_ms
    heard_to = now_ms if read_to is None else min(now_ms, read_to)
    silent_past = heard_to - due_ms
    # Fenced is the controller's witness (its own session timeout, 9 s at Kafka's default, is
    # its confirmation); the agent's silence is confirmed here, past the record it promised.
    if read_to is not None and silent_past >= rules.host_lost_confirm_ms:
        return Death(
            kind="host_lost",
            evidence=f"fenced {_s(fenced_for)} ago and its agent silent {_s(silent_past)} past "
            f"the record it promised (every {promise_s:.0f} s at most): "
            + _heal_now_or(early, grace_ms),
            heal_now=early,
        )
    # Silent that long and the class is host_lost: the daemon looks again then.
    recheck = due_ms + rules.host_lost_confirm_ms + _READ_LAG_MS
    if recheck <= now_ms:  # silent that long already, but not read that far: soon, again
        recheck = now_ms + _READ_AGAIN_MS
    # One death short of a crash loop: the agent's next word (it samples a broker that is not
    # running at its busy rate) may complete it, and the loop is healed then, not a cycle
    # later (the bench's seed 7502: 35 s after the last fencing, at the shipped 30 s cycle).
    if _deaths_after_comeback(latest) + 1 >= rules.crash_loop_restarts:
        recheck = min(recheck, max(due_ms + _READ_LAG_MS, now_ms + _READ_AGAIN_MS))
    by_report = _by_report(now_ms, dead_since_ms, latest, process, rules, grace_ms)
    update: dict[str, object] = {"recheck_at_ms": recheck if rules.early_heal else None}
    if blind := _blind(now_ms, due_ms, read_to, rules):
        update["evidence"] = f"{by_report.evidence} ({blind})"
    return by_report.model_copy(update=update)


def _blind(now_ms: int, due_ms: int, read_to: int | None, rules: WaitOrHeal) -> str:
    """What the feed's blindness hides, when the agent looks silent only because the manager
    has not read its partition: its silence is no evidence then."""
    if now_ms - due_ms < rules.host_lost_confirm_ms:
        return ""
    if read_to is None:
        return "its agent's partition not yet read to any moment: its silence is no evidence"
    return (
        f"its agent's partition read only to {_s(now_ms - read_to)} ago: its silence counts "
        "only that far"
    )


def _by_report(
    now_ms: int,
    dead_since_ms: int,
    latest: BrokerStats,
    process: Process,
    rules: WaitOrHeal,
    grace_ms: int,
) -> Death:
    """The class from what the agent (still speaking) reports of the process."""
    timer = f"the {_s(grace_ms)} grace applies"
    early = rules.early_heal
    deaths = _deaths_after_comeback(latest)
    if deaths >= rules.crash_loop_restarts:
        return Death(
            kind="crash_looping",
            evidence=f"its agent saw it come back and die again {deaths} times in "
            f"{process.restart_window_s / 60:.0f} minutes: " + _heal_now_or(early, grace_ms),
            heal_now=early,
        )
    if process.state in _STARTING:
        moved = process.progress_ms
        if moved is not None and now_ms - moved <= rules.restart_stall_ms:
            left = _left_to_recover(latest)
            cap = rules.restart_wait_cap_ms
            return Death(
                kind="restarting",
                evidence=f"its agent sees it {process.state}{left}, moving forward "
                f"{_s(now_ms - moved)} ago: "
                + (
                    f"waiting, up to {_s(cap)} after its death, its write-unavailable "
                    "partitions too"
                    if cap > 0
                    else timer
                ),
                wait_until_ms=dead_since_ms + cap if cap > 0 else None,
            )
        stalled = "never seen moving" if moved is None else f"not moved for {_s(now_ms - moved)}"
        return Death(
            kind="unknown", evidence=f"its agent sees it {process.state}, {stalled}: {timer}"
        )
    if process.state == "not_running" and process.down_since_ms is not None:
        return Death(
            kind="unknown",
            evidence=f"its agent saw it exit {_s(now_ms - process.down_since_ms)} ago "
            f"({process.restarts} comebacks in {process.restart_window_s / 60:.0f} minutes): "
            f"{timer}",
        )
    return Death(kind="unknown", evidence=f"its agent sees it {process.state}: {timer}")


def _last_word(agent: AgentView) -> tuple[int, float]:
    """When the agent last spoke and how far apart it promised its records: an agent that
    heartbeats promises its heartbeats' gap (seconds), one that does not its samples'."""
    latest, heard = agent.latest, agent.heard
    if heard is None:
        return latest.timestamp_ms, latest.interval_s
    return max(latest.timestamp_ms, heard.timestamp_ms), heard.next_within_s


def _heal_now_or(early: bool, grace_ms: int) -> str:
    if early:
        return f"healing now, not after the {_s(grace_ms)} grace"
    return f"the {_s(grace_ms)} grace applies (policy.wait_or_heal.early_heal is off)"


def _deaths_after_comeback(stats: BrokerStats) -> int:
    """Times it came back and died again within the agent's window: each comeback the agent
    counted, but the latest while it is still starting (that one has not died yet)."""
    process = stats.process
    if process is None:
        return 0
    if process.state == "not_running":
        return process.restarts
    if process.state in _STARTING:
        return max(0, process.restarts - 1)
    return 0


def _left_to_recover(stats: BrokerStats) -> str:
    process = stats.process
    if process is None or (process.logs_to_recover is None and process.segments_to_recover is None):
        return ""
    return (
        f" ({process.logs_to_recover or 0} logs, {process.segments_to_recover or 0} segments left "
        "to recover)"
    )
