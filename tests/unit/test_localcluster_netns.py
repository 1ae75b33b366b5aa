"""The shaped cluster's layout, without root: each node on its own loopback address, each
broker's address held to the rate both ways, and nothing else shaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmedic.errors import ConfigError
from kmedic.localcluster import ClusterSpec, netns
from kmedic.localcluster.configs import Endpoint
from kmedic.localcluster.layout import Addresses


def test_every_node_of_a_shaped_cluster_has_its_own_address_on_its_usual_port() -> None:
    at = Addresses.shaped(ClusterSpec(brokers=3, controllers=3, nic_mbps=40))
    assert at.zookeeper == Endpoint("127.0.2.1", 2181)
    assert at.voters == {
        100: Endpoint("127.0.3.1", 9093),
        101: Endpoint("127.0.3.2", 9093),
        102: Endpoint("127.0.3.3", 9093),
    }
    assert at.brokers == {b: Endpoint(f"127.0.1.{b}", 9092) for b in (1, 2, 3)}
    assert at.exporters == {1: 7071, 2: 7071, 3: 7071}
    hosts = [at.zookeeper.host, *(e.host for e in at.voters.values())]
    hosts += [e.host for e in at.brokers.values()]
    assert len(set(hosts)) == len(hosts)


def test_an_unshaped_cluster_listens_on_127_0_0_1_on_free_ports() -> None:
    at = Addresses.of(ClusterSpec(brokers=2))
    endpoints = [at.zookeeper, *at.voters.values(), *at.brokers.values()]
    assert {e.host for e in endpoints} == {"127.0.0.1"}
    ports = [e.port for e in endpoints] + list(at.exporters.values())
    assert len(set(ports)) == len(ports)


def _classes(commands: list[list[str]], device: str) -> dict[str, list[str]]:
    return {
        c[c.index("classid") + 1]: c
        for c in commands
        if c[:2] == ["class", "add"] and c[c.index("dev") + 1] == device
    }


def _filters(commands: list[list[str]], device: str) -> dict[str, str]:
    """flowid -> the address it matches, on ``device``'s root qdisc."""
    return {
        c[c.index("flowid") + 1]: " ".join(c[c.index("match") + 1 : c.index("flowid")])
        for c in commands
        if c[:2] == ["filter", "add"] and c[c.index("dev") + 1] == device and "flowid" in c
    }


def test_each_broker_address_is_held_to_the_rate_each_way_and_nothing_else() -> None:
    commands = netns.shaping_commands(
        ["127.0.2.1", "127.0.1.1", "127.0.1.2"], ["127.0.1.1", "127.0.1.2"], 40
    )
    assert commands[0] == ["link", "set", "lo", "up"]
    added = [c[2] for c in commands if c[:2] == ["address", "add"]]
    assert added == ["127.0.2.1/32", "127.0.1.1/32", "127.0.1.2/32"]
    # Every packet lo receives goes through the IFB device, where it is shaped by destination.
    redirect = [c for c in commands if "mirred" in c]
    assert len(redirect) == 1 and redirect[0][-1] == "kmedic-ifb"
    assert ["link", "add", "kmedic-ifb", "type", "ifb"] in commands
    for device, direction, major in (("lo", "src", "1"), ("kmedic-ifb", "dst", "2")):
        classes = _classes(commands, device)
        filters = _filters(commands, device)
        assert filters == {
            f"{major}:2": f"ip {direction} 127.0.1.1/32",
            f"{major}:3": f"ip {direction} 127.0.1.2/32",
        }
        for classid in (f"{major}:2", f"{major}:3"):
            shaped = classes[classid]
            assert shaped[shaped.index("rate") + 1] == "40mbit"
            assert shaped[shaped.index("ceil") + 1] == "40mbit"
        # The default class (unmatched traffic: ZooKeeper, controllers, clients) is unshaped.
        default = classes[f"{major}:1"]
        assert default[default.index("rate") + 1] == "100gbit"
        root = next(c for c in commands if c[:2] == ["qdisc", "add"] and device in c and "htb" in c)
        assert (
            root[root.index("default") + 1] == "1" and root[root.index("handle") + 1] == major + ":"
        )


