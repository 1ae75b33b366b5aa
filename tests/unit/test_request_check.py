"""Whether an operator request could ever be met (manager/analyzer/request_check.py, pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from manager.analyzer.request_check import Asked, ClusterFacts, never_met

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
