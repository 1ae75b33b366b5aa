"""A TCP relay in front of a service (ZooKeeper, for the managers behind it): ``block()``
cuts every relayed connection and refuses new ones - a network partition for the clients
behind this relay only, while everything else still reaches the service; ``unblock()`` heals
it. The soak cuts a leading manager off ZooKeeper this way (it still reaches Kafka), and so do
the failover tests. ``freeze()`` is the silent kind: connections stay open and new ones are
accepted, but nothing is relayed either way (a switch dropping packets): the client learns
only when its own reads time out, and its ZooKeeper session expires on the server's clock."""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """Relays 127.0.0.1:<port> to the target; can cut and heal the link."""

    def __init__(self, target: str) -> None:
        host, port = target.split(",")[0].rsplit(":", 1)
        self._target = (host, int(port))
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._closed = False
        self._frozen = threading.Event()
        self._held: list[socket.socket] = []  # accepted while frozen: never answered
        # Chosen by the kernel at the first start, kept for every start after (the clients
        # behind the relay were told this port); never a port chosen first and bound later.
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        self.port = int(listener.getsockname()[1])
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

    def freeze(self) -> None:
        """Relay nothing more, silently: no reset, no refusal."""
        self._frozen.set()

    def thaw(self) -> None:
        """Relay again; connections accepted while frozen are closed (their clients retry)."""
        self._frozen.clear()
        with self._lock:
            held, self._held = self._held, []
        for conn in held:
            with contextlib.suppress(OSError):
                conn.close()

    def stop(self) -> None:
        self._closed = True
        self.thaw()
        self.block()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self._frozen.is_set():
                with self._lock:
                    self._held.append(client)
                continue
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

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not self._frozen.is_set():  # frozen: dropped, as a switch would
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
