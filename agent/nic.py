"""The link speed of the network interface the broker is reached on, read on the broker's host
(Linux: the interface holding the broker's address, its ``/sys/class/net/<name>/speed`` in
Mbit/s). Said plainly when it cannot be read: loopback and most virtual interfaces have no link
speed, and a host without the address cannot say which interface carries it. The manager uses
the figure as the broker's network capacity when none is configured. The agent's ``nic_mbps``
replaces the kernel's figure where the link is capped below its speed (or has none)."""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import socket
import struct
from pathlib import Path

from kmedic import brokerstats as bs

SYSFS = Path("/sys/class/net")
SIOCGIFADDR = 0x8915


def nic_for(host: str, sysfs: Path = SYSFS) -> bs.Nic:
    """The interface carrying ``host`` (a name or an address) and its speed in bytes/s."""
    try:
        address = socket.gethostbyname(host)
    except OSError as exc:
        return bs.Nic(interface=None, speed_bytes_per_s=None, note=f"cannot resolve {host}: {exc}")
    if ipaddress.ip_address(address).is_loopback:
        return bs.Nic(interface="lo", speed_bytes_per_s=None, note="the broker listens on loopback")
    name = interface_of(address)
    if name is None:
        return bs.Nic(
            interface=None, speed_bytes_per_s=None, note=f"no interface of this host has {address}"
        )
    speed, note = speed_of(name, sysfs)
    return bs.Nic(interface=name, speed_bytes_per_s=speed, note=note)


def configured_nic(host: str, mbps: float) -> bs.Nic:
    """The interface carrying ``host`` with the speed the agent's config gives it."""
    found = nic_for(host)
    return bs.Nic(
        interface=found.interface,
        speed_bytes_per_s=int(mbps * 1_000_000 / 8),
        note=f"nic_mbps {mbps:g} in the agent's config",
    )


def speed_of(interface: str, sysfs: Path = SYSFS) -> tuple[int | None, str | None]:
    """(bytes/s, None), or (None, why not), from the kernel's figure for ``interface``."""
    path = sysfs / interface / "speed"
    try:
        mbit = int(path.read_text().strip())
    except OSError as exc:  # EINVAL: a virtual interface, or a link that is down
        return None, f"{path}: {exc.strerror or exc}"
    except ValueError:
        return None, f"{path} holds no number"
    if mbit <= 0:
        return None, f"{interface} reports no link speed ({mbit})"
    return mbit * 1_000_000 // 8, None


def interface_of(address: str) -> str | None:
    """The interface holding ``address`` (IPv4), asked of the kernel."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) as sock:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, request)
            except OSError:  # no IPv4 address on it
                continue
            if socket.inet_ntoa(answer[20:24]) == address:
                return name
    return None
