"""The slow-broker score (docs/manager.md, "Slow brokers"): pure, one step per cycle.

A broker that is slow but alive stays registered and in the ISR while every request that
touches it waits on it. Its agent reports how long it takes to answer (``BrokerLatency``): the
agent's own probes, and the broker's Produce and log-flush percentiles. A sample is *slow*
when one of those figures is above the floor, above ``own_factor`` x the broker's own median
(once it has ``min_history`` normal samples) and above ``peer_factor`` x the median of the
other live brokers' newest figures. Each slow sample adds ``rise`` to the score, each other
one takes ``decay`` off; each sample is counted once, however many cycles see it.

A broker back from a restart or a fencing (``Broker.returned_at_ms``) warms up: the samples of
its first ``warm_up_ms`` are neither slow nor part of its history (cold page cache, its
replicas catching up), so a restart never demotes a broker.

The states: ``slow`` from ``slow_score`` on (the planner demotes it), until the score is back
to 0; then ``recovering``; ``recover_ms`` later ``returning`` (the planner gives it its share
of leadership back), and ``ok`` once it leads that share (or ``recover_ms`` after that, when
it cannot). More slow brokers than ``max_slow_fraction`` of the live ones (and more than one)
is the cluster, not a broker: ``too_many_slow`` says so, and nothing is done.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

import numpy as np

from manager.model.slowness import BrokerLatency, SlowBrokerPolicy, Slowness, SlowState
from manager.model.snapshot import Broker, Snapshot
from manager.model.topics import Topics, topics_table

FIGURES = ("probe_p90_ms", "produce_local_ms", "log_flush_ms")


@dataclass(frozen=True)
class Track:
    """What the manager remembers of one broker between cycles."""

    score: float = 0.0
    state: SlowState = "ok"
    since_ms: int = 0
    history: tuple[tuple[float, ...], ...] = tuple(() for _ in FIGURES)  # normal samples
    last_sample_ms: int | None = None
    evidence: str = ""
    demotions: int = 0  # demotion plans started since it was found slow


@dataclass(frozen=True)
class Change:
    """A broker's state changed this cycle: what the audit log says."""

    broker: int | None  # None: the cluster
    state: SlowState
    score: float
    said: str


def too_many_slow(slow: int, live: int, policy: SlowBrokerPolicy) -> bool:
    """More slow brokers than the policy's share of the live ones, and more than one."""
    return slow > max(1, int(policy.max_slow_fraction * live))


def fair_share(snap: Snapshot) -> int:
    """The leaderships a broker leads when they are spread evenly over the live brokers."""
    live = sum(1 for b in snap.brokers if b.alive)
    led = int(np.count_nonzero(topics_table(snap.topics).leader >= 0))
    return led // live if live else 0


def slow_figure(
    name: str, value: float, own: tuple[float, ...], peers: list[float], policy: SlowBrokerPolicy
) -> str | None:
    """Why ``value`` is slow, with its numbers; None when it is not."""
    own_median = statistics.median(own) if len(own) >= max(1, policy.min_history) else None
    peer_median = statistics.median(peers) if peers else None
    bound = max(
        policy.floor_ms,
        policy.own_factor * own_median if own_median is not None else 0.0,
        policy.peer_factor * peer_median if peer_median is not None else 0.0,
    )
    if value <= bound:
        return None
    own_said = f"{own_median:.1f} ms" if own_median is not None else "no history yet"
    peer_said = f"{peer_median:.1f} ms" if peer_median is not None else "no peer figure"
    return (
        f"{name} {value:.1f} ms over {bound:.1f} ms (floor {policy.floor_ms:.0f} ms, own median "
        f"{own_said}, peers' median {peer_said})"
    )


def _figures(latency: BrokerLatency | None) -> tuple[float | None, ...]:
    if latency is None:
        return tuple(None for _ in FIGURES)
    return tuple(getattr(latency, f) for f in FIGURES)


def _scored(
    track: Track, latency: BrokerLatency, peers: list[list[float]], policy: SlowBrokerPolicy
) -> Track:
    """The track after one new sample: its score, and its history if the sample was normal."""
    found = [
        why
        for name, value, own, others in zip(
            FIGURES, _figures(latency), track.history, peers, strict=True
        )
        if value is not None and (why := slow_figure(name, value, own, others, policy))
    ]
    if found:
        return replace(
            track,
            score=min(policy.max_score, track.score + policy.rise),
            last_sample_ms=latency.sampled_at_ms,
            evidence="; ".join(found),
        )
    history = tuple(
        own if value is None else (*own, value)[-policy.history_samples :]
        for own, value in zip(track.history, _figures(latency), strict=True)
    )
    return replace(
        track,
        score=max(0.0, track.score - policy.decay),
        last_sample_ms=latency.sampled_at_ms,
        history=history,
    )


