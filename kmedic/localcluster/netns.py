"""A network namespace of the local cluster's own, its loopback shaped as each broker's NIC.

On one machine every broker shares the loopback interface, which carries gigabytes a second: a
copy is bound by CPU, never by the network, and no replication throttle can matter. Inside a
namespace of its own the cluster gets a loopback of its own, each node listens on its own
address in 127.0.0.0/8, and each broker's address gets a link of ``mbps`` Mbit/s each way:

- egress: an HTB class on ``lo`` for the packets the broker sends (matched on their source
  address), at ``mbps``;
- ingress: every packet ``lo`` receives is redirected to an IFB device of the namespace, where
  an HTB class for the packets the broker receives (matched on their destination address)
  holds them to ``mbps`` too.

Each node's address is put on ``lo`` too: with only 127.0.0.1 configured, a resolver asked
for addresses this host can use (glibc's AI_ADDRCONFIG, as librdkafka asks) answers none.
Everything else (ZooKeeper, the controllers, clients talking among themselves) is unshaped,
and so is what a broker serves to its own host (``host_local``: its JMX exporter's page,
scraped by the agent beside it every few seconds): on a real host that crosses loopback, not
the NIC, and on a modelled link of a few Mbit/s a page of tens of kB held the broker's link
for tens of milliseconds, in front of the replication acks=all writes wait for.

The classes see a broker's traffic only if every packet carries its broker's address, and
only its broker's. Left to itself the kernel does neither: a socket connecting to a local
address takes that address as its own source, so a producer writing to broker 1, and broker
3 fetching from broker 1, would both send from 127.0.1.1 and receive at it - the producer's
writes in broker 1's egress class beside the copies broker 1 sends, and broker 3's fetched
data in broker 1's ingress class, never in its own. So:

- every address's local route names 127.0.0.1 as the preferred source: whatever connects,
  connects from 127.0.0.1 (clients, agents, the manager: the namespace's default source), so
  a node's address is only ever on the connections it accepts;
- each broker runs in a cgroup (v2) of its own, and the connections it opens are marked
  (``iptables``: a connection mark set on the first packet its cgroup sends): the packets it
  sends on them go to its egress class, and those it receives to its ingress class (the
  ``CLASSIFY`` target names the class; the egress qdisc is ``1:``, the ingress one ``2:``,
  so each names one device's class).

So a broker's egress class holds what it sends and its ingress class what it receives, over
the connections it accepts and those it opens, as its NIC would.

The namespace is a named one (``ip netns``), so a later command finds it; removing it removes
its interfaces, queueing disciplines and rules with it (and ``remove`` deletes the cgroups).
Only loopback addresses exist inside it: no packet leaves the machine, or even the namespace.

A process is started inside with ``child_setup`` (in the child, before exec, so its pid and
command line are its own); this process's clients enter it with ``entered``: the calling
thread joins the namespace, and the threads and processes it starts meanwhile are born there.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kmedic.errors import KmedicError

NETNS_DIR = Path("/run/netns")
PREFIX = "kmedic-"
_CLONE_NEWNET = 0x40000000
IFB = "kmedic-ifb"  # the device each broker's ingress is shaped on
# A class's burst: at least one loopback packet (64 kB with segmentation offload), and
# small enough that a link of a few Mbit/s is held to its rate within a second.
BURST = "256k"
_UNSHAPED = "100gbit"
DEFAULT_SOURCE = "127.0.0.1"
EGRESS, INGRESS = 1, 2  # the HTB handles (majors) on lo and on the IFB device
FIRST_CLASS = 2  # minor of the first shaped address's class (1 is the unshaped default)
_HOST_LOCAL_PRIO, _SHAPED_PRIO = "1", "2"  # tc tries a lower prio's filters first
MOUNTS = Path("/proc/self/mounts")


def name_for(workdir: Path) -> str:
    """The namespace of the cluster in ``workdir``: one per work directory."""
    digest = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:10]
    return PREFIX + digest


@dataclass(frozen=True)
class Namespace:
    name: str

    @property
    def path(self) -> Path:
        return NETNS_DIR / self.name

    def exists(self) -> bool:
        return self.path.exists()

    @property
    def cgroups(self) -> Path:
        """The cgroup (v2) holding one cgroup per shaped address, for the processes whose
        connections go through its classes."""
        return cgroup2_root() / self.name

    @classmethod
    def create(
        cls,
        name: str,
        addresses: Iterable[str],
        shaped: Iterable[str],
        mbps: int,
        host_local: Mapping[str, int] | None = None,
    ) -> Namespace:
        """A new namespace with ``lo`` up holding ``addresses``, each address in ``shaped``
        held to ``mbps`` Mbit/s each way, over the connections it accepts and those its
        cgroup's processes open (``child_setup``), but for its ``host_local`` port. A
        namespace of the same name left by a crashed run is removed first (its processes
        died with that run)."""
        if mbps < 1:
            raise KmedicError(f"the shaped link speed must be at least 1 Mbit/s, got {mbps}")
        missing = [t for t in ("ip", "tc", "iptables") if shutil.which(t) is None]
        if missing:
            raise KmedicError(
                f"the shaped cluster needs {', '.join(missing)} (Debian's iproute2 and "
                "iptables packages; `make bootstrap` installs them)"
            )
        namespace = cls(name)
        namespace.remove()
        addresses, shaped = list(addresses), list(shaped)
        run(["ip", "netns", "add", name], f"creating network namespace {name}")
        try:
            for command in shaping_commands(addresses, shaped, mbps, host_local):
                run(["ip", "-n", name, *command] if command[0] in ("link", "address", "route")
                     else ["tc", "-n", name, *command], f"shaping namespace {name}")  # fmt: skip
            for address in shaped:
                (namespace.cgroups / address).mkdir(parents=True, exist_ok=True)
            for command in opened_commands(name, shaped):
                run(["ip", "netns", "exec", name, *command], f"addressing namespace {name}")
        except BaseException:
            namespace.remove()
            raise
        return namespace

    def remove(self) -> None:
        """Delete the namespace (with its interfaces, queueing disciplines and rules) and its
        cgroups; what is already gone is fine. A cgroup a process is still in is named."""
        if self.exists():
            run(["ip", "netns", "delete", self.name], f"removing network namespace {self.name}")
        root = _cgroup2_mount()
        group = None if root is None else root / self.name
        if group is None or not group.is_dir():
            return
        for path in [*sorted(p for p in group.iterdir() if p.is_dir()), group]:
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise KmedicError(
                    f"cannot remove cgroup {path}: {exc.strerror} (a process of the cluster "
                    f"is still in it: {path / 'cgroup.procs'})"
                ) from exc

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """The calling thread inside the namespace for the block: its sockets, and the
        threads and processes it starts, are the namespace's. Back where it was after."""
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            _setns(libc, self.path, self.name)
            try:
                yield
            finally:
                if libc.setns(own, _CLONE_NEWNET) != 0:
                    raise KmedicError(
                        f"could not leave network namespace {self.name}: "
                        f"{os.strerror(ctypes.get_errno())}"
                    )
        finally:
            os.close(own)

    def link_bytes(self, shaped: list[str]) -> dict[str, tuple[int, int]]:
        """Bytes each shaped address's classes have passed since the namespace was made:
        address -> (sent, received). ``shaped`` as given to ``create``."""
        sent = _class_bytes(self.name, "lo")
        received = _class_bytes(self.name, IFB)
        return {
            address: (sent.get(f"{EGRESS}:{i:x}", 0), received.get(f"{INGRESS}:{i:x}", 0))
            for i, address in enumerate(shaped, start=FIRST_CLASS)
        }

    def group_setup(self, group: str) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the child into the cgroup ``group`` of the namespace's
        (created here): the connections it opens can be marked and cut (links.py). The child
        is in the namespace already (started from a thread inside it)."""
        procs = self.cgroups / group / "cgroup.procs"
        procs.parent.mkdir(parents=True, exist_ok=True)

        def enter() -> None:
            procs.write_text("0")

        return enter

    def child_setup(self, source: str | None = None) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the child into the namespace before it execs, and
        with ``source`` (a shaped address) into that address's cgroup: the connections it
        opens go through that address's classes."""
        path, name = self.path, self.name
        procs = None if source is None else self.cgroups / source / "cgroup.procs"

        def enter() -> None:
            if procs is not None:
                procs.write_text("0")  # "0": the writing process, here the child itself
            _setns(ctypes.CDLL("libc.so.6", use_errno=True), path, name)

        return enter


