"""The stream job's wait for Kafka at start (streaming.topics.ensure_output_topics_when_up):
attempts go on while Kafka is unreachable, the wait doubling up to its cap, one line each; a
stop ends the wait; any other error ends the job at once. The real process:
tests/integration/test_stream_kafka_down.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kmedic.errors import KmedicError
from streaming import topics
from streaming.config import StreamConfig


class Sleeper:
    """Stands in for ``stop.wait``: records each wait, sets ``stop`` after ``stop_after``."""

    def __init__(self, stop: threading.Event, stop_after: int | None = None) -> None:
        self.stop, self.stop_after, self.waits = stop, stop_after, []

    def __call__(self, stop: threading.Event, seconds: float) -> None:
        self.waits.append(seconds)
        if self.stop_after is not None and len(self.waits) >= self.stop_after:
            self.stop.set()


def _failing(times: int, then: Any = ("made",)) -> Any:
    calls = {"n": 0}

    def ensure(cfg: StreamConfig, reach_timeout_s: float) -> list[str]:
        calls["n"] += 1
        assert reach_timeout_s == topics.PROBE_TIMEOUT_S
        if calls["n"] <= times:
            raise topics.KafkaUnreachable("cannot reach Kafka at 127.0.0.1:1")
        if isinstance(then, Exception):
            raise then
        return list(then)

    return ensure


@pytest.fixture
def cfg() -> StreamConfig:
    return StreamConfig(bootstrap="127.0.0.1:1")


def test_it_waits_doubling_up_to_the_cap_until_kafka_answers(
    cfg: StreamConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()
    sleeper = Sleeper(stop)
    monkeypatch.setattr(topics, "_pause", sleeper)
    monkeypatch.setattr(topics, "ensure_output_topics", _failing(7))
    assert topics.ensure_output_topics_when_up(cfg, stop) == ["made"]
    assert sleeper.waits == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_a_stop_ends_the_wait(cfg: StreamConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    sleeper = Sleeper(stop, stop_after=2)
    monkeypatch.setattr(topics, "_pause", sleeper)
    monkeypatch.setattr(topics, "ensure_output_topics", _failing(100))
    assert topics.ensure_output_topics_when_up(cfg, stop) == []
    assert len(sleeper.waits) == 2


def test_any_other_error_ends_the_job_at_once(
    cfg: StreamConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()
    sleeper = Sleeper(stop)
    monkeypatch.setattr(topics, "_pause", sleeper)
    refused = KmedicError("cannot create kmedic.replica-loads: TOPIC_AUTHORIZATION_FAILED")
    monkeypatch.setattr(topics, "ensure_output_topics", _failing(1, refused))
    with pytest.raises(KmedicError, match="TOPIC_AUTHORIZATION_FAILED"):
        topics.ensure_output_topics_when_up(cfg, stop)
    assert sleeper.waits == [2.0]
