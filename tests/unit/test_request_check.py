"""Whether an operator request could ever be met (manager/analyzer/request_check.py, pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from planner_fixtures import broker, make, part

from manager.analyzer.request_check import Asked, ClusterFacts, never_met
from manager.model.policy import Policy

FACTS = ClusterFacts(frozenset({1, 2, 3, 4, 5}), {"orders": 3, "logs": 2, "__consumer_offsets": 3})


def test_the_rules_one_by_one() -> None:
    assert never_met(Asked("drain", (9,)), FACTS) == (
        "the cluster has no broker [9] (it has [1, 2, 3, 4, 5])"
    )
    assert never_met(Asked("decommission", (9,)), FACTS) is None  # gone already: done
    assert never_met(Asked("set_rf", (), "nope", 3), FACTS) == "the cluster has no topic nope"
    assert never_met(Asked("set_rf", (), "orders", 2), FACTS) is not None  # never lowers
    assert never_met(Asked("set_rf", (), "orders", 3), FACTS) is None  # met: done
    assert never_met(Asked("set_rf", (), "logs", 5), FACTS) is None
    assert "cannot be placed" in (never_met(Asked("set_rf", (), "logs", 6), FACTS) or "")
    assert never_met(Asked("drain", (1, 2)), FACTS) is None  # 3 left: RF 3 fits
    said = never_met(Asked("drain", (1, 2, 3)), FACTS)
    assert said == (
        "emptying brokers [1, 2, 3] leaves 2 brokers, fewer than the replication factor 3 of "
        "orders: its replicas would have nowhere to go"
    )
    assert never_met(Asked("fill", (1, 2, 3, 4, 5)), FACTS) is None
    assert never_met(Asked("demote", (1, 2, 3, 4, 5)), FACTS) is None


@given(
    brokers=st.frozensets(st.integers(1, 12), min_size=1, max_size=12),
    rfs=st.dictionaries(st.sampled_from("abcde"), st.integers(1, 6), max_size=5),
    drained=st.frozensets(st.integers(1, 12), max_size=12),
)
def test_a_drain_is_refused_exactly_when_the_brokers_left_cannot_hold_every_topic(
    brokers: frozenset[int], rfs: dict[str, int], drained: frozenset[int]
) -> None:
    facts = ClusterFacts(brokers, rfs)
    said = never_met(Asked("drain", tuple(sorted(drained))), facts)
    if drained - brokers:
        assert said is not None and "no broker" in said
    else:
        fits = len(brokers - drained) >= max(rfs.values(), default=0)
        assert (said is None) == fits, (said, brokers, rfs, drained)


ENFORCED = Policy(enforce_min_racks=True, min_racks=2)
RACKS = {1: "/a", 2: "/a", 3: "/a", 4: "/b", 5: "/b"}


def test_a_drain_that_leaves_too_few_racks_is_refused_where_the_policy_enforces_them() -> None:
    """Issue 72.1: "a drain never leaves ... a rack rule that cannot hold". Draining rack b
    leaves three brokers, enough for RF 3, but all in rack a: where min_racks 2 is enforced,
    the planner could never place the replicas, so the request is refused at once."""
    facts = ClusterFacts(FACTS.brokers, FACTS.rf, RACKS, ENFORCED)
    assert never_met(Asked("drain", (4, 5)), facts) == (
        "emptying brokers [4, 5] leaves brokers in 1 racks, fewer than the 2 min_racks "
        "requires for orders at RF 3 (policy.enforce_min_racks)"
    )
    assert never_met(Asked("decommission", (4, 5)), facts) is not None
    assert never_met(Asked("drain", (4,)), facts) is None  # broker 5 keeps rack b
    not_enforced = ClusterFacts(FACTS.brokers, FACTS.rf, RACKS, Policy())
    assert never_met(Asked("drain", (4, 5)), not_enforced) is None
    zones = Policy(placement="zone", enforce_min_racks=True, min_racks=2)
    zoned = {1: "/z1/u1", 2: "/z1/u2", 3: "/z1/u3", 4: "/z2/u1", 5: "/z2/u2"}
    said = never_met(Asked("drain", (4, 5)), ClusterFacts(FACTS.brokers, FACTS.rf, zoned, zones))
    assert said is not None and "leaves brokers in 1 zones" in said


def test_the_rack_rule_is_read_from_a_snapshot_as_the_api_and_the_leader_read_it() -> None:
    snap = make(
        [broker(b, rack) for b, rack in RACKS.items()],
        {"orders": [part(0, [1, 2, 4])]},
        policy={"enforce_min_racks": True, "min_racks": 2},
    )
    facts = ClusterFacts.of(snap)
    assert facts.racks == RACKS and facts.policy.enforce_min_racks
    assert "leaves brokers in 1 racks" in (never_met(Asked("drain", (4, 5)), facts) or "")
