"""Protecting kmedic's HTTP endpoints the way Prometheus exporters do: a web-config file with
``tls_server_config`` and bcrypt ``basic_auth_users`` (the exporter-toolkit format), so an
operator reuses the file, the hashes and the scrape config they already have.

Rules: with ``tls_server_config`` every connection is TLS (1.2 at least), and a
``client_auth_type`` of ``RequireAndVerifyClientCert`` refuses clients without a certificate
from ``client_ca_file``; with ``basic_auth_users`` every request needs a user and password
whose bcrypt hash matches, else 401. A file that cannot be read or parsed, or that holds a key
kmedic does not know (a typo, or an exporter-toolkit setting it does not implement), stops the
role at start with the file and the field named; nothing is served unprotected by accident.

One key is kmedic's own: ``api_writers``, the users of ``basic_auth_users`` who may write
through the manager's HTTP API (docs/api.md). Every other user may only read; without
``basic_auth_users`` nobody may write.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import ssl
import threading
from pathlib import Path
from typing import Literal

import bcrypt
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from kmedic.config import load_model_file
from kmedic.errors import ConfigError

ClientAuth = Literal["NoClientCert", "RequireAndVerifyClientCert", "VerifyClientCertIfGiven"]


# Unknown keys are refused, never ignored: a typo (``basic_auth_user``) or an exporter-toolkit
# setting kmedic does not implement (``min_version``, ``http_server_config``) would otherwise
# leave the endpoints less protected than the file says.


class TlsServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    client_auth_type: ClientAuth = "NoClientCert"


class WebConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tls_server_config: TlsServerConfig | None = None
    basic_auth_users: dict[str, str] = Field(default_factory=dict)
    api_writers: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _writers_are_users(self) -> WebConfig:
        strangers = sorted(set(self.api_writers) - set(self.basic_auth_users))
        if strangers:
            raise ValueError(
                f"api_writers names users without a basic_auth_users entry: {', '.join(strangers)}"
            )
        return self

    @field_validator("basic_auth_users")
    @classmethod
    def _bcrypt_hashes(cls, users: dict[str, str]) -> dict[str, str]:
        bad = [u for u, h in users.items() if not h.startswith(("$2a$", "$2b$", "$2y$"))]
        if bad:
            raise ValueError(f"not a bcrypt hash for user(s): {', '.join(sorted(bad))}")
        return users

    def ssl_context(self) -> ssl.SSLContext | None:
        tls = self.tls_server_config
        if tls is None:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(tls.cert_file, tls.key_file)
            if tls.client_ca_file is not None:
                ctx.load_verify_locations(tls.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"web config: tls_server_config: {exc}") from exc
        if tls.client_auth_type == "RequireAndVerifyClientCert":
            ctx.verify_mode = ssl.CERT_REQUIRED
        elif tls.client_auth_type == "VerifyClientCertIfGiven":
            ctx.verify_mode = ssl.CERT_OPTIONAL
        if ctx.verify_mode != ssl.CERT_NONE and tls.client_ca_file is None:
            raise ConfigError(
                f"web config: tls_server_config: client_auth_type {tls.client_auth_type} "
                "needs client_ca_file"
            )
        return ctx


def listens_beyond_loopback(host: str) -> bool:
    """Whether a server on ``host`` can be reached from other machines (0.0.0.0, ::, an
    address or a name other than loopback's)."""
    if host in ("localhost", "ip6-localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a host name: it resolves to whatever the network says


def exposure(host: str, web: WebConfig) -> list[tuple[str, str]]:
    """What an operator should be told, once at start, about how open a role's endpoints
    are: (event, sentence). Reads open to every caller beyond loopback (no basic_auth_users),
    and passwords sent in clear (basic auth without TLS)."""
    out = []
    if not web.basic_auth_users and listens_beyond_loopback(host):
        out.append(
            (
                "http_reads_open",
                f"the HTTP endpoints on {host} answer every caller that reaches the port: the "
                "status page, the decisions and the audit log are readable without a password; "
                "set http.web_config_file with basic_auth_users (docs/security.md), or listen "
                "on 127.0.0.1",
            )
        )
    if web.basic_auth_users and web.tls_server_config is None:
        out.append(
            (
                "http_basic_auth_without_tls",
                "basic_auth_users without tls_server_config: passwords cross the network in "
                "clear; add tls_server_config to the web config (docs/security.md)",
            )
        )
    return out


def load_web_config(path: Path) -> WebConfig:
    """The web-config file at ``path``, or a ConfigError naming the file and the field."""
    web = load_model_file(WebConfig, path, "web config")
    web.ssl_context()  # unreadable certificates fail at start, not at the first scrape
    return web


class BasicAuth:
    """Checks an ``Authorization: Basic`` header against bcrypt hashes. bcrypt is slow on
    purpose (tens of ms); a scrape every few seconds would pay it each time, so a verified
    credential is remembered by its SHA-256 (never in clear) until the hash table changes."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = dict(users)
        self._verified: set[bytes] = set()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    def allows(self, header: str | None) -> bool:
        return not self._users or self.user(header) is not None

    def user(self, header: str | None) -> str | None:
        """The user an ``Authorization`` header proves, or None (no header, a wrong password,
        a user not in the table)."""
        if not header or not header.startswith("Basic "):
            return None
        try:
            decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, sep, password = decoded.partition(":")
        hashed = self._users.get(user)
        if not sep or hashed is None:
            return None
        key = hashlib.sha256(f"{user}\0{password}\0{hashed}".encode()).digest()
        with self._lock:
            if key in self._verified:
                return user
        if not bcrypt.checkpw(password.encode(), hashed.encode()):
            return None
        with self._lock:
            self._verified.add(key)
        return user
