"""One example per confidence gate; failing gates are all reported together."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_fixtures import HOUR, NOW, broker, make, part

from manager.analyzer.gates import failing_gates, gate_budget
from manager.analyzer.health import alerts_for, health_facts
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide
from manager.analyzer.under_replication import lag_explained, under_replication
from manager.model.moves import Move

ALIVE = {1, 2, 3, 4, 5}


def _snap(*, dead: bool = True, **kw: Any) -> Any:
    alive = ALIVE if dead else ALIVE | {6}
    brokers = kw.pop("brokers", None) or [
        broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in alive) for i in range(1, 7)
    ]
    topics = kw.pop("topics", None) or {
        "t": [part(n, [6, 1 + n % 5, 1 + (n + 1) % 5], alive=alive) for n in range(4)]
    }
    return make(brokers, topics, **kw)


def _codes(snap: Any) -> set[str]:
    return {r.code for r in failing_gates(snap, ClusterState(snap))}


def test_clean_snapshot_passes_every_gate() -> None:
    assert _codes(_snap()) == set()
    assert decide(_snap()).outcome == "act"


def test_not_leader_and_stale_epoch() -> None:
    lead = {"holder": "m2", "epoch": 2, "current_epoch": 3, "is_leader": False}
    snap = _snap(leadership=lead)
    assert _codes(snap) == {"not_leader", "stale_fencing_epoch"}
    assert decide(snap).outcome == "refuse"


def test_standby_with_nothing_to_do_is_a_noop() -> None:
    lead = {"holder": "m2", "epoch": 2, "current_epoch": 3, "is_leader": False}
    assert decide(_snap(dead=False, leadership=lead)).outcome == "noop"


def test_too_many_dead_brokers_count_and_fraction() -> None:
    assert "too_many_dead_brokers" in _codes(_snap(policy={"max_dead_brokers": 0}))
    assert "too_many_dead_brokers" in _codes(_snap(policy={"max_dead_fraction": 0.1}))


def test_dead_within_grace() -> None:
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE) for i in range(1, 7)]
    brokers[5]["dead_since_ms"] = NOW - 60_000
    snap = _snap(brokers=brokers)
    assert _codes(snap) == {"dead_within_grace"}
    decision = decide(snap)
    assert decision.outcome == "wait"  # a wait, not a refusal: nobody is paged
    assert decision.actions == ()
    assert decision.exit_code == 0
    assert "dead 60 s of its 600 s grace period (540 s left)" in decision.reasons[0].message
    assert decision.summary == decision.reasons[0].message


def test_within_grace_a_partition_only_the_dead_broker_held_is_waited_for_not_refused() -> None:
    """The broker may come back, and the partition with it: a wait, no page. Seen on the real
    cluster: 'refuse (heal): dead_within_grace, no_live_replica' and an alert for a broker
    that had been dead 0 s."""
    brokers = [broker(1, "/r1"), broker(2, "/r2"), broker(3, "/r1", alive=False)]
    brokers[2]["dead_since_ms"] = NOW - 1_000
    snap = make(brokers, {"t": [part(0, [3]), part(1, [1, 3]), part(2, [1, 2])]})
    decision = decide(snap)
    assert decision.outcome == "wait", decision.summary
    assert [r.code for r in decision.reasons] == ["dead_within_grace"]
    assert alerts_for(decision, audit_on_failover=False) == {}
    # Past the grace: the rest is healed and the lone partition refused by name.
    brokers[2]["dead_since_ms"] = NOW - 3_600_000
    healed = decide(make(brokers, {"t": [part(0, [3]), part(1, [1, 3]), part(2, [1, 2])]}))
    assert healed.outcome == "act" and [r.code for r in healed.unhealed] == ["no_live_replica"]
    assert list(alerts_for(healed, audit_on_failover=False)) == ["refused:no_live_replica"]


def test_dead_within_grace_with_another_failing_gate_refuses() -> None:
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE) for i in range(1, 7)]
    brokers[5]["dead_since_ms"] = NOW - 60_000
    stale = {"holder": "m2", "epoch": 2, "current_epoch": 3, "is_leader": False}
    decision = decide(_snap(brokers=brokers, leadership=stale))
    assert decision.outcome == "refuse"
    codes = {r.code for r in decision.reasons}
    assert codes == {"dead_within_grace", "not_leader", "stale_fencing_epoch"}


def _outage(dead_s: dict[int, int], **policy: Any) -> Any:
    """Six brokers; those in ``dead_s`` dead for that many seconds (grace 600 s)."""
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i not in dead_s) for i in range(1, 7)]
    for b, seconds in dead_s.items():
        brokers[b - 1]["dead_since_ms"] = NOW - seconds * 1000
    alive = {i for i in range(1, 7) if i not in dead_s}
    topics = {"t": [part(n, [1 + n % 6, 1 + (n + 2) % 6], alive=alive) for n in range(6)]}
    return _snap(brokers=brokers, topics=topics, policy={"max_dead_brokers": 2, **policy})


def test_an_outage_inside_the_grace_is_a_wait_that_pages_nobody() -> None:
    # Three of six brokers gone at once, a few seconds ago: they may all come back.
    decision = decide(_outage({2: 5, 4: 6, 6: 7}))
    assert decision.outcome == "wait" and decision.actions == ()
    (too_many,) = [r for r in decision.reasons if r.code == "too_many_dead_brokers"]
    assert too_many.wait
    assert too_many.message.startswith("3 of 6 brokers are dead, 3 of them still in their grace")
    assert list(alerts_for(decision, audit_on_failover=False)) == []


def test_an_outage_over_the_limit_only_by_brokers_in_grace_still_waits() -> None:
    # One broker long dead (within the limit of two), two more just gone.
    decision = decide(_outage({2: 3600, 4: 5, 6: 5}))
    assert decision.outcome == "wait"
    assert list(alerts_for(decision, audit_on_failover=False)) == []


def test_an_outage_past_the_grace_refuses_and_pages() -> None:
    decision = decide(_outage({2: 3600, 4: 3600, 6: 5}, max_dead_fraction=0.3))
    assert decision.outcome == "refuse"
    (too_many,) = [r for r in decision.reasons if r.code == "too_many_dead_brokers"]
    assert not too_many.wait and "grace" not in too_many.message
    assert "refused:too_many_dead_brokers" in alerts_for(decision, audit_on_failover=False)
    assert decide(_outage({2: 3600, 4: 3600, 6: 3600})).outcome == "refuse"


def test_dead_broker_in_maintenance_domain() -> None:
    domains = [{"name": "blue", "brokers": [6]}]
    snap = _snap(failure_domains=domains, maintenance_domains=["blue"])
    assert _codes(snap) == {"domain_in_maintenance"}


def test_unexplained_under_replication() -> None:
    topics = {"t": [part(0, [1, 2, 3], isr=[1, 2])]}  # broker 3 alive but out of sync
    snap = _snap(dead=False, topics=topics)
    assert _codes(snap) == {"unexplained_under_replication"}
    decision = decide(snap)
    assert decision.outcome == "refuse"
    assert "t:0" in decision.reasons[0].message


def test_unexplained_lag_is_told_by_link_follower_and_leader() -> None:
    # Broker 3 cannot fetch from broker 1 (a cut link): out of the ISR of what 1 leads only.
    topics = {
        "t": [
            part(0, [1, 2, 3], isr=[1, 2]),
            part(1, [1, 3, 4], isr=[1, 4]),
            part(2, [2, 3, 4], isr=[2, 3, 4]),
            part(3, [4, 5, 2], isr=[4, 2]),
        ]
    }
    snap = _snap(dead=False, topics=topics)
    urp = under_replication(snap)
    assert urp.unexplained == ("t:0", "t:1", "t:3")
    assert urp.behind == ((3, 1, 2), (5, 4, 1))
    [reason] = decide(snap).reasons
    assert reason.message.endswith(
        "out of the ISR: broker 3 behind leader 1 on 2, broker 5 behind leader 4 on 1"
    )
    # A leaderless partition has no link to blame.
    leaderless = {"t": [part(0, [1, 2], isr=[], leader=None)]}
    assert under_replication(_snap(dead=False, topics=leaderless)).behind == ()


def test_under_replication_explained_by_dead_broker_or_own_catch_up() -> None:
    topics = {"t": [part(0, [1, 2, 6], isr=[1, 2], alive=ALIVE)]}
    assert "unexplained_under_replication" not in _codes(_snap(topics=topics))
    topics = {"t": [part(0, [1, 2, 3], isr=[1, 2])]}
    reassign = [{"topic": "t", "partition": 0, "adding_replicas": [3], "started_by_kmedic": True}]
    assert "unexplained_under_replication" not in _codes(
        _snap(dead=False, topics=topics, reassignments=reassign)
    )


@pytest.mark.parametrize(
    ("returned_ago_ms", "explained"),
    [
        (60_000, True),  # restarted a minute ago: catching up
        (30 * 60_000, True),  # the window's last moment
        (30 * 60_000 + 1, False),  # still out of the ISR half an hour later: a person looks
        (None, False),  # never left the metadata (a hang, not a restart)
    ],
)
def test_a_broker_catching_up_after_it_came_back_is_explained_within_the_window(
    returned_ago_ms: int | None, explained: bool
) -> None:
    back = {} if returned_ago_ms is None else {"returned_at_ms": NOW - returned_ago_ms}
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", **(back if i == 3 else {})) for i in range(1, 7)]
    topics = {"t": [part(0, [1, 2, 3], isr=[1, 2])]}
    snap = _snap(dead=False, brokers=brokers, topics=topics)
    assert ("unexplained_under_replication" not in _codes(snap)) is explained
    facts = health_facts(snap)
    assert (facts.urp_explained, facts.urp_unexplained) == ((1, 0) if explained else (0, 1))


def test_the_recovery_window_is_a_policy() -> None:
    brokers = [
        broker(i, "/r1", **({"returned_at_ms": NOW - 120_000} if i == 3 else {}))
        for i in range(1, 7)
    ]
    topics = {"t": [part(0, [1, 2, 3], isr=[1, 2])]}
    snap = _snap(dead=False, brokers=brokers, topics=topics, policy={"recovery_window_ms": 60_000})
    assert "unexplained_under_replication" in _codes(snap)


@pytest.mark.parametrize(
    ("seen_ago_ms", "explained"),
    [
        (300, True),  # the controller has just taken it out of every ISR: it is stopping
        (59_999, True),
        (60_000, False),  # still registered a minute later: not a shutdown, a person looks
        (None, False),  # never in the shape: a lagging follower
    ],
)
def test_a_broker_in_a_controlled_shutdown_leaves_explained_for_a_bounded_time(
    seen_ago_ms: int | None, explained: bool
) -> None:
    """The rolling restart's broker 3, stopping cleanly: registered, leading nothing, out of
    every ISR (and the last in-sync replica of a partition the controller left leaderless)."""
    seen = {} if seen_ago_ms is None else {"shutdown_seen_ms": NOW - seen_ago_ms}
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", **(seen if i == 3 else {})) for i in range(1, 7)]
    topics = {
        "t": [
            part(0, [3, 1, 2], isr=[1, 2], leader=1),
            part(1, [2, 3, 4], isr=[2, 4], leader=2),
            part(2, [3], isr=[3], leader=None),  # its only replica: offline until it is back
        ]
    }
    snap = _snap(dead=False, brokers=brokers, topics=topics)
    assert ("unexplained_under_replication" not in _codes(snap)) is explained
    assert (3 in lag_explained(snap)) is explained
    facts = health_facts(snap)
    assert (facts.urp_explained, facts.urp_unexplained) == ((3, 0) if explained else (0, 3))


def test_offline_partition_with_live_replicas_is_unexplained() -> None:
    topics = {"t": [part(0, [1, 2], isr=[], leader=None)]}
    assert "unexplained_under_replication" in _codes(_snap(dead=False, topics=topics))


def test_stale_load_data_window_and_silent_agent() -> None:
    topics = {"t": [part(n, [6, 1, 2], valid=n == 0, alive=ALIVE) for n in range(4)]}
    assert "stale_load_data" in _codes(_snap(topics=topics))
    brokers = [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE) for i in range(1, 7)]
    brokers[0]["last_stats_ms"] = NOW - HOUR
    assert _codes(_snap(brokers=brokers)) == {"stale_load_data"}


FOREIGN = [  # an operator replacing broker 6's replica of t:0 with broker 3, by hand
    {
        "topic": "t",
        "partition": 0,
        "adding_replicas": [3],
        "removing_replicas": [6],
        "started_by_kmedic": False,
    }
]


def test_a_foreign_reassignment_holds_back_only_what_it_touches() -> None:
    """No gate for the cluster as a whole: the heal goes ahead for every other partition, on
    brokers the reassignment neither adds nor removes, and names the one left to it."""
    snap = _snap(reassignments=FOREIGN)
    assert _codes(snap) == set()
    decision = decide(snap)
    assert decision.outcome == "act"
    moved = {(a.topic, a.partition) for a in decision.actions}
    assert moved == {("t", 1), ("t", 2), ("t", 3)}
    gained = {b for a in decision.actions if isinstance(a, Move) for b in a.target}
    gained -= {b for a in decision.actions if isinstance(a, Move) for b in a.before}
    assert gained and 3 not in gained  # broker 3 is the reassignment's: it gains nothing
    [unhealed] = decision.unhealed
    assert unhealed.code == "foreign_reassignment_in_progress"
    assert unhealed.message.startswith("t:0 is being reassigned by someone else")


def test_a_foreign_reassignment_on_a_calm_cluster_is_no_refusal() -> None:
    """Nothing to heal: a noop, not a refusal that pages for an operator's own move."""
    decision = decide(_snap(dead=False, reassignments=FOREIGN))
    assert decision.outcome == "noop", decision.summary


