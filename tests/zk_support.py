"""ZooKeeper test tools for the coordination and configuration tests.

- ``zk_connect_for``: the session cluster's ZooKeeper, or an existing one named by
  ``KMEDIC_TEST_ZK`` (host:port) so these tests can run without starting Kafka.
- ``TcpProxy`` (composition.tcp_proxy): a real TCP relay in front of ZooKeeper that can cut
  the clients behind it off.
- ``expire_session``: ZooKeeper's own way to expire a session on demand: a second client joins
  the session with its id and password and closes it; the server drops the session and its
  ephemeral znodes, and the first client is told its session expired when it next connects.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from kazoo.client import KazooClient

from composition.tcp_proxy import TcpProxy

__all__ = ["TcpProxy", "expire_session", "zk_connect_for"]


def zk_connect_for(request: pytest.FixtureRequest) -> str:
    external = os.environ.get("KMEDIC_TEST_ZK")
    if external:
        return external
    cluster: Any = request.getfixturevalue("local_cluster")
    return str(cluster.zk_connect)


def expire_session(zk_connect: str, session: tuple[int, bytes]) -> None:
    intruder = KazooClient(hosts=zk_connect, client_id=session, timeout=10)
    intruder.start(timeout=10)
    intruder.stop()
    intruder.close()
