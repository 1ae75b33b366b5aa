"""Which client errors stop a role at start (pure classification of librdkafka's errors), and
a plaintext client, which has none to meet, not waiting for them."""

from __future__ import annotations

import time

import pytest

from kmedic.kafka_preflight import check_credentials, classify
from kmedic.localcluster.process import free_ports


def test_a_refused_password_names_the_credential_settings() -> None:
    refusal = classify(
        "_AUTHENTICATION",
        "SASL authentication error: Authentication failed during authentication due to "
        "invalid credentials with SASL mechanism SCRAM-SHA-512",
    )
    assert refusal is not None
    assert "kafka.password_file" in refusal.what
    assert "invalid credentials" in refusal.detail


@pytest.mark.parametrize(
    "code",
    ["_SSL", "_TRANSPORT"],
)
def test_an_untrusted_broker_certificate_names_the_ca_file(code: str) -> None:
    refusal = classify(
        code,
        "sasl_ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL "
        "routines::certificate verify failed: broker certificate could not be verified",
    )
    assert refusal is not None
    assert refusal.what.startswith("kafka.ssl_ca_file")


def test_other_tls_failures_point_at_the_tls_settings() -> None:
    refusal = classify("_SSL", "ssl.key.location failed: no such file")
    assert refusal is not None and "TLS" in refusal.what


@pytest.mark.parametrize(
    ("code", "text"),
    [
        ("_TRANSPORT", "Connect to ipv4#127.0.0.1:9 failed: Connection refused"),
        ("_ALL_BROKERS_DOWN", "1/1 brokers are down"),
        ("_TIMED_OUT", "Failed to get metadata: Local: Timed out"),
        ("_RESOLVE", "Failed to resolve 'nowhere:9092'"),
    ],
)
def test_an_unreachable_cluster_is_not_a_refusal(code: str, text: str) -> None:
    # Brokers that are down may start later: every role already waits for them.
    assert classify(code, text) is None


def test_a_plaintext_client_has_nothing_to_check_and_does_not_wait() -> None:
    """Against a port nothing listens on it used to wait out its whole timeout (ten seconds of
    every role's start during an outage) for refusals that plaintext cannot bring."""
    began = time.monotonic()
    check_credentials(f"127.0.0.1:{free_ports(1)[0]}", role="test", timeout_s=30)
    assert time.monotonic() - began < 5
