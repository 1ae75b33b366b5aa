"""Kafka requests kafka-python has no class for, declared from Kafka's published protocol
(the message definitions beside this file, in the format kafka-python loads its own from):

- ``UnregisterBroker`` (API key 64, KIP-631/KIP-1073): remove a stopped broker's registration,
  so it no longer appears as a fenced broker. A KRaft broker forwards it to the controller.

``unregister_broker`` sends it on an open KafkaAdminClient."""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage


class UnregisterBrokerRequest(ApiMessage, load_json=__name__):  # type: ignore[misc,call-arg]
    pass


class UnregisterBrokerResponse(ApiMessage, load_json=__name__):  # type: ignore[misc,call-arg]
    pass


BROKER_ID_NOT_REGISTERED = 102


def refusal(broker_id: int, code: int, message: str | None) -> str | None:
    """Why Kafka refused to unregister ``broker_id``; None when it is unregistered, now or
    already (a leader whose write of the request's end failed asks again next cycle)."""
    if code in (0, BROKER_ID_NOT_REGISTERED):
        return None
    return f"Kafka refused to unregister broker {broker_id}: {message or 'no message'} ({code})"


def unregister_broker(admin: Any, broker_id: int) -> tuple[int, str | None]:
    """(Kafka's error code, its message) for unregistering ``broker_id``; 0 is success."""

    async def send() -> Any:
        return await admin._manager.send(UnregisterBrokerRequest(broker_id=broker_id))

    response = admin._manager.run(send)
    return int(response.error_code), response.error_message or None
