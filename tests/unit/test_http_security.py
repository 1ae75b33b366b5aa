"""kmedic's HTTP endpoints behind a Prometheus web-config: TLS, client certificates and bcrypt
basic authentication, on a real server over loopback (urllib and ssl as the clients)."""

from __future__ import annotations

import base64
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import bcrypt
import pytest
import yaml

from kmedic.errors import ConfigError
from kmedic.http_server import HttpServer, Route
from kmedic.localcluster.tls import LocalCa
from kmedic.web_config import BasicAuth, WebConfig, load_web_config

HASH = bcrypt.hashpw(b"scrape-pass", bcrypt.gensalt(rounds=4)).decode()


Serve = Callable[[WebConfig | None], HttpServer]


def routes() -> dict[str, Route]:
    return {"/metrics": lambda: (200, "text/plain", b"up 1\n")}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pki")
    ca = LocalCa.create(d)
    server = ca.issue(d, "kmedic-manager", server=True)
    client = ca.issue(d, "prometheus", server=False)
    return {
        "ca": ca.cert,
        "cert": server.cert,
        "key": server.key,
        "client_cert": client.cert,
        "client_key": client.key,
    }


def web_file(tmp_path: Path, doc: dict[str, object]) -> Path:
    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def serve() -> Iterator[Serve]:
    started: list[HttpServer] = []

    def start(web: WebConfig | None) -> HttpServer:
        server = HttpServer(routes(), "127.0.0.1", 0, web=web).start()
        started.append(server)
        return server

    yield start
    for s in started:
        s.stop()


def get(url: str, *, context: ssl.SSLContext | None = None, auth: str | None = None) -> int:
    request = urllib.request.Request(url)
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_no_web_config_serves_plain_http(serve: Serve) -> None:
    server = serve(None)
    assert server.scheme == "http"
    assert get(f"http://127.0.0.1:{server.port}/metrics") == 200
    assert get(f"http://127.0.0.1:{server.port}/nope") == 404


def test_basic_auth_needs_a_matching_bcrypt_password(serve: Serve) -> None:
    server = serve(WebConfig(basic_auth_users={"prometheus": HASH}))
    url = f"http://127.0.0.1:{server.port}/metrics"
    assert get(url) == 401
    assert get(url, auth="prometheus:wrong") == 401
    assert get(url, auth="someone:scrape-pass") == 401
    assert get(url, auth="prometheus:scrape-pass") == 200
    assert get(url, auth="prometheus:scrape-pass") == 200  # remembered, still right
    assert get(url, auth="prometheus:wrong") == 401  # and a wrong one still refused


