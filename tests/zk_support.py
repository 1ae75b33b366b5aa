"""ZooKeeper test tools for the coordination and configuration tests.

- ``zk_connect_for``: the session cluster's ZooKeeper, or an existing one named by
  ``KMEDIC_TEST_ZK`` (host:port) so these tests can run without starting Kafka.
- ``TcpProxy``: a real TCP relay in front of ZooKeeper. ``block()`` cuts every connection and
  refuses new ones (a network partition for the clients behind it only); ``unblock()`` heals it.
- ``expire_session``: ZooKeeper's own way to expire a session on demand: a second client joins
  the session with its id and password and closes it; the server drops the session and its
  ephemeral znodes, and the first client is told its session expired when it next connects.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import Any

import pytest
from kazoo.client import KazooClient


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


class TcpProxy:
    """Relays 127.0.0.1:<port> to the target; can cut and heal the link."""

    def __init__(self, target: str) -> None:
        host, port = target.split(",")[0].rsplit(":", 1)
        self._target = (host, int(port))
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._closed = False
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = int(probe.getsockname()[1])
        probe.close()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def block(self) -> None:
        """Cut every relayed connection and stop listening (clients get connection refused)."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def unblock(self) -> None:
        self.start()

    def stop(self) -> None:
        self._closed = True
        self.block()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._conns += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
