"""The agent's publisher survives a failed producer: a fatal error replaces the producer, a
refused record is dropped and counted, and the agent goes on (a scripted producer stands in
for librdkafka's rare fatal idempotence errors, which a test cannot provoke on demand)."""

from __future__ import annotations

from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException

from agent.config import AgentConfig
from agent.publisher import Publisher
from kmedic import brokerstats as bs
from streaming import synthetic

CONFIG = AgentConfig(broker_id=1, bootstrap="127.0.0.1:1", exporter_url="http://127.0.0.1:1/")
RECORD: bs.BrokerStats = synthetic.broker_stats(
    synthetic.Layout(brokers=2, topics=1, partitions=2, replication_factor=2), 1, 1_700_000_000_000
)


class ScriptedProducer:
    """Raises the scripted errors from produce(), in order, then accepts."""

    made: ClassVar[list[ScriptedProducer]] = []

    def __init__(self, settings: dict[str, Any], errors: list[BaseException]) -> None:
        self.settings = settings
        self.errors = errors
        self.queued: list[bytes] = []
        self.purged = False
        self.poll_errors: list[BaseException] = []
        ScriptedProducer.made.append(self)

    def produce(self, topic: str, value: bytes, key: bytes, on_delivery: Any) -> None:
        if self.errors:
            raise self.errors.pop(0)
        self.queued.append(value)

    def poll(self, timeout: float) -> int:
        if self.poll_errors:
            raise self.poll_errors.pop(0)
        return 0

    def flush(self, timeout: float) -> int:
        return 0

    def purge(self) -> None:
        self.purged = True

    def __len__(self) -> int:
        return len(self.queued)


def fatal() -> KafkaException:
    return KafkaException(
        KafkaError(KafkaError._INCONSISTENT, "unable to guarantee order", fatal=True)
    )


def publisher(*scripts: list[BaseException]) -> tuple[Publisher, list[str | None]]:
    ScriptedProducer.made = []
    pending = list(scripts)
    errors: list[str | None] = []
    pub = Publisher(
        CONFIG,
        on_delivery=lambda _latency, error: errors.append(error),
        producer_factory=lambda settings: ScriptedProducer(
            settings, pending.pop(0) if pending else []
        ),
    )
    return pub, errors


def test_a_fatal_error_from_produce_replaces_the_producer_and_the_record_goes_out() -> None:
    pub, errors = publisher([fatal()], [])
    assert pub.publish(RECORD)
    first, second = ScriptedProducer.made
    assert first.purged and pub.replaced == 1
    assert second.queued == [bs.to_json(RECORD)]
    assert errors == []


def test_a_fatal_error_reported_by_the_error_callback_replaces_before_the_next_record() -> None:
    pub, errors = publisher([], [])
    first = ScriptedProducer.made[0]
    first.queued.append(b"in flight")
    first.settings["error_cb"](KafkaError(KafkaError._FATAL, "fenced", fatal=True))
    assert pub.publish(RECORD)
    assert pub.replaced == 1 and len(ScriptedProducer.made) == 2
    assert errors == [
        "lost with a failed producer: " + str(KafkaError(KafkaError._FATAL, "fenced", fatal=True))
    ]


def test_a_non_fatal_refusal_drops_the_record_and_keeps_the_producer() -> None:
    too_big = KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large"))
    pub, errors = publisher([too_big])
    assert not pub.publish(RECORD)
    assert pub.replaced == 0 and len(ScriptedProducer.made) == 1
    assert errors and "refused" in (errors[0] or "")
    assert pub.publish(RECORD), "the next record goes out"


def test_a_producer_that_fails_again_right_after_replacement_drops_only_that_record() -> None:
    pub, errors = publisher([fatal()], [fatal()], [])
    assert not pub.publish(RECORD)
    assert errors and "refused" in (errors[-1] or "")
    assert pub.publish(RECORD)


def test_a_fatal_error_raised_by_poll_replaces_the_producer_at_once() -> None:
    pub, _ = publisher([], [])
    first = ScriptedProducer.made[0]
    first.poll_errors.append(fatal())
    pub.poll(0.25)  # raised inside: the agent's loop never sees it
    assert pub.replaced == 1 and len(ScriptedProducer.made) == 2
    first.poll_errors.append(KafkaException(KafkaError(KafkaError._TRANSPORT, "blip")))
    pub.poll(0)  # the old producer is gone; the new one serves
    assert pub.publish(RECORD)
