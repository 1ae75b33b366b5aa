"""Opening kafka-python's admin client: a start that fails (nothing listens) is one clear
error and leaves no network thread running (kafka-python starts it before it bootstraps)."""

from __future__ import annotations

import socket
import threading

import pytest

from kmedic.errors import KmedicError
from kmedic.kafka_admin import connect_admin


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def io_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("kafka-io")}


def test_a_client_that_cannot_start_names_the_cluster_and_leaves_no_thread() -> None:
    bootstrap = f"127.0.0.1:{closed_port()}"
    before = io_threads()
    for _ in range(3):
        with pytest.raises(KmedicError, match=f"cannot reach the cluster at {bootstrap}"):
            connect_admin(bootstrap, client_id="kmedic-test", timeout_ms=300)
    # No thread of its own left (another test's may end meanwhile: compared as sets, a count
    # dropped by one that ended hid nothing and failed the test at random).
    assert io_threads() - before == set()
