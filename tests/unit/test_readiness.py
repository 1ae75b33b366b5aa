"""Failure readiness (pure): each broker's and each rack's loss run through the real gates
and planner; healable or not, with the partitions and reasons a heal would leave, and the
bytes it would copy. The live cluster and a saved snapshot give the same table
(`kmedic readiness`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import kmedic_in_process
from hypothesis import given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, broker, make, part

from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.planner import decide
from manager.analyzer.readiness import Scenario, killed, scenarios, settled, sweep, verdict
from manager.model.partition_models import Partition
from manager.model.snapshot import Snapshot
from manager.model.topics import Topics

RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}


def cluster(pay: bool = False, **extra: Any) -> Snapshot:
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    # One replica per rack: partition n on brokers n%2+1, n%2+3, n%2+5.
    topics = {"t": [part(n, [n % 2 + 1, n % 2 + 3, n % 2 + 5]) for n in range(4)]}
    if pay:
        topics["pay"] = [part(0, [1, 3, 5])]
    return make(brokers, topics, **extra)


def test_every_broker_and_every_rack_is_a_scenario() -> None:
    snap = cluster()
    found = scenarios(snap)
    assert [(s.kind, s.name, s.brokers) for s in found] == [
        *[("broker", str(b), (b,)) for b in RACKS],
        ("rack", "/r1", (1, 2)),
        ("rack", "/r2", (3, 4)),
        ("rack", "/r3", (5, 6)),
    ]


def test_a_killed_snapshot_is_what_the_leader_sees_once_the_grace_is_over() -> None:
    snap = cluster()
    dead = killed(snap, (1,))
    one = next(b for b in dead.brokers if b.id == 1)
    assert not one.alive and one.in_grace(dead.taken_at, dead.policy.dead_grace_ms) is False
    p0 = dead.topics[0].partitions[0]  # replicas [1, 3, 5], led by 1
    assert (p0.isr, p0.leader, p0.offline_replicas) == ((3, 5), 3, (1,))
    assert dead.topics[0].partitions[1] == snap.topics[0].partitions[1]  # [2, 4, 6]: untouched
    assert dead.leadership.is_leader


def test_each_broker_alone_is_healable_with_its_bytes() -> None:
    snap = cluster()
    verdicts = {v.scenario.name: v for v in sweep(snap) if v.scenario.kind == "broker"}
    assert all(v.healable for v in verdicts.values())
    assert verdicts["1"].moves == 2 and verdicts["1"].bytes_to_copy == 2 * GB
    # The grace period (600 s), then 2 GB at the assumed 20 MB/s per move, two at once (50 s),
    # and one round's fixed cost (1 s).
    assert verdicts["1"].heal_s == pytest.approx(651.0)
    assert verdicts["1"].sentence() == (
        "losing broker 1: healable, 2 moves, 2000 MB to copy, about 11 min to fully replicated"
        " (61 s after its agent's next record is missed, if its host is lost with it)"
    )
    # Its host lost with it: the 10 s confirmation instead of the grace, then the same copy.
    assert verdicts["1"].host_lost_heal_s == pytest.approx(61.0)
    # The real planner on the same snapshot decides the same heal.
    direct = decide(killed(snap, (1,)))
    assert direct.bytes_to_move == verdicts["1"].bytes_to_copy


def test_an_isolation_group_without_a_spare_broker_is_not_healable_and_names_its_partitions() -> (
    None
):
    snap = cluster(
        pay=True,
        broker_groups=[{"name": "trio", "brokers": [1, 3, 5]}],
        isolation_groups=[{"name": "pay", "topics": ["pay"], "primary": "trio"}],
    )
    v = verdict(snap, Scenario("broker", "1", (1,)))
    assert not v.healable
    assert ["pay:0" in r.message for r in v.why] == [True]
    assert v.sentence().startswith("losing broker 1: NOT healable: pay:0")
    assert verdict(snap, Scenario("broker", "2", (2,))).healable  # pay has nothing on 2


def test_a_rack_beyond_the_dead_broker_limit_is_refused_with_the_gates_reason() -> None:
    snap = cluster(policy={"max_dead_brokers": 1})
    v = verdict(snap, Scenario("rack", "/r1", (1, 2)))
    assert not v.healable and v.outcome == "refuse"
    assert v.why and v.bytes_to_copy == 0
    assert verdict(snap, Scenario("broker", "1", (1,))).healable


def test_readiness_reads_a_saved_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = cluster(policy={"max_dead_brokers": 1})
    path = tmp_path / "snap.json"
    path.write_text(snap.model_dump_json())
    code, out, _ = kmedic_in_process(capsys, "readiness", "--snapshot", str(path), "--json")
    assert code == 0  # the racks are left to an operator by policy: no risk kmedic could fix
    table = json.loads(out)
    assert [(r["scenario"], r["name"], r["healable"], r["standing"]) for r in table] == [
        *[("broker", str(b), True, "healable") for b in RACKS],
        *[("rack", r, False, "left_to_operator") for r in ("/r1", "/r2", "/r3")],
    ]
    # Brokers' losses have an estimate (the defaults: assumed rate, default limits); refused
    # racks none.
    assert [r["heal_s"] for r in table] == [651.0] * 6 + [None] * 3
    code, out, _ = kmedic_in_process(capsys, "readiness", "--snapshot", str(path))
    assert "losing rack /r1 (brokers [1, 2]): left to an operator by policy: 2 of 6" in out
    code, _, err = kmedic_in_process(capsys, "readiness")
    assert code == 1 and "give one of --snapshot FILE and --config" in err


def test_a_heal_switched_off_by_its_policy_switch_is_not_healable() -> None:
    """kmedic would only say what it would do: the loss stays under-replicated."""
    snap = cluster(policy={"goals": {"heal_dead_brokers": False}})
    v = verdict(snap, Scenario("broker", "1", (1,)))
    assert not v.healable
    assert v.moves == 2  # the heal it would run, kept from the cluster
    assert "heal_dead_brokers" in v.summary, v.summary


def test_policy_refusals_are_left_to_an_operator_and_placement_failures_are_at_risk() -> None:
    """Issue 39.4: a rack larger than max_dead_brokers is refused by policy (a human decides):
    reported, not a risk; a loss no placement can heal is. A snapshot already holding a dead
    broker (an incident) makes every scenario a policy refusal, never a risk."""
    snap = cluster(policy={"max_dead_brokers": 1})
    rack = verdict(snap, Scenario("rack", "/r1", (1, 2)))
    assert rack.standing == "left_to_operator" and not rack.at_risk
    assert rack.sentence().startswith("losing rack /r1 (brokers [1, 2]): left to an operator")
    during = killed(cluster(), (1,))
    assert all(
        verdict(during, s).standing in ("healable", "left_to_operator") for s in scenarios(during)
    )
    squeezed = cluster(policy={"enforce_min_racks": True, "min_racks": 3})
    at_risk = [v for v in sweep(squeezed) if v.at_risk]
    assert at_risk and all(
        any(r.code in ("plan_violates_constraints", "no_live_replica") for r in v.why)
        for v in at_risk
    )


def test_the_shipped_healthy_example_is_ready_without_a_risk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 39.4, as tried: 6 brokers on 3 racks with the default policy. Each rack is more
    than max_dead_brokers lets die at once: left to an operator, exit 0, nothing to alert."""
    example = Path(__file__).resolve().parents[2] / "configs" / "examples" / "healthy.json"
    code, out, _ = kmedic_in_process(capsys, "readiness", "--snapshot", str(example), "--json")
    assert code == 0
    standings = [r["standing"] for r in json.loads(out)]
    assert standings == ["healable"] * 6 + ["left_to_operator"] * 3


