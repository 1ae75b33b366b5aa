"""A plain ZooKeeper session for tools: no leader znode, no epoch bump, no watches.

``kmedic snapshot`` reads through one (so taking a snapshot never competes for leadership),
and so do the placement admin commands.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from kmedic.errors import Unreachable
from manager.coordination.acls import ZooKeeperAuth, kazoo_security

# How long a tool waits for a session: a live ensemble answers in well under a second.
CONNECT_TIMEOUT_S = 10.0


@contextmanager
def zk_session(
    zk_connect: str, timeout_s: float | None = None, auth: ZooKeeperAuth | None = None
) -> Iterator[KazooClient]:
    timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    client = KazooClient(hosts=zk_connect, timeout=timeout_s, **kazoo_security(auth))
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError as exc:
        client.close()
        raise Unreachable(
            f"cannot connect to ZooKeeper at {zk_connect} within {timeout_s:.0f}s"
        ) from exc
    try:
        yield client
    finally:
        client.stop()
        client.close()
