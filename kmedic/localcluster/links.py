"""Network faults on a shaped cluster's links (netns.py): a broker cut off from the
controllers or from one peer, a whole host cut off, a broker's link slowed, and everything
mended.

A cut drops every packet of the connections between its two ends, both ways, while each end
keeps every other connection: a broker cut off from the controllers still serves its clients,
as a broker behind a broken route to the controllers' subnet would. The rules live in a chain
of the namespace's own, ``KMEDIC-CUTS``, jumped to from ``OUTPUT`` (on loopback every packet
passes ``OUTPUT`` once, at its sender). Whatever connects, connects from 127.0.0.1 (netns.py),
so a connection is told by who opened it: a broker's connections carry its connection mark
(set for its link class, netns.py) and the other end's address; a cut drops the packets of
the connections each broker of the cut opened to the other end's address, and of the answers
that address sends on them. KRaft controllers open no connection to brokers (brokers fetch
metadata and send heartbeats to them), so a broker's own connections are all a cut from the
controllers needs.

Each cut's rules carry a comment naming it, so the cut is mended by its name alone (``mend``
lists the chain and deletes that cut's rules): no state is kept outside the namespace, and a
later process (``kmedic cluster``) sees what an earlier one cut.

A slow link is the broker's two HTB classes (egress on ``lo``, ingress on the IFB device) set
to a lower rate; mending sets them back to the cluster's rate.

The rule builders are pure, so the rules are tested without root.
"""

from __future__ import annotations

import shlex
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kmedic.localcluster import netns

CHAIN = "KMEDIC-CUTS"


@dataclass(frozen=True)
class Opener:
    """One end of a cut that opens the cut's connections: a broker's connection mark, and the
    addresses of the other end it connects to."""

    mark: int
    to: tuple[str, ...]


@dataclass(frozen=True)
class Cut:
    """A named cut: the connections each opener opens to its addresses, dropped both ways."""

    name: str
    openers: tuple[Opener, ...]
    # Addresses nobody reaches: every packet to or from them dropped, whoever opened it.
    gone: tuple[str, ...] = ()

    def rules(self) -> list[list[str]]:
        """The ``iptables`` rule specifications (after ``-A CHAIN``) that make the cut."""
        rules: list[list[str]] = []
        for address in self.gone:
            for way in ("-d", "-s"):
                rules.append(
                    [way, f"{address}/32", "-m", "comment", "--comment", self.name, "-j", "DROP"]
                )
        for opener in self.openers:
            for address in opener.to:
                for way in ("-d", "-s"):  # the requests to it, the answers from it
                    rules.append(
                        ["-m", "connmark", "--mark", str(opener.mark), way, f"{address}/32",
                         "-m", "comment", "--comment", self.name, "-j", "DROP"]
                    )  # fmt: skip
        return rules


def from_controllers(broker: int, mark: int, controllers: Iterable[str]) -> Cut:
    """``broker`` (connection mark ``mark``) cut off from every controller address: it is
    fenced once its session times out, while clients still reach it."""
    return Cut(f"broker-{broker}-controllers", (Opener(mark, tuple(controllers)),))


def between(a: tuple[int, int, str], b: tuple[int, int, str]) -> Cut:
    """Two brokers, each ``(id, mark, address)``, cut off from each other: neither fetches
    from the other; both still reach everybody else."""
    (id_a, mark_a, host_a), (id_b, mark_b, host_b) = sorted([a, b])
    return Cut(f"brokers-{id_a}-{id_b}", (Opener(mark_a, (host_b,)), Opener(mark_b, (host_a,))))


def host_off(
    broker: tuple[int, int, str], others: Iterable[str], clients: Iterable[str] = ()
) -> Cut:
    """A host gone from the network while its processes run: ``broker`` (``(id, mark,
    address)``) reaches none of ``others`` (every other node), nobody reaches its address,
    and the clients of cgroups ``clients`` beside it (its agent) reach none of ``others``
    either - nor their own broker, which on a real host they would (what they see of it
    locally is theirs, what they say reaches nobody)."""
    broker_id, mark, address = broker
    reach = tuple(others)
    openers = (Opener(mark, reach), *(Opener(client_mark(g), reach) for g in clients))
    return Cut(f"host-{broker_id}", openers, gone=(address,))


def client_mark(group: str) -> int:
    """The connection mark of a client's cgroup (a manager, a tool): above every broker's,
    from its name, so a later process finds the same one."""
    return 0x10000 | (zlib.crc32(group.encode()) & 0xFFFF)


def client_commands(namespace: str, group: str) -> list[list[str]]:
    """The ``iptables`` command (run inside the namespace) that marks the connections the
    processes of cgroup ``group`` open, so that a cut can find them; no link class (clients
    are unshaped)."""
    return [
        ["iptables", "-t", "mangle", "-A", "OUTPUT", "-m", "conntrack", "--ctstate", "NEW",
         "-m", "cgroup", "--path", f"{namespace}/{group}", "-m", "comment", "--comment", group,
         "-j", "CONNMARK", "--set-mark", str(client_mark(group))]
    ]  # fmt: skip


