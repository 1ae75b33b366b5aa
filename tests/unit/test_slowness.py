"""The slow-broker score (manager/analyzer/slowness.py): each figure against the floor, the
broker's own history and its peers; rise, decay and the states; pure, no I/O."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, NOW, broker, make, part

from manager.analyzer.slowness import (
    Change,
    Track,
    fair_share,
    judge,
    slow_figure,
    too_many_slow,
)
from manager.daemon.slow_tracker import SlowTracker
from manager.model.slowness import SlowBrokerPolicy
from manager.model.snapshot import Snapshot

POLICY = {"min_history": 2, "slow_score": 3.0, "max_score": 4.0, "recover_ms": 10_000}
S = 2_000  # one sample every 2 s


def _snap(
    probes: dict[int, float | None], at_ms: int, policy: dict[str, Any] | None = None
) -> Snapshot:
    brokers = [
        broker(
            b,
            f"/r{b}",
            latency=None if ms is None else {"sampled_at_ms": at_ms, "probe_p90_ms": ms},
        )
        for b, ms in probes.items()
    ]
    ids = sorted(probes)
    parts = [part(n, [ids[n % len(ids)], ids[(n + 1) % len(ids)]], size=GB) for n in range(12)]
    return make(brokers, {"t": parts}, policy={"slow_brokers": policy or POLICY}, taken_at=at_ms)


def _run(samples: list[dict[int, float | None]], policy: dict[str, Any] | None = None) -> list:
    """Judge one snapshot per sample; each cycle's snapshot and changes."""
    tracks: dict[int, Track] = {}
    out = []
    for i, probes in enumerate(samples):
        tracks, snap, changes = _judged(tracks, _snap(probes, NOW + i * S, policy), NOW + i * S)
        out.append((snap, changes))
    return out


def _judged(
    tracks: dict[int, Track], snap: Snapshot, now_ms: int
) -> tuple[dict[int, Track], Snapshot, list[Change]]:
    """One cycle's judgement, and the snapshot the build would have made with it."""
    policy = snap.policy.slow_brokers
    tracks, brokers, changes = judge(tracks, snap.brokers, snap.topics, policy, now_ms)
    return tracks, snap.model_copy(update={"brokers": brokers}), changes


def _tracked(tracker: SlowTracker, snap: Snapshot) -> Snapshot:
    brokers = tracker.judge(snap.brokers, snap.topics, snap.policy, snap.taken_at)
    return snap.model_copy(update={"brokers": brokers})


def _state(snap: Snapshot, b: int) -> tuple[str, float]:
    s = next(x for x in snap.brokers if x.id == b).slowness
    assert s is not None
    return s.state, s.score


def test_a_figure_is_slow_only_above_the_floor_its_history_and_its_peers() -> None:
    policy = SlowBrokerPolicy(floor_ms=50, own_factor=3, peer_factor=3, min_history=2)
    assert slow_figure("probe_p90_ms", 40, (), [1.0], policy) is None  # under the floor
    assert slow_figure("probe_p90_ms", 100, (40.0, 40.0), [1.0], policy) is None  # own x3
    assert slow_figure("probe_p90_ms", 100, (2.0, 2.0), [40.0], policy) is None  # peers x3
    said = slow_figure("probe_p90_ms", 200, (2.0, 2.0), [3.0, 5.0], policy)
    assert said is not None
    assert "200.0 ms over 50.0 ms" in said and "own median 2.0 ms" in said
    assert "peers' median 4.0 ms" in said
    # Too little history: the peers and the floor judge alone, and it says so.
    young = slow_figure("probe_p90_ms", 200, (2.0,), [3.0], policy)
    assert young is not None and "no history yet" in young


def test_slow_samples_raise_the_score_to_slow_and_a_recovery_gives_leadership_back() -> None:
    normal = {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}
    slow = {**normal, 3: 250.0}
    cycles = _run([normal] * 3 + [slow] * 3 + [normal] * 8 + [normal] * 6)
    assert _state(cycles[2][0], 3) == ("ok", 0.0)
    assert _state(cycles[4][0], 3) == ("ok", 2.0)
    snap, changes = cycles[5]
    assert _state(snap, 3) == ("slow", 3.0)
    [change] = changes
    assert change.broker == 3 and change.state == "slow"
    assert "probe_p90_ms 250.0 ms over 50.0 ms" in change.said
    # Decay 0.5 per normal sample: 6 normal samples back to 0, then recovering.
    assert _state(cycles[10][0], 3) == ("slow", 0.5)
    assert _state(cycles[11][0], 3) == ("recovering", 0.0)
    # recover_ms (10 s = 5 samples) later: returning; it already leads its share, so ok.
    states = [_state(s, 3)[0] for s, _ in cycles[12:]]
    assert states[:4] == ["recovering"] * 4 and "returning" in states
    assert states[-1] == "ok"
    assert all(_state(s, b)[0] == "ok" for s, _ in cycles for b in (1, 2, 4))


def test_one_sample_counts_once_however_many_cycles_see_it() -> None:
    tracks: dict[int, Track] = {}
    snap = _snap({1: 2.0, 2: 2.0, 3: 300.0}, NOW)
    for i in range(5):  # the same sample, five cycles
        tracks, judged, _ = _judged(tracks, snap.model_copy(update={"taken_at": NOW + i}), NOW + i)
    assert _state(judged, 3) == ("ok", 1.0)


