"""The one small HTTP server every role uses for its endpoints: GET routes to byte bodies,
optionally behind TLS and basic authentication (``kmedic.web_config``).

TLS handshakes happen in the request's own thread (never in the accept loop), with a socket
timeout, so a client that connects and stays silent cannot stall other scrapes.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kmedic.errors import KmedicError
from kmedic.web_config import BasicAuth, WebConfig

# (status, content type, body)
Reply = tuple[int, str, bytes]
Route = Callable[[], Reply]
REQUEST_TIMEOUT_S = 10.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a failed handshake or a client gone mid-reply is the client's problem


class HttpServer:
    """Serves ``routes`` on ``host:port`` (port 0: a free one) until ``stop()``."""

    def __init__(
        self,
        routes: Mapping[str, Route],
        host: str,
        port: int,
        *,
        web: WebConfig | None = None,
        name: str = "kmedic-http",
        what: str = "HTTP",
    ) -> None:
        self.routes = dict(routes)
        self.name = name
        web = web or WebConfig()
        self._auth = BasicAuth(web.basic_auth_users)
        try:
            self._server = _Server((host, port), self._handler())
        except OSError as exc:
            raise KmedicError(f"cannot serve {what} on {host}:{port}: {exc.strerror}") from exc
        self._server.tls = web.ssl_context()
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def scheme(self) -> str:
        return "https" if self._server.tls is not None else "http"

    def start(self) -> HttpServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        routes, auth = self.routes, self._auth

        class Handler(BaseHTTPRequestHandler):
            timeout = REQUEST_TIMEOUT_S

            def do_GET(self) -> None:
                if not auth.allows(self.headers.get("Authorization")):
                    self._reply(
                        401,
                        "text/plain",
                        b"unauthorized\n",
                        {"WWW-Authenticate": 'Basic realm="kmedic"'},
                    )
                    return
                route = routes.get(self.path.split("?", 1)[0])
                if route is None:
                    known = ", ".join(routes)
                    self._reply(404, "text/plain", f"not found: try {known}\n".encode())
                    return
                self._reply(*route())

            def _reply(
                self, code: int, ctype: str, body: bytes, headers: Mapping[str, str] = {}
            ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # scrapes every few seconds would drown the logs

        return Handler
