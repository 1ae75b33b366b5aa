"""A plain ZooKeeper session for tools: no leader znode, no epoch bump, no watches.

``kmedic snapshot`` reads through one (so taking a snapshot never competes for leadership),
and so do the placement admin commands.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from kmedic.errors import KmedicError
from manager.coordination.acls import ZooKeeperAuth, kazoo_security


@contextmanager
def zk_session(
    zk_connect: str, timeout_s: float = 10.0, auth: ZooKeeperAuth | None = None
) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect, timeout=timeout_s, **kazoo_security(auth))
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError as exc:
        client.close()
        raise KmedicError(
            f"cannot connect to ZooKeeper at {zk_connect} within {timeout_s:.0f}s"
        ) from exc
    try:
        yield client
    finally:
        client.stop()
        client.close()
