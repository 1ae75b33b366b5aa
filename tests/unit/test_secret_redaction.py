"""Registered secrets never reach a log line: structlog events, nested fields, stdlib loggers
and exception texts, through the real logging pipeline writing to a captured stderr."""

from __future__ import annotations

import logging

import pytest

from kmedic import secrets
from kmedic.kafka_client import KafkaClientSettings
from kmedic.logging import get_logger, setup_logging


def test_a_resolved_password_is_masked_everywhere_in_the_logs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup_logging(json=True)  # the handler writes to whatever sys.stderr is: capsys's
    settings = KafkaClientSettings(
        bootstrap="b:9093",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        username="kmedic",
        password="hunter2-kmedic",  # type: ignore[arg-type]
    )
    conf = settings.confluent()  # resolving registers it
    log = get_logger("test.redaction")
    log.info("connecting", conf=conf, tried=["hunter2-kmedic"], note="pw=hunter2-kmedic!")
    logging.getLogger("kafka.conn").warning("auth failed for hunter2-kmedic")
    try:
        raise RuntimeError("broker said: bad password hunter2-kmedic")
    except RuntimeError:
        log.exception("failed")
    out = capsys.readouterr().err
    assert "hunter2-kmedic" not in out
    assert out.count("***") >= 5
    assert '"sasl.username": "kmedic"' in out  # what is not secret stays readable


def test_short_values_are_not_registered() -> None:
    secrets.register("abc")
    assert secrets.redact("abc abcd") == "abc abcd"


def test_the_longest_secret_is_masked_first() -> None:
    secrets.register("secret-one", "secret-one-two")
    assert secrets.redact("x secret-one-two y secret-one") == f"x {secrets.MASK} y {secrets.MASK}"
