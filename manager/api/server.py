"""Serving the manager's application with uvicorn on a thread of the daemon.

The socket is bound when the server is built, so a port in use fails the manager at start
with the address named, and port 0 gets its number from the kernel there and then. TLS (and
client certificates) come from the web config's own SSL context: TLS 1.2 at least, as the
exporters have it. Stopping ends the streaming follows, gives the requests in flight two
seconds, and closes the socket."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from kmedic.web_config import WebConfig
from manager.api.app import build_app
from manager.api.view import ManagerView

log = get_logger(__name__)

START_TIMEOUT_S = 10.0
GRACE_S = 2


class ApiServer:
    def __init__(
        self,
        view: ManagerView,
        host: str,
        port: int,
        web: WebConfig | None = None,
        *,
        max_followers: int = 8,
    ) -> None:
        web = web or WebConfig()
        tls = web.ssl_context()  # unreadable certificates fail here, at start
        self._stopping = threading.Event()
        try:
            self._sock = socket.create_server((host, port), reuse_port=False)
        except OSError as exc:
            raise KmedicError(f"cannot serve HTTP on {host}:{port}: {exc.strerror}") from exc
        self.scheme = "https" if tls is not None else "http"
        config = uvicorn.Config(
            build_app(view, web, self._stopping, max_followers),
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=GRACE_S,
            ssl_context_factory=(lambda _config, _default: tls) if tls is not None else None,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def start(self) -> ApiServer:
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            name="kmedic-http",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise KmedicError(f"the HTTP server on port {self.port} did not start")
            time.sleep(0.01)
        log.info("http_serving", port=self.port, scheme=self.scheme)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=GRACE_S + 5)
        self._sock.close()