def test_an_eligible_leader_replica_counts_as_a_live_copy() -> None:
    """Issue 39.6, KIP-966: partition pay:0 is in sync on broker 1 alone and broker 3 is an
    eligible leader replica. Losing broker 1 leaves Kafka a clean leader to elect: not at risk
    (without ELR it would need an unclean election: at risk)."""
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    pay = part(0, [1, 3, 5], isr=[1])
    plain = make(brokers, {"pay": [pay]})
    assert verdict(plain, Scenario("broker", "1", (1,))).at_risk
    pay["eligible_leaders"] = [3]
    snap = make(brokers, {"pay": [pay]})
    p0 = killed(snap, (1,)).topics[0].partitions[0]
    assert (p0.leader, p0.isr) == (3, (3,))
    found = verdict(snap, Scenario("broker", "1", (1,)))
    # Not a risk; broker 5, alive and out of the ISR, is a slow follower a person looks at.
    assert not found.at_risk, found.sentence()
    assert "no_live_replica" not in {r.code for r in found.why}
    # An eligible leader replica that is dead itself elects nothing.
    assert verdict(snap, Scenario("rack", "/r1+2", (1, 3))).at_risk


def test_a_heal_blocked_on_a_pending_eligible_leader_says_so() -> None:
    brokers = [broker(b, RACKS[b], alive=b != 1) for b in RACKS]
    pay = part(0, [1, 3, 5], isr=[], leader=None)
    pay["eligible_leaders"] = [3]
    decision = decide(make(brokers, {"pay": [pay]}, policy={"even_spread": False}))
    said = [r.message for r in (*decision.reasons, *decision.unhealed)]
    assert any(
        "Kafka elects its eligible leader replica 3 (no unclean election)" in m for m in said
    ), said