def test_own_reassignment_in_progress_waits() -> None:
    reassign = [{"topic": "t", "partition": 0, "started_by_kmedic": True}]
    decision = decide(_snap(reassignments=reassign))
    assert decision.outcome == "noop"
    assert decision.reasons[0].code == "own_reassignment_in_progress"


@pytest.mark.parametrize(
    ("policy", "recent", "moves", "failing"),
    [
        ({"max_moves_per_cycle": 3}, 0, 4, ["action_budget_exceeded"]),
        ({"max_moves_per_hour": 10}, 8, 4, ["hourly_budget_exceeded"]),
        (
            {"max_moves_per_cycle": 3, "max_moves_per_hour": 10},
            8,
            4,
            ["action_budget_exceeded", "hourly_budget_exceeded"],
        ),
        ({"max_moves_per_cycle": 4, "max_moves_per_hour": 12}, 8, 4, []),
    ],
)
def test_action_budget(policy: dict[str, int], recent: int, moves: int, failing: list[str]) -> None:
    snap = _snap(policy=policy, recent_actions={"moves_last_hour": recent})
    assert [r.code for r in gate_budget(snap, moves)] == failing


def test_heal_over_budget_refuses() -> None:
    decision = decide(_snap(policy={"max_moves_per_cycle": 2}))
    assert decision.outcome == "refuse"
    assert decision.actions == ()
    assert {r.code for r in decision.reasons} == {"action_budget_exceeded"}