def test_basic_auth_rejects_malformed_headers() -> None:
    auth = BasicAuth({"prometheus": HASH})
    for header in (None, "", "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"x").decode()):
        assert not auth.allows(header)
    assert BasicAuth({}).allows(None)


def test_tls_serves_https_trusted_through_the_ca(serve: Serve, pki: dict[str, Path]) -> None:
    web = WebConfig.model_validate(
        {"tls_server_config": {"cert_file": str(pki["cert"]), "key_file": str(pki["key"])}}
    )
    server = serve(web)
    assert server.scheme == "https"
    trusted = ssl.create_default_context(cafile=str(pki["ca"]))
    assert get(f"https://127.0.0.1:{server.port}/metrics", context=trusted) == 200
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        get(f"https://127.0.0.1:{server.port}/metrics", context=ssl.create_default_context())
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        get(f"http://127.0.0.1:{server.port}/metrics")  # plain HTTP to a TLS port


def test_client_certificates_when_required(serve: Serve, pki: dict[str, Path]) -> None:
    web = WebConfig.model_validate(
        {
            "tls_server_config": {
                "cert_file": str(pki["cert"]),
                "key_file": str(pki["key"]),
                "client_ca_file": str(pki["ca"]),
                "client_auth_type": "RequireAndVerifyClientCert",
            },
            "basic_auth_users": {"prometheus": HASH},
        }
    )
    server = serve(web)
    url = f"https://127.0.0.1:{server.port}/metrics"
    with_cert = ssl.create_default_context(cafile=str(pki["ca"]))
    with_cert.load_cert_chain(pki["client_cert"], pki["client_key"])
    assert get(url, context=with_cert, auth="prometheus:scrape-pass") == 200
    assert get(url, context=with_cert) == 401
    without = ssl.create_default_context(cafile=str(pki["ca"]))
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        get(url, context=without, auth="prometheus:scrape-pass")


def test_a_silent_client_does_not_stall_other_requests(serve: Serve, pki: dict[str, Path]) -> None:
    web = WebConfig.model_validate(
        {"tls_server_config": {"cert_file": str(pki["cert"]), "key_file": str(pki["key"])}}
    )
    server = serve(web)
    silent = socket.create_connection(("127.0.0.1", server.port))  # never says hello
    try:
        started = time.monotonic()
        trusted = ssl.create_default_context(cafile=str(pki["ca"]))
        assert get(f"https://127.0.0.1:{server.port}/metrics", context=trusted) == 200
        assert time.monotonic() - started < 5, "the scrape waited behind the silent client"
    finally:
        silent.close()


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"basic_auth_users": {"prometheus": "plain-password"}}, "not a bcrypt hash"),
        ({"tls_server_config": {"cert_file": "/nope.pem"}}, "tls_server_config.key_file"),
        (
            {"tls_server_config": {"cert_file": "/nope.pem", "key_file": "/nope-key.pem"}},
            "tls_server_config",
        ),
        ({"tls_server_config": {"client_auth_type": "Sometimes"}}, "client_auth_type"),
        ([1, 2], "must be a mapping"),
        # A typo must not leave the endpoints open: refused, naming the key meant.
        (
            {"basic_auth_user": {"prometheus": HASH}},
            "basic_auth_user: unknown key; did you mean 'basic_auth_users'?",
        ),
        # An exporter-toolkit setting kmedic does not implement is refused, not ignored.
        (
            {"tls_server_config": {"cert_file": "c", "key_file": "k", "min_version": "TLS13"}},
            "tls_server_config.min_version: unknown key",
        ),
        ({"http_server_config": {"http2": False}}, "http_server_config: unknown key"),
    ],
)
def test_a_bad_web_config_is_named_at_start(tmp_path: Path, doc: object, problem: str) -> None:
    path = web_file(tmp_path, doc)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as caught:
        load_web_config(path)
    assert problem in str(caught.value)
    assert "plain-password" not in str(caught.value)


def test_client_auth_without_a_ca_is_refused(tmp_path: Path, pki: dict[str, Path]) -> None:
    path = web_file(
        tmp_path,
        {
            "tls_server_config": {
                "cert_file": str(pki["cert"]),
                "key_file": str(pki["key"]),
                "client_auth_type": "RequireAndVerifyClientCert",
            }
        },
    )
    with pytest.raises(ConfigError, match="needs client_ca_file"):
        load_web_config(path)


def test_a_missing_web_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"web\.yml: cannot read the web config"):
        load_web_config(tmp_path / "web.yml")


@pytest.mark.parametrize(
    ("host", "users", "tls", "told"),
    [
        ("127.0.0.1", False, False, []),
        ("localhost", False, False, []),
        ("::1", False, False, []),
        ("0.0.0.0", False, False, ["http_reads_open"]),
        ("::", False, False, ["http_reads_open"]),
        ("kmedic-1.example", False, False, ["http_reads_open"]),
        ("0.0.0.0", True, False, ["http_basic_auth_without_tls"]),
        ("127.0.0.1", True, False, ["http_basic_auth_without_tls"]),
        ("0.0.0.0", True, True, []),
        ("0.0.0.0", False, True, ["http_reads_open"]),
    ],
)
def test_how_open_the_endpoints_are_is_told_once_at_start(
    host: str, users: bool, tls: bool, told: list[str], pki: dict[str, Path]
) -> None:
    """Issue 71.8: reads open to anyone beyond loopback, and basic auth without TLS, were
    accepted silently; each is one warning line at start (and reads_open a gauge)."""
    from kmedic.web_config import exposure

    web = WebConfig(
        basic_auth_users={"ops": HASH} if users else {},
        tls_server_config={"cert_file": pki["cert"], "key_file": pki["key"]} if tls else None,  # type: ignore[arg-type]
    )
    assert [event for event, _ in exposure(host, web)] == told
