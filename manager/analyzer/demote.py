"""Demote: leadership off some brokers, no data moved. Each partition they lead gets an
in-sync follower elsewhere as its preferred leader, the demoted brokers last in the list, so
Kafka's own preferred-leader rebalancing does not bring them back.

A partition with no replica outside the demoted brokers (replication factor 1 on one of them)
cannot lose its leader without moving data, which a demote never does: it is ``kept``, not
``left`` - waiting does not change it. One whose replicas elsewhere are out of its ISR, dead,
kept out or without room is ``left``, with which of these it is: that can change."""

from __future__ import annotations

from dataclasses import dataclass, field

from manager.analyzer.moves import LeaderMove
from manager.analyzer.placement_state import ClusterState


@dataclass
class DemotePlan:
    moves: list[LeaderMove] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # could lead elsewhere later: why not now
    kept: list[str] = field(default_factory=list)  # no replica elsewhere: never, by a demote


def plan_demote(state: ClusterState, brokers: frozenset[int], max_moves: int) -> DemotePlan:
    """Leadership off ``brokers``: per partition they lead, the least loaded usable in-sync
    follower outside them that has room for the traffic a leader serves."""
    plan = DemotePlan()
    led = [p for b in sorted(brokers) for p in state.partitions_on(b) if state.leader[p] == b]
    led.sort(key=lambda p: (state.topic[p], state.number[p]))
    for p in led:
        if all(b in brokers for b in state.replicas[p]):
            plan.kept.append(state.name(p))
            continue
        if len(plan.moves) >= max_moves:
            plan.left.append(f"{state.name(p)}: the move budget is spent")
            continue
        out = state.bout[p]
        followers = [
            f
            for f in state.isr[p]
            if f not in brokers
            and state.usable(f)
            and state.fits(f, 0.0, out, 0.0, adds_replica=False)
        ]
        if not followers:
            plan.left.append(_why_none(state, p, brokers))
            continue
        new = min(followers, key=lambda f: (state.net_util(f), f))
        before = state.replicas[p]
        state.move_leader(p, new)
        after = (
            *(b for b in state.replicas[p] if b not in brokers),
            *(b for b in before if b in brokers),
        )
        state.set_replicas(p, after)
        plan.moves.append(LeaderMove(p, before, after, new))
    return plan


def _why_none(state: ClusterState, p: int, brokers: frozenset[int]) -> str:
    """Why none of ``p``'s replicas outside ``brokers`` can lead it, each with its cause."""
    causes = []
    out = state.bout[p]
    for f in (b for b in state.replicas[p] if b not in brokers):
        if f not in state.isr[p]:
            causes.append(f"broker {f} is out of its ISR")
        elif not state.alive[f]:
            causes.append(f"broker {f} is dead")
        elif f in state.kept_out:
            causes.append(f"broker {f} is {state.kept_out.because(f)}")
        else:
            causes.append(
                f"broker {f} has no room for its leader's {out:.0f} B/s out "
                f"({state.load_out[f]:.0f} of {state.lim_out[f]:.0f} B/s)"
            )
    return f"{state.name(p)}: no follower outside {sorted(brokers)} can lead it: " + ", ".join(
        causes
    )


def plan_return(state: ClusterState, broker: int, share: int, max_moves: int) -> DemotePlan:
    """Leadership back to ``broker`` (a demoted broker that recovered), up to ``share``: the
    partitions it follows in sync whose leader leads the most, it first in their replica list,
    so Kafka's own preferred-leader rebalancing keeps it there."""
    plan = DemotePlan()
    want = min(max_moves, share - state.leaders[broker])
    if want <= 0 or not state.usable(broker):
        return plan
    followed = [
        p
        for p in state.partitions_on(broker)
        if state.leader[p] not in (broker, None)
        and broker in state.isr[p]
        and state.fits(broker, 0.0, state.bout[p], 0.0, adds_replica=False)
    ]
    followed.sort(
        key=lambda p: (-state.leaders[state.leader[p] or 0], state.topic[p], state.number[p])
    )
    for p in followed[:want]:
        before = state.replicas[p]
        state.move_leader(p, broker)
        state.set_replicas(p, (broker, *(b for b in before if b != broker)))
        plan.moves.append(LeaderMove(p, before, state.replicas[p], broker))
    return plan