def test_every_failing_gate_is_reported() -> None:
    lead = {"holder": "m2", "epoch": 1, "current_epoch": 3, "is_leader": False}
    reassign = [{"topic": "t", "partition": 0, "started_by_kmedic": False}]
    snap = _snap(
        leadership=lead,
        reassignments=reassign,
        policy={"max_dead_brokers": 0, "dead_grace_ms": 10 * HOUR},
    )
    decision = decide(snap)
    assert decision.outcome == "refuse"
    assert {r.code for r in decision.reasons} >= {
        "not_leader",
        "stale_fencing_epoch",
        "too_many_dead_brokers",
        "dead_within_grace",
    }
    assert all(r.message for r in decision.reasons)


def test_own_reassignment_with_a_failing_gate_refuses_without_planning() -> None:
    reassign = [{"topic": "t", "partition": 0, "started_by_kmedic": True}]
    lead = {"holder": "m2", "epoch": 3, "current_epoch": 3, "is_leader": False}
    decision = decide(_snap(reassignments=reassign, leadership=lead))
    assert decision.outcome == "refuse"
    assert [r.code for r in decision.reasons] == ["not_leader"]
    assert decision.actions == ()


@st.composite
def degraded_clusters(draw: st.DrawFn) -> Any:
    """Six brokers (some dead, one back from a restart) and partitions in every degraded shape:
    replicas out of the ISR, no leader, copies Kafka reports offline, replicas being added."""
    alive = {b for b in range(1, 7) if draw(st.booleans()) or b == 1}
    back = draw(st.sampled_from([None, *sorted(alive)]))
    brokers = [
        broker(
            b,
            f"/r{(b - 1) % 3 + 1}",
            alive=b in alive,
            **({"returned_at_ms": NOW - 60_000} if b == back else {}),
        )
        for b in range(1, 7)
    ]
    parts, reassignments = [], []
    for n in range(draw(st.integers(1, 8))):
        replicas = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True))
        isr = [b for b in replicas if b in alive and draw(st.booleans())]
        p = part(n, replicas, isr=isr, leader=isr[0] if isr else None)
        offline = [b for b in replicas if b not in isr and draw(st.booleans())]
        if offline:
            p["offline_replicas"] = offline
        parts.append(p)
        adding = [b for b in replicas if b not in isr and draw(st.booleans())]
        if adding:
            reassignments.append(
                {"topic": "t", "partition": n, "adding_replicas": adding, "started_by_kmedic": True}
            )
    return make(brokers, {"t": parts}, reassignments=reassignments)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=degraded_clusters())
