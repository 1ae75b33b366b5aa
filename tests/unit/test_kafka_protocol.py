"""The Kafka requests kmedic declares itself (kmedic/kafka_protocol): UnregisterBroker."""

from __future__ import annotations

from kmedic.kafka_protocol import UnregisterBrokerRequest, refusal


def test_the_request_carries_the_broker_id_at_version_zero() -> None:
    request = UnregisterBrokerRequest(broker_id=7)
    assert request.broker_id == 7
    assert UnregisterBrokerRequest.max_version == 0


def test_unregistered_now_or_already_is_no_refusal() -> None:
    assert refusal(4, 0, None) is None
    # BROKER_ID_NOT_REGISTERED: a leader asking again after its "done" write failed.
    assert refusal(4, 102, "Broker ID 4 is not currently registered") is None
    assert refusal(4, 31, "Cluster authorization failed.") == (
        "Kafka refused to unregister broker 4: Cluster authorization failed. (31)"
    )
