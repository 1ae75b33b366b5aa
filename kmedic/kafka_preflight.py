"""The check every role makes once at start: do the brokers accept who we are, and do we trust
them? A wrong password or an untrusted certificate never heals by retrying, so it stops the
role with one line naming the problem; an unreachable cluster is only logged, because every
role already waits for brokers that are down (they may simply start later).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings, confluent_conf
from kmedic.logging import get_logger

log = get_logger(__name__)

CHECK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Refusal:
    """Why a connection can never work: ``what`` names the setting to look at."""

    what: str
    detail: str


def classify(code_name: str, text: str) -> Refusal | None:
    """A librdkafka error that no retry will fix, or None (pure; the codes are KafkaError's).

    SASL failures come as ``_AUTHENTICATION``; TLS failures as ``_SSL`` or as a transport
    error whose text says the handshake failed."""
    lowered = text.lower()
    if code_name == "_AUTHENTICATION":
        return Refusal("kafka.username / kafka.password_file (or sasl_mechanism)", text)
    if code_name == "_SSL" or "ssl handshake failed" in lowered:
        if "certificate verify failed" in lowered:
            return Refusal("kafka.ssl_ca_file: it does not sign the brokers' certificates", text)
        return Refusal("the kafka: section's TLS settings", text)
    return None


def check_credentials(cluster: Cluster, *, role: str, timeout_s: float = CHECK_TIMEOUT_S) -> None:
    """Raise a KmedicError when the cluster refuses this client's identity or this client
    refuses the brokers' certificate; return when a metadata request succeeds or when nothing
    answered within ``timeout_s`` (logged: the role goes on and waits as it always does). A
    plaintext client has neither to check: it returns at once (it used to wait out the whole
    timeout while Kafka was down, ten seconds of every start during an outage)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    settings = client_settings(cluster)
    if settings.security_protocol == "PLAINTEXT":
        return  # no identity to refuse, no certificate to distrust: nothing to check
    refusals: list[Refusal] = []

    def on_error(err: object) -> None:
        name = getattr(err, "name", lambda: "")()
        refusal = classify(str(name), str(getattr(err, "str", lambda: err)()))
        if refusal is not None:
            refusals.append(refusal)

    conf = confluent_conf(cluster, {"error_cb": on_error, "log_level": 0})
    admin = AdminClient(conf)
    deadline = time.monotonic() + timeout_s
    failure = "no answer"
    # Short requests, so that a refusal (reported through the error callback, which poll
    # delivers) ends the wait at once instead of after the whole timeout.
    while not refusals and time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=min(1.0, max(0.1, deadline - time.monotonic())))
            return
        except KafkaException as exc:
            failure = str(exc.args[0]) if exc.args else str(exc)
        admin.poll(0.2)
    who = f"user {settings.username} ({settings.sasl_mechanism})" if settings.sasl else "kmedic"
    if refusals:
        first = refusals[0]
        raise KmedicError(
            f"{role}: Kafka at {settings.bootstrap} ({settings.security_protocol}) refused "
            f"{who}: {first.detail}; check {first.what}"
        )
    log.warning(
        "kafka_not_reachable_at_start",
        role=role,
        bootstrap=settings.bootstrap,
        security_protocol=settings.security_protocol,
        error=failure,
    )


def kafka_silence(cluster: Cluster, timeout_s: float = 3.0) -> str | None:
    """Why no broker answered a metadata request within ``timeout_s`` (librdkafka's words),
    or None when one did: a command giving up on another service asks, so that its one line
    names every service it could not reach."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from kmedic.kafka_client import error_text

    admin = AdminClient(confluent_conf(cluster, {"log_level": 0}))
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        return error_text(exc)
    return None
