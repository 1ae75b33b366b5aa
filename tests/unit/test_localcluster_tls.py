"""The local cluster's CA, checked with a real TLS handshake over loopback (Python's ssl, both
ends in this process): a broker certificate is trusted for 127.0.0.1 and localhost, not for
another name, not by a client trusting another CA; a client certificate authenticates."""

from __future__ import annotations

import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest

from kmedic.localcluster.tls import IssuedPair, LocalCa


def handshake(
    server: IssuedPair,
    trust: Path,
    host: str,
    *,
    client: IssuedPair | None = None,
    require_client: bool = False,
    server_ca: Path | None = None,
) -> str:
    """Connect to a one-shot TLS server on loopback; the client's peer certificate subject."""
    srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.load_cert_chain(server.cert, server.key)
    if require_client:
        srv.verify_mode = ssl.CERT_REQUIRED
        srv.load_verify_locations(server_ca)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    errors: list[BaseException] = []

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with srv.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError) as exc:
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    cli = ssl.create_default_context(cafile=str(trust))
    if client is not None:
        cli.load_cert_chain(client.cert, client.key)
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            cli.wrap_socket(raw, server_hostname=host) as tls,
        ):
            peer = tls.getpeercert()
            tls.sendall(b"x")
    finally:
        thread.join(timeout=10)
        listener.close()
    if errors:
        raise errors[0]
    subject = dict(x[0] for x in peer["subject"])
    return str(subject["commonName"])


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCa:
    return LocalCa.create(tmp_path_factory.mktemp("ca"))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_broker_certificate_is_trusted_for_loopback(
    ca: LocalCa, tmp_path: Path, host: str
) -> None:
    broker = ca.issue(tmp_path, "broker-1", server=True)
    assert handshake(broker, ca.cert, host) == "broker-1"


def test_a_broker_certificate_is_not_trusted_for_another_name(ca: LocalCa, tmp_path: Path) -> None:
    broker = ca.issue(tmp_path, "broker-1", server=True)
    with pytest.raises(ssl.SSLCertVerificationError, match="match"):
        handshake(broker, ca.cert, "kafka.example.org")


def test_a_client_trusting_another_ca_refuses(ca: LocalCa, tmp_path: Path) -> None:
    broker = ca.issue(tmp_path, "broker-1", server=True)
    other = LocalCa.create(tmp_path / "other", name="someone else")
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
        handshake(broker, other.cert, "127.0.0.1")


def test_a_client_certificate_authenticates(ca: LocalCa, tmp_path: Path) -> None:
    broker = ca.issue(tmp_path, "broker-1", server=True)
    client = ca.issue(tmp_path, "kmedic-manager", server=False)
    assert (
        handshake(
            broker, ca.cert, "127.0.0.1", client=client, require_client=True, server_ca=ca.cert
        )
        == "broker-1"
    )
    with pytest.raises((ssl.SSLError, OSError)):
        handshake(broker, ca.cert, "127.0.0.1", require_client=True, server_ca=ca.cert)


def test_keys_are_pkcs8_and_owner_only(ca: LocalCa, tmp_path: Path) -> None:
    pair = ca.issue(tmp_path, "broker-1", server=True)
    for key in (ca.key, pair.key):
        assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8, clear
        assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_the_secured_clusters_files_are_private_and_its_users_are_every_role(
    tmp_path: Path,
) -> None:
    from kmedic.localcluster.security import USERS, ClusterSecurity

    security = ClusterSecurity.create(tmp_path / "security")
    assert USERS == ("admin", "kmedic-agent", "kmedic-stream", "kmedic-manager")
    for path in (tmp_path / "security").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    passwords = {security.password(u) for u in USERS}
    assert len(passwords) == len(USERS) and all(len(p) == 32 for p in passwords)
    # One key store file, key first: what Kafka's PEM key store reads.
    keystore = security.keystore.read_text()
    assert keystore.startswith("-----BEGIN PRIVATE KEY-----")
    assert "-----BEGIN CERTIFICATE-----" in keystore
    args = security.scram_arguments()
    assert len(args) == 2 * 2 * len(USERS)
    assert f"SCRAM-SHA-512=[name=admin,password={security.password('admin')}]" in args
    # The same CA signs what brokers present: a client trusting ca.pem accepts it.
    pair = IssuedPair(
        tmp_path / "security" / "broker.pem", tmp_path / "security" / "broker-key.pem"
    )
    assert "broker" in handshake(pair, security.ca_file, "127.0.0.1")
    client = security.client("127.0.0.1:9093", "kmedic-agent")
    assert client.confluent()["sasl.password"] == security.password("kmedic-agent")
