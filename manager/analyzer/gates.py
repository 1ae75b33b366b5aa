"""Confidence gates (DESIGN.md section 4): every gate that fails becomes a refusal reason.

Each gate is a small pure function of the snapshot (and the planner's index of it, built once
from the same snapshot) returning the reasons it fails with; ``failing_gates`` runs them all
and returns every failure, never only the first. Plan gates (constraints, budget) take the plan's
facts as arguments. Nothing here reads a clock: "now" is the snapshot's ``taken_at``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from manager.analyzer.examples import examples
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.under_replication import under_replication
from manager.model.decision import Reason
from manager.model.policy import Policy
from manager.model.snapshot import Broker, Snapshot

# Gates about whether this instance may act at all; with nothing to do they do not refuse.


def gate_leadership(snap: Snapshot) -> list[Reason]:
    lead = snap.leadership
    out = []
    if not lead.is_leader:
        out.append(Reason("not_leader", f"instance {lead.holder!r} does not hold leadership"))
    if lead.epoch < lead.current_epoch:
        out.append(
            Reason(
                "stale_fencing_epoch",
                f"fencing epoch {lead.epoch} is older than the current epoch {lead.current_epoch}",
            )
        )
    return out


def gate_quorum(snap: Snapshot) -> list[Reason]:
    """No move starts while the controller quorum has no leader (an unknown reading holds
    nothing back: it may be an ACL or an older Kafka, not an outage)."""
    quorum = snap.quorum
    if quorum is None or quorum.state != "leaderless":
        return []
    voters = ", ".join(str(v.id) for v in quorum.voters) or "unknown"
    return [
        Reason(
            "quorum_without_leader",
            f"the KRaft controller quorum has no leader ({quorum.error}; voters {voters}): "
            "nothing can be committed, so no move starts",
        )
    ]


def gate_dead_brokers(snap: Snapshot, state: ClusterState) -> list[Reason]:
    return _dead_brokers(snap, state)[0]


def _dead_brokers(snap: Snapshot, state: ClusterState) -> tuple[list[Reason], list[Reason]]:
    """The dead brokers' gates in the order told, and those of them that are a broker's grace
    (what ``goals.writes`` shortens for write-unavailable partitions)."""
    policy = snap.policy
    dead = [b for b in snap.brokers if not b.alive]
    waiting = [b for b in dead if b.in_grace(snap.taken_at, policy.dead_grace_ms)]
    out: list[Reason] = []
    grace: list[Reason] = []
    if _too_many_dead(len(dead), len(snap.brokers), policy):
        # Brokers that fail together often come back together (a switch, a power blip):
        # while the count is over the limit only by brokers still in their grace, it is a
        # wait like theirs, and it pages once they stay dead past it.
        settling = not _too_many_dead(len(dead) - len(waiting), len(snap.brokers), policy)
        still = f", {len(waiting)} of them still in their grace period" if settling else ""
        out.append(
            Reason(
                "too_many_dead_brokers",
                f"{len(dead)} of {len(snap.brokers)} brokers are dead{still} "
                f"(max {policy.max_dead_brokers} and {policy.max_dead_fraction:.0%}); "
                "that looks like a partition or an outage, not a broker failure",
                wait=settling,
            )
        )
    for b in dead:
        if b.in_grace(snap.taken_at, policy.dead_grace_ms):
            dead_for = b.dead_for_ms(snap.taken_at)
            within = Reason(
                "dead_within_grace",
                _grace_left(b, dead_for, snap.taken_at, policy)
                + _writes_unavailable_on(b, dead_for, snap.taken_at, state, policy),
                wait=True,
            )
            out.append(within)
            grace.append(within)
        if b.id in state.kept_out.frozen:
            out.append(
                Reason(
                    "domain_in_maintenance",
                    f"dead broker {b.id} is in failure domain {state.domain[b.id]!r}, "
                    "which is under maintenance",
                )
            )
    return out, grace


def _grace_left(b: Broker, dead_for: int, now: int, policy: Policy) -> str:
    """How long a dead broker has been dead of its grace, and what its class holds."""
    death = b.death
    if death is not None and death.wait_until_ms is not None and now < death.wait_until_ms:
        return (
            f"broker {b.id} is restarting, dead {dead_for / 1000:.0f} s ({death.evidence}; "
            f"{(death.wait_until_ms - now) / 1000:.0f} s left)"
        )
    return (
        f"broker {b.id} has been dead {dead_for / 1000:.0f} s of its "
        f"{policy.dead_grace_ms / 1000:.0f} s grace period "
        f"({(policy.dead_grace_ms - dead_for) / 1000:.0f} s left)"
    )


def _writes_unavailable_on(
    broker: Broker, dead_for: int, now: int, state: ClusterState, policy: Policy
) -> str:
    """What the grace holds back that fails writes now (``goals.writes`` heals it early, but
    not while its broker restarts and moves forward)."""
    b = broker.id
    held = sum(b in state.replicas[p] for p in state.writes_unavailable)
    if not held:
        return ""
    if broker.in_grace(now, policy.write_unavailable_grace_ms) and (
        dead_for >= policy.write_unavailable_grace_ms
    ):
        return (
            f"; {held} of its partitions are under min.insync.replicas (acks=all writes fail) "
            "and wait for its restart too"
        )
    left = max(0, policy.write_unavailable_grace_ms - dead_for)
    return (
        f"; {held} of its partitions are under min.insync.replicas (acks=all writes fail) "
        f"and move once it has been dead {policy.write_unavailable_grace_ms / 1000:.0f} s "
        f"({left / 1000:.0f} s left)"
    )


def _too_many_dead(dead: int, brokers: int, policy: Policy) -> bool:
    return dead > policy.max_dead_brokers or dead / brokers > policy.max_dead_fraction


def gate_under_replication(snap: Snapshot, state: ClusterState) -> list[Reason]:
    """Every under-replicated or offline partition must be explained: by a dead broker, a
    reassignment adding the replica, a broker catching up after it came back, or a broker
    scored slow (the rule: manager.analyzer.under_replication)."""
    urp = under_replication(snap)
    unexplained = urp.unexplained
    if not unexplained:
        return []
    behind = [
        f"broker {follower} behind leader {leader} on {count}"
        for follower, leader, count in urp.behind
    ]
    return [
        Reason(
            "unexplained_under_replication",
            f"{len(unexplained)} partitions are under-replicated or offline with their brokers "
            f"alive (slow follower, disk or network?): {examples(unexplained)}"
            + (f"; out of the ISR: {examples(behind)}" if behind else ""),
        )
    ]


def gate_failed_disks(snap: Snapshot, state: ClusterState) -> list[Reason]:
    """Offline replicas on more live brokers than ``max_failed_disk_brokers``: disks rarely
    fail together, so that looks like something systemic, which moving data would not fix."""
    brokers = sorted({b for gone in state.offline.values() for b in gone})
    limit = snap.policy.max_failed_disk_brokers
    if len(brokers) <= limit:
        return []
    return [
        Reason(
            "too_many_failed_disks",
            f"brokers {', '.join(map(str, brokers))} have offline replicas (a failed log "
            f"directory each; max {limit} at once): that looks systemic, not a disk failure",
        )
    ]


def gate_load_data(snap: Snapshot, state: ClusterState) -> list[Reason]:
    policy = snap.policy
    out = []
    total = state.partition_count
    if total:
        share = state.valid_load / total
        if share < policy.min_valid_load_fraction:
            out.append(
                Reason(
                    "stale_load_data",
                    f"only {share:.1%} of partitions have a valid load window "
                    f"(need {policy.min_valid_load_fraction:.0%})",
                )
            )
    silent = [
        str(b.id)
        for b in snap.brokers
        if b.alive
        and (b.last_stats_ms is None or snap.taken_at - b.last_stats_ms > policy.max_stats_age_ms)
    ]
    if silent:
        out.append(
            Reason(
                "stale_load_data",
                f"no stats newer than {policy.max_stats_age_ms / 1000:.0f} s from live brokers "
                f"{examples(silent)}",
            )
        )
    return out


def gate_plan_constraints(violations: Sequence[str]) -> list[Reason]:
    return [Reason("plan_violates_constraints", v) for v in violations]


def gate_budget(snap: Snapshot, moves: int) -> list[Reason]:
    policy = snap.policy
    out = []
    if moves > policy.max_moves_per_cycle:
        out.append(
            Reason(
                "action_budget_exceeded",
                f"the plan needs {moves} moves, the per-cycle budget is "
                f"{policy.max_moves_per_cycle}",
            )
        )
    done = snap.recent_actions.moves_last_hour
    if done + moves > policy.max_moves_per_hour:
        out.append(
            Reason(
                "hourly_budget_exceeded",
                f"{done} moves in the last hour plus {moves} planned exceed the hourly budget "
                f"of {policy.max_moves_per_hour}",
            )
        )
    return out


@dataclass(frozen=True)
class Gates:
    """A cycle's failing gates (``told``, in the order ``failing_gates`` tells them) and what
    each holds back, decided here where each is made - never read back from a reason's code:
    ``authority``, this instance's right to act (``gate_leadership``); ``loads``, the load
    data, which holds back a balance and never a heal (``gate_load_data``); ``grace``, a dead
    broker's grace period (``gate_dead_brokers``), which ``goals.writes`` shortens for
    partitions that refuse writes meanwhile."""

    told: tuple[Reason, ...] = ()
    authority: tuple[Reason, ...] = ()
    loads: tuple[Reason, ...] = ()
    grace: tuple[Reason, ...] = ()

    @classmethod
    def of(cls, snap: Snapshot, state: ClusterState) -> Gates:
        authority = gate_leadership(snap)
        dead, grace = _dead_brokers(snap, state)
        loads = gate_load_data(snap, state)
        told = [
            *authority,
            *gate_quorum(snap),
            *dead,
            *gate_under_replication(snap, state),
            *gate_failed_disks(snap, state),
            *loads,
        ]
        return cls(tuple(told), tuple(authority), tuple(loads), tuple(grace))


def failing_gates(
    snap: Snapshot,
    state: ClusterState,
    *,
    plan_moves: int | None = None,
    violations: Sequence[str] = (),
) -> list[Reason]:
    """Every failing gate. Plan gates run only when a plan exists (``plan_moves`` given)."""
    reasons = list(Gates.of(snap, state).told)
    if plan_moves is not None:
        reasons += gate_plan_constraints(violations)
        reasons += gate_budget(snap, plan_moves)
    return reasons
