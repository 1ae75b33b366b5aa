"""The executor's Admin calls without a cluster: retried on the same client first, then on a
fresh one; a reconnect that fails leaves no closed client behind for the next call."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError

from kmedic.errors import KmedicError
from manager.executor import admin_calls as module
from manager.executor.admin_calls import AdminCalls


class FakeBroker:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id


class FakeMetadata:
    def brokers(self) -> list[FakeBroker]:
        return [FakeBroker(b) for b in (1, 2, 3)]


class FakeManager:
    """kafka-python's connection manager: the broker with the fewest requests waiting among
    those connected (broker 3, the hung one, is in its reconnect backoff), unless ``pick``
    says otherwise (a broker cut off from the controllers, which kafka-python may pick)."""

    def __init__(self, pick: int = 1) -> None:
        self.pick = pick
        self.cluster = FakeMetadata()
        self._conns: dict[int, Any] = {}  # no connection open: every broker is a fresh pick

    def least_loaded_node(self) -> int:
        return self.pick

    def connection_delay(self, node_id: int) -> float:
        return 0.0  # no broker in its reconnect backoff


class FakeClient:
    def __init__(self, name: str, works: bool) -> None:
        self.name = name
        self.works = works
        self.closed = False
        self._controller_id: int | None = 3  # the cached "controller": the hung broker
        self._manager = FakeManager()
        self.calls = 0

    def ask(self) -> str:
        if self.closed:
            raise RuntimeError("NetworkSelector closed!")  # what kafka-python raises then
        self.calls += 1
        if not self.works:
            raise KafkaTimeoutError("hung broker")
        return self.name

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each connect does, in order: a FakeClient, or an error to raise."""
    plan: list[Any] = []

    def connect(*_: Any, **__: Any) -> FakeClient:
        step = plan.pop(0)
        if isinstance(step, Exception):
            raise step
        assert isinstance(step, FakeClient)
        return step

    monkeypatch.setattr(module, "connect_admin", connect)
    monkeypatch.setattr(module.time, "sleep", lambda _: None)
    return plan


def test_a_failed_call_is_retried_on_the_same_client_then_on_a_fresh_one(
    connects: list[Any],
) -> None:
    first, second = FakeClient("first", works=False), FakeClient("second", works=True)
    connects += [first, second]
    calls = AdminCalls("unused:9092", request_timeout_s=1, retry_s=60)
    assert calls(lambda c: c.ask(), "ask") == "second"
    # The retry's controller requests went to a broker that answers, not to the hung one
    # again (asked anew, KRaft names a random broker: CI saw the hung one twice running).
    assert first.calls == 2 and first._controller_id == 1 and first.closed


def test_a_retry_does_not_go_back_to_a_broker_a_call_just_timed_out_on(
    connects: list[Any],
) -> None:
    first, second = FakeClient("first", works=False), FakeClient("second", works=True)
    first._manager.pick = 3  # kafka-python's pick: the broker cut off from the controllers
    connects += [first, second]
    calls = AdminCalls("unused:9092", request_timeout_s=1, retry_s=60)
    assert calls(lambda c: c.ask(), "ask") == "second"
    # The call timed out with broker 3 as its controller: the retry went to broker 1.
    assert first.calls == 2 and first._controller_id == 1


def test_a_reconnect_that_fails_leaves_no_closed_client_for_the_next_call(
    connects: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = FakeClient("first", works=False)
    later = FakeClient("later", works=True)
    connects += [first, KmedicError("cannot reach the cluster"), later]
    # The clock moves with the pauses between retries (1 s, then 2 s): the deadline passes
    # just as the reconnect fails.
    clock = [0.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(module.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    calls = AdminCalls("unused:9092", request_timeout_s=1, retry_s=2.5)
    with pytest.raises(KmedicError, match="cannot ask: KmedicError"):
        calls(lambda c: c.ask(), "ask")
    assert first.closed
    # The next call connects anew; it used to get the closed client, and kafka-python's
    # "NetworkSelector closed!" failed every cycle after.
    assert calls(lambda c: c.ask(), "ask") == "later"


def test_a_refused_connection_is_retried_at_once_on_another_broker() -> None:
    """The first call after a broker dies often picks it and is refused; that broker is in its
    reconnect backoff at once, so the retry goes to another straight away (a heal's first
    step waited a whole second before). Anything else, or a second failure, waits."""
    refused = KafkaConnectionError("111 ECONNREFUSED")
    assert module.retry_pause(1, refused) == 0.0
    assert module.retry_pause(1, NodeNotReadyError(6)) == 0.0
    assert module.retry_pause(2, refused) == 2.0
    assert module.retry_pause(1, KafkaTimeoutError("hung broker")) == 1.0
    assert module.retry_pause(5, KafkaTimeoutError("hung broker")) == 3.0


def test_the_call_retries_a_refused_connection_without_waiting(
    connects: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(module.time, "sleep", pauses.append)
    client = FakeClient("only", works=True)
    connects.append(client)
    refusals = [KafkaConnectionError("111 ECONNREFUSED")]

    def ask(c: FakeClient) -> str:
        if refusals:
            raise refusals.pop()
        return c.ask()

    calls = AdminCalls("unused:9092", request_timeout_s=1, retry_s=60)
    assert calls(ask, "describe topics") == "only"
    assert pauses == [0.0]


def test_a_call_is_not_retried_once_the_instance_may_no_longer_act(
    connects: list[Any],
) -> None:
    """A leader whose lease ended mid-call: its retry would reach Kafka past the lease (a
    reassignment sent again after a broker's death, to another broker)."""
    first = FakeClient("first", works=False)
    connects += [first, FakeClient("second", works=True)]
    leading = iter([True, False])
    calls = AdminCalls(
        "unused:9092", request_timeout_s=1, retry_s=60, may_call=lambda: next(leading)
    )
    with pytest.raises(KmedicError, match=r"this instance may no longer act \(its lease ended\)"):
        calls(lambda c: c.ask(), "ask")
    assert first.calls == 1
    # Nor is a call sent once it has ended, retried or not.
    once = AdminCalls("unused:9092", request_timeout_s=1, retry_s=60, may_call=lambda: False)
    with pytest.raises(KmedicError, match=r"cannot ask: this instance may no longer act"):
        once.once(lambda c: c.ask(), "ask")


def test_a_controller_request_leaves_a_broker_the_controller_has_fenced(
    connects: list[Any],
) -> None:
    """Found by bench_oracle's host cut off the network, at the shipped 30 s cycle: the
    executor's client had the cut broker as its "controller" (KRaft names a random one), and
    the heal's first reassignment listing waited there for the whole 30 s request timeout
    after the registrations had shown it fenced; the first move came 32-36 s after the
    fencing against a 10 s bound."""
    from kmedic.forwarders import Forwarders

    avoided = Forwarders(registered=frozenset({1, 2}))  # broker 3 fenced
    client = FakeClient("client", works=True)
    connects.append(client)
    calls = AdminCalls("unused:9092", request_timeout_s=1, retry_s=60, avoided=avoided)
    assert calls(lambda c: c.ask(), "ask") == "client"
    assert client.calls == 1 and client._controller_id == 1
    avoided.registered = frozenset({1, 2, 3})  # back: a controller request may go there again
    client._controller_id = 3
    assert calls(lambda c: c.ask(), "ask") == "client"
    assert client._controller_id == 3