def _reference_without(p: Partition, gone: set[int], alive: set[int]) -> Partition:
    """The loss of ``gone`` on one partition model: the rule as it was written before the
    sweep rewrote only the changed rows of the columns (a broker's loss touches a few
    thousand of a fleet's 433,000 partitions; the models cost 2.3 s a scenario)."""
    if not gone & set(p.replicas):
        return p
    isr = tuple(r for r in p.isr if r not in gone)
    leader = p.leader if p.leader not in gone else (isr[0] if isr else None)
    elected = [r for r in p.eligible_leaders if r in alive]
    if leader is None and elected:
        leader, isr = elected[0], (elected[0],)
    offline = tuple(sorted(set(p.offline_replicas) | (gone & set(p.replicas))))
    return p.model_copy(update={"isr": isr, "leader": leader, "offline_replicas": offline})


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_killed_snapshot_rewrites_exactly_the_partitions_of_the_dead(data: st.DataObject) -> None:
    ids = list(RACKS)
    replica_sets = st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True)
    parts = []
    for n in range(data.draw(st.integers(1, 8))):
        replicas = data.draw(replica_sets)
        isr = data.draw(st.lists(st.sampled_from(replicas), unique=True))
        leader = data.draw(st.sampled_from([None, *isr])) if isr else None
        raw = part(n, replicas, isr=isr, leader=leader)
        raw["offline_replicas"] = data.draw(st.lists(st.sampled_from(replicas), unique=True))
        out_of_sync = [b for b in replicas if b not in isr]
        raw["eligible_leaders"] = (
            data.draw(st.lists(st.sampled_from(out_of_sync), unique=True)) if out_of_sync else []
        )
        parts.append(raw)
    snap = make([broker(b, RACKS[b]) for b in ids], {"t": parts, "u": parts[:2]})
    dead = tuple(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True)))
    alive = set(ids) - set(dead)
    expected = [
        [_reference_without(p, set(dead), alive) for p in t.partitions] for t in snap.topics
    ]
    after = killed(snap, dead)
    assert [list(t.partitions) for t in after.topics] == expected
    # The planner's lists of the loss, derived from the cluster's kept ones by the rewritten
    # rows, are those it would build from the loss's own table.
    memory = ListsMemory()
    derived, built = memory.lists(after.topics), memory.lists(Topics(after.topics.table))
    assert derived is not built
    for name in ("topic", "number", "replicas", "isr", "leader", "size", "bin", "bout", "msgs"):
        assert getattr(derived, name) == getattr(built, name), name
    assert derived.valid_load == built.valid_load
    assert derived.replica_row.tolist() == built.replica_row.tolist()


def with_pay_group(**extra: Any) -> Snapshot:
    """Losing broker 1 is at risk: the isolation group of `pay` has no spare broker."""
    brokers = [broker(b, RACKS[b]) for b in RACKS]
    topics = {
        "t": [
            part(0, [1, 3, 5]),
            # kmedic's own drain of broker 6 in flight: 5 added, not yet in sync.
            part(1, [2, 4, 6, 5], isr=[2, 4, 6]),
            part(2, [1, 3, 5]),
            part(3, [2, 4, 6]),
        ],
        "pay": [part(0, [1, 3, 5])],
    }
    return make(
        brokers,
        topics,
        broker_groups=[{"name": "trio", "brokers": [1, 3, 5]}],
        isolation_groups=[{"name": "pay", "topics": ["pay"], "primary": "trio"}],
        **extra,
    )


def test_a_plan_in_flight_hides_no_risk() -> None:
    """Issue 71.3: the planner holds while kmedic's own moves run, so during any drain or
    balance every loss read "healable, 0 moves" and a real at-risk warning cleared. Each
    scenario is planned on the cluster as it will be once the moves are done."""
    own = {
        "topic": "t",
        "partition": 1,
        "adding_replicas": [5],
        "removing_replicas": [6],
        "started_by_kmedic": True,
    }
    before = {v.scenario.name: v for v in sweep(with_pay_group())}
    during = {v.scenario.name: v for v in sweep(with_pay_group(reassignments=[own]))}
    assert before["1"].at_risk
    assert during["1"].at_risk, during["1"].sentence()
    assert ["pay:0" in r.message for r in during["1"].why] == [True]
    assert during["2"].healable and during["2"].moves == 2, during["2"].sentence()
    settled_snap = settled(with_pay_group(reassignments=[own]))
    assert settled_snap.reassignments == ()
    moved = settled_snap.topics[0].partitions[1]
    assert (moved.replicas, moved.isr, moved.leader) == ((2, 4, 5), (2, 4, 5), 2)
    # Someone else's reassignment is not kmedic's to finish: it still holds a heal back.
    foreign = {**own, "started_by_kmedic": False}
    assert settled(with_pay_group(reassignments=[foreign])).reassignments != ()


@pytest.mark.parametrize(
    "policy",
    [{"max_moves_per_cycle": 1}, {"max_moves_per_hour": 1}],
)
def test_a_loss_the_move_budget_refuses_is_at_risk(policy: dict[str, Any]) -> None:
    """Issue 71.4: a broker holding more replicas than a budget allows cannot be healed; it
    read "left to an operator by policy" and was never warned of."""
    v = verdict(cluster(policy=policy), Scenario("broker", "1", (1,)))
    assert v.standing == "at_risk", v.sentence()
    assert v.why[0].code in ("action_budget_exceeded", "hourly_budget_exceeded")


def test_moves_done_in_the_last_hour_do_not_make_a_loss_a_risk() -> None:
    """The hourly budget is judged for the heal alone: the hour before the day is not now."""
    busy = cluster(policy={"max_moves_per_hour": 10}, recent_actions={"moves_last_hour": 9})
    assert verdict(busy, Scenario("broker", "1", (1,))).healable