def client_from(group: str, name: str, addresses: Iterable[str]) -> Cut:
    """The client in cgroup ``group`` cut off from ``addresses`` (both ways), under ``name``."""
    return Cut(name, (Opener(client_mark(group), tuple(addresses)),))


def setup_commands() -> list[list[str]]:
    """Create the chain and jump to it from ``OUTPUT`` (run once, before the first cut)."""
    return [["iptables", "-N", CHAIN], ["iptables", "-I", "OUTPUT", "1", "-j", CHAIN]]


def add_commands(cut: Cut) -> list[list[str]]:
    return [["iptables", "-A", CHAIN, *rule] for rule in cut.rules()]


def listed_cuts(listing: str) -> dict[str, list[list[str]]]:
    """``iptables -S CHAIN``'s output -> cut name -> the commands that delete its rules."""
    cuts: dict[str, list[list[str]]] = {}
    for line in listing.splitlines():
        words = shlex.split(line)
        if len(words) < 2 or words[:2] != ["-A", CHAIN] or "--comment" not in words:
            continue
        name = words[words.index("--comment") + 1]
        cuts.setdefault(name, []).append(["iptables", "-D", *words[1:]])
    return cuts


def rate_commands(index: int, mbps: float) -> list[list[str]]:
    """The ``tc`` commands (without ``-n NAME``) that set the shaped address of class minor
    ``index`` (netns.FIRST_CLASS for the first) to ``mbps`` Mbit/s each way."""
    rate = f"{mbps:g}mbit"
    return [
        ["class", "change", "dev", device, "parent", f"{major}:", "classid",
         f"{major}:{index:x}", "htb", "rate", rate, "ceil", rate, "burst", netns.BURST,
         "cburst", netns.BURST]
        for device, major in (("lo", netns.EGRESS), (netns.IFB, netns.INGRESS))
    ]  # fmt: skip


class Links:
    """The network faults of one shaped cluster's namespace."""

    def __init__(self, namespace: netns.Namespace, shaped: list[str], mbps: int) -> None:
        self.namespace = namespace
        self.shaped = shaped  # the brokers' addresses, in the order their classes were made
        self.mbps = mbps

    def mark(self, address: str) -> int:
        """The connection mark (and class minor) of a shaped address."""
        return netns.class_index(self.shaped, address)

    def cut(self, cut: Cut) -> None:
        """Make ``cut`` (a cut of that name already made is made again, not doubled)."""
        existing = self._listed()
        if existing is None:
            for command in setup_commands():
                self._iptables(command, "creating the cuts' chain")
        elif cut.name in existing:
            for command in existing[cut.name]:
                self._iptables(command, f"remaking cut {cut.name}")
        for command in add_commands(cut):
            self._iptables(command, f"cutting {cut.name}")

    def mend(self, name: str | None = None) -> list[str]:
        """Remove the cut ``name``, or every cut; the names removed."""
        listed = self._listed() or {}
        names = [n for n in listed if name is None or n == name]
        for each in names:
            for command in listed[each]:
                self._iptables(command, f"mending cut {each}")
        return names

    def cuts(self) -> list[str]:
        return sorted(self._listed() or {})

    def client(self, group: str) -> Callable[[], None]:
        """The ``preexec_fn`` that puts a client process into cgroup ``group``, whose
        connections are marked from now on (a cut finds them: ``client_from``)."""
        enter = self.namespace.group_setup(group)
        listed = self._iptables(["iptables", "-t", "mangle", "-S", "OUTPUT"], "listing marks")
        if f"--comment {group} " not in listed and f'--comment "{group}"' not in listed:
            for command in client_commands(self.namespace.name, group):
                self._iptables(command, f"marking {group}'s connections")
        return enter

    def set_rate(self, address: str, mbps: float) -> None:
        """The shaped ``address``'s link held to ``mbps`` Mbit/s each way from now on."""
        for command in rate_commands(self.mark(address), mbps):
            netns.run(["tc", "-n", self.namespace.name, *command], f"setting {address}'s rate")

    def restore_rates(self) -> None:
        for address in self.shaped:
            self.set_rate(address, self.mbps)

    def _listed(self) -> dict[str, list[list[str]]] | None:
        """The cuts made, or None when the chain does not exist yet."""
        try:
            listing = self._iptables(["iptables", "-S", CHAIN], "listing cuts")
        except netns.CommandFailed:
            return None
        return listed_cuts(listing)

    def _iptables(self, command: list[str], what: str) -> str:
        return netns.run(["ip", "netns", "exec", self.namespace.name, *command], what)
