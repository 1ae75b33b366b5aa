"""The ports local nodes listen on come from below the kernel's ephemeral range: a port from
it may be taken by a client's outgoing connection while its node is stopped, and the node's
restart then fails to bind (a clean clone's run: "Unable to start acceptor for PLAINTEXT")."""

from __future__ import annotations

import socket
from pathlib import Path

from kmedic.localcluster import process


def test_ports_are_free_distinct_and_below_the_ephemeral_range() -> None:
    low, high = process.ephemeral_range()
    ports = process.free_ports(8)
    assert len(set(ports)) == 8
    assert all(process.LISTEN_PORTS_FROM <= p < low for p in ports), (ports, low, high)
    for port in ports:  # each can be bound now
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_the_range_is_read_from_the_kernel_else_linuxs_default(tmp_path: Path) -> None:
    given = tmp_path / "range"
    given.write_text("40000\t50000\n")
    assert process.ephemeral_range(str(given)) == (40_000, 50_000)
    assert process.ephemeral_range(str(tmp_path / "missing")) == (32_768, 60_999)
