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
Everything else (ZooKeeper, the controllers, clients talking among themselves) is unshaped.
The namespace is a named one (``ip netns``), so a later command finds it; removing it removes
its interfaces and queueing disciplines with it. Only loopback addresses exist inside it: no
packet leaves the machine, or even the namespace.

A process is started inside with ``child_setup`` (in the child, before exec, so its pid and
command line are its own); this process's clients enter it with ``entered``: the calling
thread joins the namespace, and the threads and processes it starts meanwhile are born there.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kmedic.errors import KmedicError

NETNS_DIR = Path("/run/netns")
PREFIX = "kmedic-"
_CLONE_NEWNET = 0x40000000
IFB = "kmedic-ifb"  # the device each broker's ingress is shaped on
# A class's burst: at least one loopback packet (64 kB with segmentation offload), and
# small enough that a link of a few Mbit/s is held to its rate within a second.
_BURST = "256k"
_UNSHAPED = "100gbit"


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

    @classmethod
    def create(
        cls, name: str, addresses: Iterable[str], shaped: Iterable[str], mbps: int
    ) -> Namespace:
        """A new namespace with ``lo`` up holding ``addresses``, each address in ``shaped``
        held to ``mbps`` Mbit/s each way. A namespace of the same name left by a crashed run
        is removed first (its processes died with that run)."""
        if mbps < 1:
            raise KmedicError(f"the shaped link speed must be at least 1 Mbit/s, got {mbps}")
        namespace = cls(name)
        if namespace.exists():
            namespace.remove()
        _run(["ip", "netns", "add", name], f"creating network namespace {name}")
        try:
            for command in shaping_commands(list(addresses), list(shaped), mbps):
                _run(["ip", "-n", name, *command] if command[0] in ("link", "address") else
                     ["tc", "-n", name, *command], f"shaping namespace {name}")  # fmt: skip
        except BaseException:
            namespace.remove()
            raise
        return namespace

    def remove(self) -> None:
        """Delete the namespace (with its interfaces and queueing disciplines); a namespace
        already gone is fine."""
        if self.exists():
            _run(["ip", "netns", "delete", self.name], f"removing network namespace {self.name}")

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

    def child_setup(self) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the child into the namespace before it execs."""
        path, name = self.path, self.name

        def enter() -> None:
            _setns(ctypes.CDLL("libc.so.6", use_errno=True), path, name)

        return enter


def shaping_commands(addresses: list[str], shaped: list[str], mbps: int) -> list[list[str]]:
    """The ``ip`` and ``tc`` commands (without ``-n NAME``) that bring ``lo`` up with
    ``addresses`` and hold each address of ``shaped`` to ``mbps`` Mbit/s each way; pure, so
    the layout is tested without root."""
    rate = f"{mbps}mbit"
    commands: list[list[str]] = [
        ["link", "set", "lo", "up"],
        *(["address", "add", f"{address}/32", "dev", "lo"] for address in addresses),
        ["link", "add", IFB, "type", "ifb"],
        ["link", "set", IFB, "up"],
        ["qdisc", "add", "dev", "lo", "handle", "ffff:", "ingress"],
        ["filter", "add", "dev", "lo", "parent", "ffff:", "protocol", "ip", "prio", "1",
         "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", IFB],
    ]  # fmt: skip
    for device, direction in (("lo", "src"), (IFB, "dst")):
        commands += [
            ["qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "1",
             "r2q", "1000"],
            ["class", "add", "dev", device, "parent", "1:", "classid", "1:1", "htb",
             "rate", _UNSHAPED],
        ]  # fmt: skip
        for index, address in enumerate(shaped, start=2):
            classid = f"1:{index:x}"
            commands += [
                ["class", "add", "dev", device, "parent", "1:", "classid", classid, "htb",
                 "rate", rate, "ceil", rate, "burst", _BURST, "cburst", _BURST],
                ["filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio", "1",
                 "u32", "match", "ip", direction, f"{address}/32", "flowid", classid],
            ]  # fmt: skip
    return commands


def leftovers() -> list[str]:
    """The names of kmedic's namespaces that exist now (a test's teardown wants none)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(PREFIX))


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


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise KmedicError(f"{what}: {command[0]} is not installed (iproute2)") from exc
    if done.returncode != 0:
        raise KmedicError(f"{what}: `{' '.join(command)}` failed: {done.stderr.strip()[-400:]}")
