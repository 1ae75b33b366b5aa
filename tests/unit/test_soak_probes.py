"""The soak's probes survive brokers coming and going: whatever the client library raises on
the way, a probe that gets no answer says so as a ``KmedicError``, which the soak's waits
treat as "not yet" (a SIGKILLed broker, not yet fenced, once ended a 15-minute soak with
kafka-python's ``KafkaConnectionError`` from ``reassigning``)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from composition.soak import probes
from kmedic.errors import KmedicError


def test_a_refused_connection_is_a_kmedic_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def dying_broker(**_: Any) -> None:  # what kafka-python raised in the soak
        raise KafkaConnectionError("111 ECONNREFUSED")

    monkeypatch.setattr(probes, "KafkaAdminClient", dying_broker)
    with pytest.raises(KmedicError, match=r"127\.0\.0\.1:9 did not answer in 2 tries: .*111"):
        probes.reassigning("127.0.0.1:9", tries=2)


def test_a_wait_goes_on_through_a_probe_that_got_no_answer() -> None:
    answers = iter([KmedicError("no answer"), True])

    def check() -> bool:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert probes.wait(check, 5, "an answer", interval_s=0.01) is True