def test_a_slow_sample_does_not_enter_the_broker_s_own_history() -> None:
    cycles = _run([{1: 2.0, 2: 2.0}] * 3 + [{1: 2.0, 2: 500.0}] * 4)
    tracks: dict[int, Track] = {}
    for i, (snap, _) in enumerate(cycles):
        tracks, _, _ = _judged(tracks, snap, NOW + i * S)
    assert tracks[2].history[0] == (2.0, 2.0, 2.0)


def test_a_broker_without_figures_keeps_its_score() -> None:
    cycles = _run([{1: 2.0, 2: 300.0}, {1: 2.0, 2: None}, {1: 2.0, 2: None}])
    assert _state(cycles[-1][0], 2) == ("ok", 1.0)


def test_more_slow_brokers_than_the_fraction_allows_is_the_cluster() -> None:
    policy = SlowBrokerPolicy(max_slow_fraction=0.1)
    assert not too_many_slow(1, 4, policy)  # one broker may always be slow
    assert too_many_slow(2, 10, policy)
    assert not too_many_slow(2, 20, policy)
    assert too_many_slow(2, 4, SlowBrokerPolicy(max_slow_fraction=0.34))


def test_the_tracker_says_when_the_cluster_is_slow_and_when_it_is_no_longer() -> None:
    tracker = SlowTracker()
    policy = {**POLICY, "slow_score": 1.0, "decay": 1.0}
    _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}, NOW, policy))
    assert not tracker.take_changes()
    _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 300.0, 4: 300.0}, NOW + S, policy))
    changes = tracker.take_changes()
    assert tracker.cluster_slow
    cluster = [c for c in changes if c.broker is None]
    assert cluster and "the cluster is slow: brokers [3, 4] of 4" in cluster[0].said
    _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}, NOW + 2 * S, policy))
    assert not tracker.cluster_slow
    assert any(c.said == "the cluster is no longer slow" for c in tracker.take_changes())


def test_demotions_are_counted_in_a_slow_spell_and_the_bound_is_said_once() -> None:
    """Issue 39.3: a slow broker whose leadership keeps coming back is demoted at most
    ``max_demotions`` times in one slow spell; the count starts over with the next spell."""
    tracker = SlowTracker()
    policy = {**POLICY, "slow_score": 1.0, "decay": 1.0, "max_demotions": 2}
    bound = SlowBrokerPolicy(**policy)
    _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}, NOW, policy))
    judged = _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 300.0, 4: 2.0}, NOW + S, policy))
    assert _state(judged, 3)[0] == "slow"
    tracker.take_changes()
    tracker.demoted((3,), bound)
    assert tracker.take_changes() == []
    tracker.demoted((3,), bound)
    [said] = tracker.take_changes()
    assert said.broker == 3
    assert said.said.startswith("broker 3 is still slow after 2 demotions: no more while")
    tracker.demoted((3,), bound)
    assert tracker.take_changes() == []  # said once
    judged = _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 300.0, 4: 2.0}, NOW + 2 * S, policy))
    slowness = next(b for b in judged.brokers if b.id == 3).slowness
    assert slowness is not None and slowness.demotions == 3
    # No longer slow: the count starts over.
    for i in range(3, 6):
        judged = _tracked(tracker, _snap({1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}, NOW + i * S, policy))
    slowness = next(b for b in judged.brokers if b.id == 3).slowness
    assert slowness is not None and slowness.state != "slow" and slowness.demotions == 0


def test_fair_share_is_the_even_spread_of_leadership_over_live_brokers() -> None:
    snap = _snap({1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0}, NOW)
    assert fair_share(snap) == 3  # 12 partitions, 4 brokers


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=5000, allow_nan=False), min_size=1, max_size=30))
def test_the_score_stays_between_zero_and_its_cap(probes: list[float]) -> None:
    cycles = _run([{1: 2.0, 2: 2.0, 3: ms} for ms in probes])
    for snap, _ in cycles:
        _, score = _state(snap, 3)
        assert 0.0 <= score <= POLICY["max_score"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=5000, allow_nan=False), min_size=1, max_size=20))
def test_a_broker_as_fast_as_its_peers_is_never_slow(probes: list[float]) -> None:
    # Every broker has the same figure each sample: none stands out from its peers.
    cycles = _run([dict.fromkeys((1, 2, 3), ms) for ms in probes])
    assert all(_state(s, b) == ("ok", 0.0) for s, _ in cycles for b in (1, 2, 3))


def test_a_broker_back_from_a_restart_is_not_scored_while_it_warms_up() -> None:
    """Issue 39.7: the first samples after a restart (cold caches, catch-up) are neither slow
    nor history; past ``warm_up_ms`` the same figures are judged as usual."""
    policy = {**POLICY, "warm_up_ms": 20_000}
    tracks: dict[int, Track] = {}
    back = NOW + 2 * S
    states = []
    for i in range(16):
        at = NOW + i * S
        snap = _snap({1: 2.0, 2: 2.0, 3: 2.0, 4: 400.0 if i >= 2 else 2.0}, at, policy)
        if i >= 2:  # broker 4 returned at ``back``: its replicas catching up, its probes slow
            brokers = tuple(
                b.model_copy(update={"returned_at_ms": back}) if b.id == 4 else b
                for b in snap.brokers
            )
            snap = snap.model_copy(update={"brokers": brokers})
        tracks, judged, _ = _judged(tracks, snap, at)
        states.append(_state(judged, 4))
    warm = [s for i, s in enumerate(states) if i >= 2 and NOW + i * S < back + 20_000]
    assert warm and all(s == ("ok", 0.0) for s in warm)  # ten samples, no score at all
    assert states[-1][0] == "slow"  # still slow after its warm-up: judged as any other