def _next_state(
    track: Track, leads_share: bool, policy: SlowBrokerPolicy, now_ms: int
) -> SlowState:
    state, held_ms = track.state, now_ms - track.since_ms
    if track.score >= policy.slow_score:
        return "slow"
    if state == "slow" and track.score <= 0:
        return "recovering"
    if state == "recovering" and held_ms >= policy.recover_ms:
        return "returning"
    if state == "returning" and (leads_share or held_ms >= policy.recover_ms):
        return "ok"
    return state


def _sentence(broker: int, state: SlowState, track: Track, policy: SlowBrokerPolicy) -> str:
    score = f"score {track.score:.1f} of {policy.slow_score:.1f}"
    if state == "slow":
        return f"broker {broker} is slow ({score}): {track.evidence}"
    if state == "recovering":
        wait = policy.recover_ms / 1000
        return f"broker {broker} is no longer slow ({score}); leadership returns after {wait:.0f} s"
    if state == "returning":
        return f"broker {broker} has not been slow for a while: its leadership may return"
    return f"broker {broker} is ok again ({score})"


def judge(
    tracks: dict[int, Track],
    brokers: tuple[Broker, ...],
    topics: Topics,
    policy: SlowBrokerPolicy,
    now_ms: int,
) -> tuple[dict[int, Track], tuple[Broker, ...], list[Change]]:
    """One cycle: each live broker's new sample scored, its state moved on, and the brokers
    each with its ``slowness``. A dead broker keeps its track (a restart is no cure)."""
    live = [b for b in brokers if b.alive]
    figures = {b.id: _figures(b.latency) for b in live}
    led = topics_table(topics).leader
    ids, counts = np.unique(led[led >= 0], return_counts=True)
    by_leader = dict(zip(ids.tolist(), counts.tolist(), strict=True))
    leaders = {b.id: by_leader.get(b.id, 0) for b in live}
    share = sum(leaders.values()) // len(live) if live else 0  # fair_share, from the counts
    out, changes = dict(tracks), []
    for b in live:
        track = out.get(b.id, Track(since_ms=now_ms))
        if b.latency is not None and warming_up(b, policy):
            track = replace(track, last_sample_ms=b.latency.sampled_at_ms)
        elif b.latency is not None and b.latency.sampled_at_ms != track.last_sample_ms:
            peers = [
                [v for o, fs in figures.items() if o != b.id and (v := fs[i]) is not None]
                for i in range(len(FIGURES))
            ]
            track = _scored(track, b.latency, peers, policy)
        state = _next_state(track, leaders[b.id] >= share, policy, now_ms)
        if state != track.state:
            track = replace(track, state=state, since_ms=now_ms, demotions=0)
            changes.append(Change(b.id, state, track.score, _sentence(b.id, state, track, policy)))
        out[b.id] = track
    return out, tuple(_with_slowness(b, out.get(b.id)) for b in brokers), changes


def warming_up(broker: Broker, policy: SlowBrokerPolicy) -> bool:
    """Its newest sample was taken within ``warm_up_ms`` of its return from a restart."""
    back, latency = broker.returned_at_ms, broker.latency
    if back is None or latency is None:
        return False
    return latency.sampled_at_ms < back + policy.warm_up_ms


def _with_slowness(broker: Broker, track: Track | None) -> Broker:
    if track is None:
        return broker
    slowness = Slowness(
        state=track.state,
        score=track.score,
        since_ms=track.since_ms,
        evidence=track.evidence,
        demotions=track.demotions,
    )
    return broker.model_copy(update={"slowness": slowness})


def demoted(
    tracks: dict[int, Track], brokers: tuple[int, ...], policy: SlowBrokerPolicy
) -> list[Change]:
    """A demotion plan was started for ``brokers``: counted in their slow spell. The change
    for each broker that reached ``max_demotions`` (the goal demotes it no more)."""
    changes = []
    for b in brokers:
        track = tracks.get(b)
        if track is None:
            continue
        track = tracks[b] = replace(track, demotions=track.demotions + 1)
        if track.demotions == policy.max_demotions:
            said = (
                f"broker {b} is still slow after {track.demotions} demotions: no more while it "
                "stays slow (its leadership keeps coming back, or its elections do not take: "
                "the action records say why for each partition)"
            )
            changes.append(Change(b, track.state, track.score, said))
    return changes