def test_the_gate_and_the_metric_judge_under_replication_alike(snap: Any) -> None:
    """One rule (manager.analyzer.under_replication): the gate refuses exactly when the metric
    counts an unexplained partition, naming as many as it counts."""
    facts = health_facts(snap)
    refused = [
        r
        for r in failing_gates(snap, ClusterState(snap))
        if r.code == "unexplained_under_replication"
    ]
    assert bool(refused) == (facts.urp_unexplained > 0)
    if refused:
        assert refused[0].message.startswith(f"{facts.urp_unexplained} partitions")


def _per_partition_rule(snap: Any) -> tuple[int, tuple[str, ...]]:
    """The explained-under-replication rule as it was written before it was computed column
    by column: one partition at a time, from its models."""
    dead = {b.id for b in snap.brokers if not b.alive}
    back = lag_explained(snap)
    adding = {(r.topic, r.partition): set(r.adding_replicas) for r in snap.reassignments}
    degraded, unexplained = 0, []
    for t in snap.topics:
        for p in t.partitions:
            if p.leader is not None and len(p.isr) >= len(p.replicas):
                continue
            degraded += 1
            gone = dead | set(p.offline_replicas)
            catching_up = adding.get((t.name, p.partition), set())
            lagging = [
                b for b in p.replicas
                if b not in gone and b not in p.isr and b not in catching_up and b not in back
            ]  # fmt: skip
            offline_with_live = p.leader is None and any(b not in gone for b in p.replicas)
            if lagging or offline_with_live:
                unexplained.append(f"{t.name}:{p.partition}")
    return degraded, tuple(unexplained)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=degraded_clusters())
def test_under_replication_by_columns_is_the_per_partition_rule(snap: Any) -> None:
    found = under_replication(snap)
    assert (found.degraded, found.unexplained) == _per_partition_rule(snap)
