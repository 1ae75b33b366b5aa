"""The audit reader asks again while a partition leader moves, and only then: CI saw
`kmedic actions tail` end with a bare "unexpected KafkaException: FENCED_LEADER_EPOCH" while
a heal was moving the audit topic itself."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from kmedic.errors import KmedicError
from manager.audit.kafka_reader import _DebugOnly, asked_until, transient


def failing(*codes: int, then: int = 7) -> tuple[list[int], Callable[[], int]]:
    calls: list[int] = []

    def call() -> int:
        calls.append(1)
        if len(calls) <= len(codes):
            raise KafkaException(KafkaError(codes[len(calls) - 1]))
        return then

    return calls, call


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._TIMED_OUT,
        KafkaError._DESTROY_BROKER,
    ],
)
def test_a_moving_leader_is_asked_again(code: int) -> None:
    calls, call = failing(code, code)
    assert asked_until(call, "reading t", timeout_s=10) == 7
    assert len(calls) == 3


def test_any_other_error_ends_it_at_once_with_one_line() -> None:
    calls, call = failing(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(
        KmedicError,
        match=r"^reading t at b:9 failed: .*[Aa]uthoriz.*\(TOPIC_AUTHORIZATION_FAILED\)",
    ):
        asked_until(call, "reading t at b:9", timeout_s=10)
    assert len(calls) == 1


def test_a_leader_that_never_settles_ends_it_after_the_timeout() -> None:
    calls, call = failing(*[KafkaError.FENCED_LEADER_EPOCH] * 1000)
    with pytest.raises(KmedicError, match=r"reading t failed: .*[Ee]poch"):
        asked_until(call, "reading t", timeout_s=0.5)
    assert 1 < len(calls) < 1000


def test_only_kafka_errors_of_a_moving_leader_count_as_transient() -> None:
    assert transient(KafkaException(KafkaError(KafkaError.FENCED_LEADER_EPOCH)))
    assert not transient(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    assert not transient(ValueError("x"))


def test_client_log_lines_go_to_debug(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.rdkafka")
    with caplog.at_level(logging.DEBUG, logger="tests.rdkafka"):
        _DebugOnly(logger, {}).log(logging.ERROR, "FAIL [rdkafka] Connection refused")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "FAIL [rdkafka] Connection refused")
    ]
