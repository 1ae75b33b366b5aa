"""The rejoin goal (manager/analyzer/goals/rejoin.py): a broker that came back leads its
preferred partitions again only once enough of its replicas are in sync, a batch per cycle,
client topics before internal ones, by preferred elections (no data, no list changed); its
switches hold it back. Pure: decide() over snapshots."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, NOW, broker, make, part

from manager.analyzer.planner import decide
from manager.analyzer.rejoin import catch_ups
from manager.model.decision import Decision, ElectPreferredLeader
from manager.model.moves import Move
from manager.model.snapshot import Snapshot

RACKS = {1: "/r1", 2: "/r2", 3: "/r3", 4: "/r1", 5: "/r2", 6: "/r3"}
QUIET = 10 * 1000
BACK = 3


def _cluster(
    lagging: int = 0,
    *,
    returned_ago_ms: int | None = 60_000,
    topics: tuple[str, ...] = ("t",),
    partitions: int = 24,
    kafka_rebalances: bool | None = False,
    **policy: Any,
) -> Snapshot:
    """Six brokers on three racks, ``partitions`` partitions of RF 3 per topic; broker 3 came
    back ``returned_ago_ms`` ago and leads nothing yet; ``lagging`` of its replicas (the first
    ones, over all topics) are still out of their ISR. Kafka's own rebalancing is off unless
    ``kafka_rebalances`` says otherwise (None: not read)."""
    back = {} if returned_ago_ms is None else {"returned_at_ms": NOW - returned_ago_ms}
    brokers = [broker(b, RACKS[b], **(back if b == BACK else {})) for b in RACKS]
    out: dict[str, list[dict[str, Any]]] = {}
    left = lagging
    for name in topics:
        parts = []
        for n in range(partitions):
            replicas = [n % 6 + 1, (n + 1) % 6 + 1, (n + 2) % 6 + 1]
            isr = list(replicas)
            if BACK in replicas and left > 0:
                isr.remove(BACK)
                left -= 1
            leader = next(b for b in replicas if b != BACK)
            parts.append(
                part(n, replicas, isr=isr, leader=leader, size=GB, bytes_in=QUIET, bytes_out=QUIET)
            )
        out[name] = parts
    return make(brokers, out, policy=policy, kafka_auto_leader_rebalance=kafka_rebalances)


def _elected(decision: Decision) -> list[tuple[str, int, int]]:
    return [
        (a.topic, a.partition, a.leader)
        for a in decision.actions
        if isinstance(a, ElectPreferredLeader)
    ]


def _preferred(snap: Snapshot, broker_id: int) -> set[tuple[str, int]]:
    return {
        (t.name, p.partition)
        for t in snap.topics
        for p in t.partitions
        if p.replicas[0] == broker_id and broker_id in p.isr
    }


def test_a_broker_back_and_in_sync_gets_its_preferred_leadership_by_elections_only() -> None:
    snap = _cluster()
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    assert decision.summary == (
        "broker 3 has caught up: 4 of its 4 preferred leaderships return, no data"
    )
    elected = _elected(decision)
    assert {(t, p) for t, p, _ in elected} == _preferred(snap, BACK)
    assert {leader for _, _, leader in elected} == {BACK}
    assert not [a for a in decision.actions if isinstance(a, Move)]
    assert decision.bytes_to_move == 0
    [why] = [r.message for r in decision.reasons if r.code == "broker_rejoined"]
    assert why == "broker 3 came back and has 12 of its 12 replicas in sync (100%), at least 95%"


def test_no_leadership_returns_while_the_broker_is_still_catching_up_and_the_noop_says_so() -> None:
    # 12 replicas on broker 3; one out of sync is 92 %, under the default 95 %.
    decision = decide(_cluster(lagging=1))
    assert _elected(decision) == [], decision.summary
    assert decision.outcome == "noop"
    assert [r.message for r in decision.reasons if r.code == "broker_rejoined"] == [
        "broker 3 is catching up: 11 of its 12 replicas in sync (92%); its 4 preferred "
        "leaderships return at 95%"
    ]


def test_the_in_sync_share_is_a_policy() -> None:
    # Broker 3 prefers partitions 2, 8, 14 and 20; the one out of sync is partition 0's.
    snap = _cluster(lagging=1, rejoin={"in_sync_share": 0.9})
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    [why] = [r.message for r in decision.reasons if r.code == "broker_rejoined"]
    assert "11 of its 12 replicas in sync (92%), at least 90%" in why
    assert [p for _, p, _ in _elected(decision)] == [2, 8, 14, 20]


def test_leadership_returns_in_batches_client_topics_before_internal_ones() -> None:
    snap = _cluster(topics=("__consumer_offsets", "orders"), rejoin={"leaders_per_cycle": 3})
    decision = decide(snap)
    elected = _elected(decision)
    assert [t for t, _, _ in elected] == ["orders"] * 3
    assert "5 more in later cycles, internal topics last" in " ".join(
        r.message for r in decision.reasons
    )
    # The next cycles: what was elected leads; the internal topic comes last, in batches of
    # its own (the last client leadership goes alone, not beside two internal ones).
    order: list[str] = []
    batches: list[list[str]] = []
    while elected:
        order += [t for t, _, _ in elected]
        batches.append([t for t, _, _ in elected])
        data = snap.model_dump(mode="json")
        done = {(t, p) for t, p, _ in elected}
        for topic in data["topics"]:
            for p in topic["partitions"]:
                if (topic["name"], p["partition"]) in done:
                    p["leader"] = BACK
        snap = Snapshot.model_validate(data)
        elected = _elected(decide(snap))
    assert order == ["orders"] * 4 + ["__consumer_offsets"] * 4
    assert batches == [
        ["orders"] * 3,
        ["orders"],
        ["__consumer_offsets"] * 3,
        ["__consumer_offsets"],
    ]


def test_a_broker_back_longer_than_the_recovery_window_is_left_to_kafka() -> None:
    decision = decide(_cluster(returned_ago_ms=31 * 60_000))
    assert _elected(decision) == [], decision.summary


def test_with_kafkas_own_rebalancing_on_or_unknown_kafka_hands_it_back() -> None:
    for kafka_rebalances in (True, None):
        for lagging in (0, 1):
            decision = decide(_cluster(lagging, kafka_rebalances=kafka_rebalances))
            assert _elected(decision) == [], decision.summary
            assert "broker_rejoined" not in {r.code for r in decision.reasons}


def test_a_broker_that_never_left_gets_nothing_from_this_goal() -> None:
    decision = decide(_cluster(returned_ago_ms=None))
    assert "broker_rejoined" not in {r.code for r in decision.reasons}


def test_the_switches_hold_it_back_as_would_act() -> None:
    for goals in ({"rejoin_leadership": False}, {"leadership_moves": False}):
        decision = decide(_cluster(goals=goals))
        assert decision.outcome == "noop"
        assert decision.would_act is not None
        assert decision.summary.startswith("would act (disabled by policy.goals.")
        assert _elected(decision)  # the plan it would carry out, kept for the audit


def test_a_dead_broker_is_healed_first() -> None:
    snap = _cluster()
    data = snap.model_dump(mode="json")
    data["brokers"][5] = broker(6, "/r3", alive=False)
    decision = decide(Snapshot.model_validate(data))
    assert "broker_rejoined" not in {r.code for r in decision.reasons}


@settings(max_examples=60, deadline=None)
@given(
    lagging=st.integers(0, 12),
    share=st.floats(0.5, 1.0),
    batch=st.integers(1, 10),
    internal_first=st.booleans(),
)
def test_only_in_sync_preferred_replicas_lead_a_batch_at_a_time_and_only_when_caught_up(
    lagging: int, share: float, batch: int, internal_first: bool
) -> None:
    topics = ("__transaction_state", "t") if internal_first else ("t", "__transaction_state")
    snap = _cluster(
        lagging,
        topics=topics,
        partitions=12,
        rejoin={"in_sync_share": share, "leaders_per_cycle": batch},
    )
    decision = decide(snap)
    elected = _elected(decision)
    replicas = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
    on_back = [p for p in replicas.values() if BACK in p.replicas]
    caught_up = sum(1 for p in on_back if BACK in p.isr) / len(on_back)
    if caught_up < share:
        assert elected == []
        return
    preferred = _preferred(snap, BACK)
    client_waiting = sum(1 for t, _ in preferred if not t.startswith("__"))
    # Client topics first; the internal ones in batches of their own once none is waiting.
    assert len(elected) == min(batch, client_waiting or len(preferred))
    for topic, number, leader in elected:
        p = replicas[(topic, number)]
        assert leader == BACK == p.replicas[0] and BACK in p.isr
    kinds = {t.startswith("__") for t, _, _ in elected}
    assert kinds <= {client_waiting == 0}


# -- catch-ups: the copies of a returning broker, throttled as moves' copies -----------------


def test_a_returning_broker_catches_up_on_each_partition_it_is_behind_on() -> None:
    snap = _cluster(lagging=5)
    found = catch_ups(snap).partitions
    assert len(found) == 5
    assert [c.tp for c in found] == sorted(c.tp for c in found)
    for c in found:
        row = next(p for t in snap.topics for p in t.partitions if (t.name, p.partition) == c.tp)
        assert c.replicas == tuple(row.replicas)
        assert c.behind == (BACK,)
        move, sources = c.as_copy()
        # Throttled as the move that would add broker 3 to the replicas in sync.
        assert move.target == c.replicas
        assert sources == tuple(b for b in c.replicas if b != BACK)


def test_a_broker_in_sync_or_back_long_ago_or_with_the_switch_off_catches_up_nothing() -> None:
    assert catch_ups(_cluster(lagging=0)).partitions == ()
    # Outside the recovery window its lag is no longer a catch-up (it is unexplained).
    assert catch_ups(_cluster(lagging=5, returned_ago_ms=3_600_000)).partitions == ()
    assert catch_ups(_cluster(lagging=5, rejoin={"throttle_catch_up": False})).partitions == ()


def test_a_broker_down_within_its_grace_is_armed_for_its_return_and_one_past_it_is_not() -> None:
    """The throttle is armed on the leaders while the broker is away, so that its first fetch
    when it returns is held; past its grace the heal's moves take its partitions over."""
    grace = 600_000

    def snap(dead_for_ms: int) -> Snapshot:
        brokers = [broker(b, RACKS[b], **({"alive": False} if b == BACK else {})) for b in RACKS]
        brokers[BACK - 1]["dead_since_ms"] = NOW - dead_for_ms
        parts = [
            part(n, [n % 6 + 1, (n + 1) % 6 + 1, (n + 2) % 6 + 1], isr=None, leader="first")
            for n in range(12)
        ]
        for p in parts:
            p["isr"] = [b for b in p["replicas"] if b != BACK]
            p["leader"] = p["isr"][0]
        return make(brokers, {"t": parts}, policy={"dead_grace_ms": grace})

    armed = catch_ups(snap(dead_for_ms=60_000)).partitions
    assert catch_ups(snap(dead_for_ms=60_000)).away == {BACK}
    assert {c.partition for c in armed} == {
        n for n in range(12) if BACK in (n % 6 + 1, (n + 1) % 6 + 1, (n + 2) % 6 + 1)
    }
    assert {c.behind for c in armed} == {(BACK,)}
    past = catch_ups(snap(dead_for_ms=grace + 1))
    assert past.partitions == () and past.away == frozenset() and past.down == {BACK}


def test_a_partition_without_a_serving_leader_has_no_catch_up() -> None:
    """Nothing copies into a replica of a partition that has no leader in its ISR."""
    back = {"returned_at_ms": NOW - 60_000}
    brokers = [broker(b, RACKS[b], **(back if b == BACK else {})) for b in RACKS]
    served = part(0, [1, 2, BACK], isr=[1, 2], leader=1)
    leaderless = part(1, [1, 2, BACK], isr=[], leader=None)
    snap = make(brokers, {"t": [served, leaderless]})
    assert [c.tp for c in catch_ups(snap).partitions] == [("t", 0)]