def shaping_commands(
    addresses: list[str],
    shaped: list[str],
    mbps: int,
    host_local: Mapping[str, int] | None = None,
) -> list[list[str]]:
    """The ``ip`` and ``tc`` commands (without ``-n NAME``) that bring ``lo`` up with
    ``addresses`` and hold each address of ``shaped`` to ``mbps`` Mbit/s each way, except
    the port ``host_local`` names for it (what it serves its own host: left unshaped); pure,
    so the layout is tested without root."""
    rate = f"{mbps}mbit"
    own = [a for a in addresses if a != DEFAULT_SOURCE]
    commands: list[list[str]] = [
        ["link", "set", "lo", "up"],
        *(["address", "add", f"{address}/32", "dev", "lo"] for address in own),
        # Whatever connects to a node connects from 127.0.0.1 (by default, a local address
        # would be its own connections' source).
        *(["route", "replace", "local", address, "dev", "lo", "table", "local", "proto",
           "kernel", "scope", "host", "src", DEFAULT_SOURCE] for address in own),
        ["link", "add", IFB, "type", "ifb"],
        ["link", "set", IFB, "up"],
        ["qdisc", "add", "dev", "lo", "handle", "ffff:", "ingress"],
        ["filter", "add", "dev", "lo", "parent", "ffff:", "protocol", "ip", "prio", "1",
         "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", IFB],
    ]  # fmt: skip
    for device, direction, major in (("lo", "src", EGRESS), (IFB, "dst", INGRESS)):
        root = f"{major}:"
        # The broker's side of a host-local port: its source port going out, destination in.
        port_side = "sport" if direction == "src" else "dport"
        commands += [
            ["qdisc", "add", "dev", device, "root", "handle", root, "htb", "default", "1",
             "r2q", "1000"],
            ["class", "add", "dev", device, "parent", root, "classid", f"{major}:1", "htb",
             "rate", _UNSHAPED],
        ]  # fmt: skip
        for index, address in enumerate(shaped, start=FIRST_CLASS):
            classid = f"{major}:{index:x}"
            commands += [
                ["class", "add", "dev", device, "parent", root, "classid", classid, "htb",
                 "rate", rate, "ceil", rate, "burst", BURST, "cburst", BURST],
                ["filter", "add", "dev", device, "parent", root, "protocol", "ip", "prio",
                 _SHAPED_PRIO, "u32", "match", "ip", direction, f"{address}/32", "flowid",
                 classid],
            ]  # fmt: skip
            port = (host_local or {}).get(address)
            if port is not None:  # evaluated first (a lower prio): the unshaped class
                commands.append(
                    ["filter", "add", "dev", device, "parent", root, "protocol", "ip", "prio",
                     _HOST_LOCAL_PRIO, "u32", "match", "ip", direction, f"{address}/32",
                     "match", "ip", port_side, str(port), "0xffff", "flowid", f"{major}:1"]
                )  # fmt: skip
    return commands


