"""The placement-configuration rules, without ZooKeeper."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmedic.errors import KmedicError
from manager.model.placement_config import (
    AntiAffinityGroup,
    BrokerGroup,
    Domain,
    IsolationGroup,
    Maintenance,
    PlacementConfig,
    parse_record,
    problems,
)


def test_a_valid_configuration_has_no_problems() -> None:
    cfg = PlacementConfig(
        domains={"a": Domain(name="a", brokers=(1, 2)), "b": Domain(name="b", brokers=(3,))},
        broker_groups={"fast": BrokerGroup(name="fast", brokers=(1, 3))},
        isolation_groups={"pay": IsolationGroup(name="pay", topics=("payments",), primary="fast")},
        anti_affinity_groups={"aa": AntiAffinityGroup(name="aa", topics=("x", "y"))},
        maintenance={"a": Maintenance(domain="a", reason="rolling", since_ms=1)},
    )
    assert problems(cfg) == []


def test_a_broker_in_two_domains_is_named() -> None:
    cfg = PlacementConfig(
        domains={"a": Domain(name="a", brokers=(1, 2)), "b": Domain(name="b", brokers=(2, 3))}
    )
    assert problems(cfg) == ["broker 2 is in domain 'a' and 'b'"]


def test_isolation_groups_must_reference_existing_distinct_broker_groups() -> None:
    cfg = PlacementConfig(
        broker_groups={"g": BrokerGroup(name="g", brokers=(1,))},
        isolation_groups={
            "i": IsolationGroup(name="i", topics=("t",), primary="g", secondary="g"),
            "j": IsolationGroup(name="j", topics=("t",), primary="nope"),
        },
    )
    found = problems(cfg)
    assert "topic t is in isolation group 'i' and 'j'" in found
    assert "isolation group 'i': secondary group is the primary group" in found
    assert "isolation group 'j': primary broker group 'nope' does not exist" in found


def test_maintenance_of_an_unknown_domain_is_a_problem() -> None:
    cfg = PlacementConfig(maintenance={"z": Maintenance(domain="z", reason="r", since_ms=0)})
    assert problems(cfg) == ["maintenance names unknown domain 'z'"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "bad name", "brokers": [1]}, "invalid name 'bad name'"),
        ({"name": "d", "brokers": []}, "needs at least one broker id"),
        ({"name": "d", "brokers": [1, 1]}, "broker ids listed twice"),
        ({"name": "d", "brokers": [-1]}, "broker ids must be >= 0"),
        (
            {"name": "d", "brokers": [1], "racks": ["/r1"]},
            "racks: unknown key; allowed here: name, brokers",
        ),
    ],
)
def test_bad_domains_are_refused_with_the_field_named(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(KmedicError, match=message):
        parse_record("domain", data, "domain 'd'")


def test_bad_topic_names_are_refused() -> None:
    with pytest.raises(KmedicError, match=r"invalid topic names \['a b'\]"):
        parse_record("anti-affinity-group", {"name": "g", "topics": ["ok", "a b"]}, "g")


@given(st.dictionaries(st.sampled_from("abcde"), st.sets(st.integers(0, 8), min_size=1)))
def test_problems_flag_exactly_the_shared_brokers(assign: dict[str, set[int]]) -> None:
    cfg = PlacementConfig(domains={n: Domain(name=n, brokers=tuple(b)) for n, b in assign.items()})
    shared = {b for b in range(9) if sum(b in s for s in assign.values()) > 1}
    flagged = {int(p.split()[1]) for p in problems(cfg)}
    assert flagged == shared