def test_what_a_broker_serves_its_own_host_is_tried_first_and_left_unshaped() -> None:
    # The agent beside a broker scrapes its exporter every few seconds: on a real host that
    # crosses loopback, not the NIC. Matched by the broker's address and the exporter's port
    # (its source port going out, its destination port coming in), before the address alone.
    commands = netns.shaping_commands(
        ["127.0.1.1", "127.0.1.2"], ["127.0.1.1", "127.0.1.2"], 40, {"127.0.1.1": 7071}
    )
    for device, side, major in (("lo", "src", "1"), ("kmedic-ifb", "dst", "2")):
        port = "sport" if side == "src" else "dport"
        filters = [
            c
            for c in commands
            if c[:2] == ["filter", "add"]
            and device in c
            and c[c.index("parent") + 1] == major + ":"
        ]
        local = [f for f in filters if port in f]
        assert len(local) == 1
        (rule,) = local
        matched = " ".join(rule[rule.index("match") + 1 : rule.index("flowid")])
        assert matched == f"ip {side} 127.0.1.1/32 match ip {port} 7071 0xffff"
        assert rule[rule.index("flowid") + 1] == f"{major}:1"  # the unshaped default class
        by_address = [f for f in filters if port not in f]
        assert all(
            int(rule[rule.index("prio") + 1]) < int(f[f.index("prio") + 1]) for f in by_address
        )
    # Without a host-local port nothing but the addresses is matched.
    plain = netns.shaping_commands(["127.0.1.1"], ["127.0.1.1"], 40)
    assert not [c for c in plain if "sport" in c or "dport" in c]


def test_whatever_connects_to_a_node_connects_from_127_0_0_1() -> None:
    # By default a socket connecting to a local address takes that address as its source: a
    # producer writing to broker 1 would send from broker 1's address, into its egress class.
    commands = netns.shaping_commands(["127.0.0.1", "127.0.2.1", "127.0.1.1"], ["127.0.1.1"], 40)
    routes = {c[3]: c for c in commands if c[:3] == ["route", "replace", "local"]}
    assert set(routes) == {"127.0.2.1", "127.0.1.1"}
    assert all(c[c.index("src") + 1] == "127.0.0.1" and "local" in c for c in routes.values())
    assert not [c for c in commands if c[:2] == ["address", "add"] and c[2] == "127.0.0.1/32"]


def test_the_connections_a_broker_opens_go_through_its_own_classes() -> None:
    rules = netns.opened_commands("kmedic-x", ["127.0.1.1", "127.0.1.2"])
    marks = [r for r in rules if "--set-mark" in r]
    assert [(r[r.index("--path") + 1], r[-1]) for r in marks] == [
        ("kmedic-x/127.0.1.1", "2"),
        ("kmedic-x/127.0.1.2", "3"),
    ]
    assert all("NEW" in r and r[3:5] == ["-A", "OUTPUT"] for r in marks)
    classify = {
        (r[r.index("--mark") + 1], r[r.index("--ctdir") + 1]): r[-1]
        for r in rules
        if "CLASSIFY" in r
    }
    # What it sends on them: its egress class (lo's 1:); what it receives: its ingress (2:).
    assert classify == {
        ("2", "ORIGINAL"): "1:2",
        ("2", "REPLY"): "2:2",
        ("3", "ORIGINAL"): "1:3",
        ("3", "REPLY"): "2:3",
    }


def test_many_brokers_get_distinct_hex_class_ids() -> None:
    shaped = [f"127.0.1.{b}" for b in range(1, 21)]
    classes = _classes(netns.shaping_commands(shaped, shaped, 100), "lo")
    assert len(classes) == 21 and "1:a" in classes and "1:15" in classes


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (dict(nic_mbps=0), "at least 1 Mbit/s"),
        (dict(nic_mbps=40, secure=True), "cannot be secured"),
        (dict(nic_mbps=40, brokers=251), "at most 250 brokers"),
    ],
)
def test_a_shaped_spec_it_cannot_build_is_refused(spec: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        ClusterSpec(**spec)  # type: ignore[arg-type]


def test_each_work_directory_has_its_own_namespace_name(tmp_path: Path) -> None:
    a, b = netns.name_for(tmp_path / "a"), netns.name_for(tmp_path / "b")
    assert a != b and a.startswith("kmedic-") and len(a) <= 32
    assert netns.name_for(tmp_path / "a") == a