def opened_commands(name: str, shaped: list[str]) -> list[list[str]]:
    """The ``iptables`` commands (run inside namespace ``name``) that put the connections
    each shaped address's cgroup opens through that address's classes: what it sends on them
    in its egress class, what it receives in its ingress class; pure."""
    commands: list[list[str]] = []
    for index, address in enumerate(shaped, start=FIRST_CLASS):
        mark = str(index)
        commands += [
            ["iptables", "-t", "mangle", "-A", "OUTPUT", "-m", "conntrack", "--ctstate", "NEW",
             "-m", "cgroup", "--path", f"{name}/{address}", "-j", "CONNMARK", "--set-mark",
             mark],
            ["iptables", "-t", "mangle", "-A", "POSTROUTING", "-m", "connmark", "--mark", mark,
             "-m", "conntrack", "--ctdir", "ORIGINAL", "-j", "CLASSIFY", "--set-class",
             f"{EGRESS}:{index:x}"],
            ["iptables", "-t", "mangle", "-A", "POSTROUTING", "-m", "connmark", "--mark", mark,
             "-m", "conntrack", "--ctdir", "REPLY", "-j", "CLASSIFY", "--set-class",
             f"{INGRESS}:{index:x}"],
        ]  # fmt: skip
    return commands


def cgroup2_root() -> Path:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup``, or its ``unified``
    directory beside the v1 controllers)."""
    root = _cgroup2_mount()
    if root is None:
        raise KmedicError(
            "the shaped cluster needs the cgroup v2 hierarchy mounted (no cgroup2 entry in "
            f"{MOUNTS}): the connections each broker opens are found by its cgroup"
        )
    return root


def _cgroup2_mount() -> Path | None:
    try:
        mounts = MOUNTS.read_text()
    except OSError:
        return None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "cgroup2":
            return Path(fields[1])
    return None


def _class_bytes(name: str, device: str) -> dict[str, int]:
    """classid -> bytes sent, of ``device``'s HTB classes in namespace ``name``."""
    shown = run(["tc", "-n", name, "-s", "class", "show", "dev", device], "reading link bytes")
    out: dict[str, int] = {}
    for block in shown.split("class htb ")[1:]:
        fields = block.split()
        if "Sent" in fields:
            out[fields[0]] = int(fields[fields.index("Sent") + 1])
    return out


def leftovers() -> list[str]:
    """The names of kmedic's namespaces, and of their cgroups, that exist now (a test's
    teardown wants none)."""
    found: set[str] = set()
    for root in (NETNS_DIR, _cgroup2_mount()):
        if root is not None and root.is_dir():
            found.update(p.name for p in root.iterdir() if p.name.startswith(PREFIX))
    return sorted(found)


def _setns(libc: ctypes.CDLL, path: Path, name: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise KmedicError(f"network namespace {name} does not exist ({exc.strerror})") from exc
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            raise KmedicError(
                f"could not enter network namespace {name}: {os.strerror(ctypes.get_errno())} "
                "(it takes root, or CAP_SYS_ADMIN)"
            )
    finally:
        os.close(fd)


class CommandFailed(KmedicError):
    """A command of the namespace's set-up exited with an error (its message names it)."""


def class_index(shaped: list[str], address: str) -> int:
    """The class minor (and connection mark) of a shaped address: the first is
    ``FIRST_CLASS``, in the order the addresses were shaped."""
    return FIRST_CLASS + shaped.index(address)


def run(command: list[str], what: str) -> str:
    """``command``'s output; a failure names the command and what it was for."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise KmedicError(f"{what}: {command[0]} is not installed (iproute2)") from exc
    if done.returncode != 0:
        raise CommandFailed(f"{what}: `{' '.join(command)}` failed: {done.stderr.strip()[-400:]}")
    return done.stdout
