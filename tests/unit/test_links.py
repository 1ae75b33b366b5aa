"""The network faults' rules (kmedic/localcluster/links.py), without root: which connections a
cut drops, how a cut is found again by its name, and a slow link's classes."""

from __future__ import annotations

import shlex

from kmedic.localcluster import links, netns


def _rules(cut: links.Cut) -> set[str]:
    return {" ".join(rule) for rule in cut.rules()}


def test_a_broker_cut_from_the_controllers_drops_its_connections_to_each_both_ways() -> None:
    cut = links.from_controllers(2, 3, ["127.0.3.1", "127.0.3.2"])
    assert cut.name == "broker-2-controllers"
    assert _rules(cut) == {
        f"-m connmark --mark 3 {way} {host}/32 -m comment --comment broker-2-controllers -j DROP"
        for way in ("-d", "-s")
        for host in ("127.0.3.1", "127.0.3.2")
    }


def test_a_cut_between_two_brokers_drops_what_each_opens_to_the_other_and_is_one_name() -> None:
    one = links.between((1, 2, "127.0.1.1"), (4, 5, "127.0.1.4"))
    other = links.between((4, 5, "127.0.1.4"), (1, 2, "127.0.1.1"))
    assert one == other and one.name == "brokers-1-4"
    rules = _rules(one)
    assert len(rules) == 4
    # Broker 1's own connections (mark 2) to broker 4, and broker 4's (mark 5) to broker 1.
    assert "-m connmark --mark 2 -d 127.0.1.4/32 -m comment --comment brokers-1-4 -j DROP" in rules
    assert "-m connmark --mark 5 -s 127.0.1.1/32 -m comment --comment brokers-1-4 -j DROP" in rules
    assert not any("--mark 2 -d 127.0.1.1" in r or "--mark 5 -d 127.0.1.4" in r for r in rules)


def test_a_host_cut_off_drops_every_connection_to_it_and_what_it_and_its_agent_open() -> None:
    others = ["127.0.1.1", "127.0.3.1"]
    cut = links.host_off((2, 3, "127.0.1.2"), others, ["agent-2"])
    assert cut.name == "host-2"
    agent = links.client_mark("agent-2")
    tail = "-m comment --comment host-2 -j DROP"
    assert _rules(cut) == {
        # Whoever opened it: nobody reaches the host's address, and its answers go nowhere.
        f"-d 127.0.1.2/32 {tail}",
        f"-s 127.0.1.2/32 {tail}",
        # What the broker (mark 3) and its agent open to every other node, both ways.
        *(
            f"-m connmark --mark {mark} {way} {host}/32 {tail}"
            for mark in (3, agent)
            for way in ("-d", "-s")
            for host in others
        ),
    }
    # One name mends it all: every rule carries it.
    listing = "\n".join(f"-A {links.CHAIN} {rule}" for rule in _rules(cut))
    assert list(links.listed_cuts(listing)) == ["host-2"]
    assert len(links.listed_cuts(listing)["host-2"]) == 2 + 2 * 2 * len(others)


def test_cuts_are_found_by_name_in_the_chains_listing_and_deleted_rule_by_rule() -> None:
    cut = links.from_controllers(2, 3, ["127.0.3.1"])
    other = links.between((1, 2, "127.0.1.1"), (3, 4, "127.0.1.3"))
    # As iptables -S prints them: marks in hex, the comment quoted.
    listing = "\n".join(
        [
            f"-N {links.CHAIN}",
            *(
                f"-A {links.CHAIN} -m connmark --mark 0x{mark:x} {way} {host}/32 "
                f'-m comment --comment "{name}" -j DROP'
                for name, mark, way, host in [
                    (cut.name, 3, "-d", "127.0.3.1"),
                    (cut.name, 3, "-s", "127.0.3.1"),
                    (other.name, 2, "-d", "127.0.1.3"),
                ]
            ),
        ]
    )
    found = links.listed_cuts(listing)
    assert sorted(found) == sorted([cut.name, other.name])
    assert found[cut.name][0] == shlex.split(
        f"iptables -D {links.CHAIN} -m connmark --mark 0x3 -d 127.0.3.1/32 "
        f"-m comment --comment {cut.name} -j DROP"
    )
    assert len(found[cut.name]) == 2 and len(found[other.name]) == 1
    assert links.listed_cuts(f"-N {links.CHAIN}") == {}


def test_every_rule_of_a_cut_is_added_to_the_chain_the_output_chain_jumps_to() -> None:
    cut = links.between((1, 2, "127.0.1.1"), (2, 3, "127.0.1.2"))
    added = links.add_commands(cut)
    assert [c[:3] for c in added] == [["iptables", "-A", links.CHAIN]] * 4
    assert ["iptables", "-I", "OUTPUT", "1", "-j", links.CHAIN] in links.setup_commands()


def test_a_slow_link_sets_both_of_its_brokers_classes() -> None:
    commands = links.rate_commands(netns.class_index(["127.0.1.1", "127.0.1.2"], "127.0.1.2"), 4)
    assert [(c[3], c[7]) for c in commands] == [("lo", "1:3"), (netns.IFB, "2:3")]
    assert all(c[c.index("rate") + 1] == "4mbit" == c[c.index("ceil") + 1] for c in commands)
    half = links.rate_commands(2, 0.5)[0]
    assert half[half.index("rate") + 1] == "0.5mbit"


def test_a_clients_connections_are_marked_by_its_cgroup_above_every_brokers_mark() -> None:
    mark = links.client_mark("manager-m1")
    assert mark == links.client_mark("manager-m1") and mark > 0xFFFF
    assert mark != links.client_mark("manager-m2")
    [command] = links.client_commands("kmedic-ab12", "manager-m1")
    assert command[:5] == ["iptables", "-t", "mangle", "-A", "OUTPUT"]
    assert " ".join(command).endswith(
        "-m cgroup --path kmedic-ab12/manager-m1 -m comment --comment manager-m1 "
        f"-j CONNMARK --set-mark {mark}"
    )
    cut = links.client_from("manager-m1", "manager-m1-brokers-2", ["127.0.1.2"])
    assert _rules(cut) == {
        f"-m connmark --mark {mark} {way} 127.0.1.2/32 -m comment --comment "
        "manager-m1-brokers-2 -j DROP"
        for way in ("-d", "-s")
    }
