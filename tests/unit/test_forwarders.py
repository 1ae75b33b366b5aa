"""Which broker a controller request goes to (kmedic.forwarders), without a cluster."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmedic.forwarders import AVOID_S, Forwarders


def test_the_clients_choice_stands_while_it_has_not_failed() -> None:
    assert Forwarders().pick({1, 2, 3, 4}, 3, now=0.0) == 3


def test_a_broker_a_request_timed_out_on_is_avoided_until_its_time_is_up() -> None:
    forwarders = Forwarders()
    forwarders.failed(3, now=10.0)
    # The client picks the cut broker again (its metadata names it, at random): another goes.
    assert forwarders.pick({1, 2, 3, 4}, 3, now=11.0) == 1
    assert forwarders.pick({1, 2, 3, 4}, 3, now=10.0 + AVOID_S - 0.1) == 1
    assert forwarders.pick({1, 2, 3, 4}, 3, now=10.0 + AVOID_S) == 3


def test_a_choice_outside_the_registered_brokers_is_replaced() -> None:
    # A broker the client still knows but the cycle's read did not find registered (fenced).
    assert Forwarders().pick({1, 2}, 4, now=0.0) == 1


def test_when_every_registered_broker_failed_the_one_that_failed_first_goes() -> None:
    forwarders = Forwarders()
    forwarders.failed(2, now=5.0)
    forwarders.failed(1, now=6.0)
    assert forwarders.pick({1, 2}, 1, now=7.0) == 2


def test_with_no_registered_broker_the_clients_choice_stands() -> None:
    assert Forwarders().pick(set(), 4, now=0.0) == 4
    assert Forwarders().pick(set(), None, now=0.0) is None


@given(
    registered=st.sets(st.integers(0, 9), min_size=1),
    failures=st.dictionaries(st.integers(0, 9), st.floats(0, 200)),
    preferred=st.none() | st.integers(0, 9),
    now=st.floats(0, 300),
)
def test_the_choice_is_registered_and_avoids_recent_failures_while_another_broker_has_none(
    registered: set[int], failures: dict[int, float], preferred: int | None, now: float
) -> None:
    forwarders = Forwarders()
    for broker, at in failures.items():
        forwarders.failed(broker, min(at, now))
    recent = {b for b, at in failures.items() if now - min(at, now) < AVOID_S}
    chosen = forwarders.pick(registered, preferred, now)
    assert chosen in registered
    if registered - recent:
        assert chosen not in recent


def test_a_broker_is_avoided_for_avoid_s_after_a_failure() -> None:
    rule = Forwarders(avoid_s=60.0)
    assert not rule.avoids(3, 0.0)
    rule.failed(3, 10.0)
    assert rule.avoids(3, 10.0) and rule.avoids(3, 69.9)
    assert not rule.avoids(3, 70.0) and not rule.avoids(2, 10.0)


# -- steer_requests over a fake kafka-python connection manager -------------------------------


class _Node:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id


class _Metadata:
    def brokers(self) -> list[_Node]:
        return [_Node(b) for b in (4, 3, 2, 1)]


class _Conn:
    connected = True


class _Future:
    def __init__(self) -> None:
        self.errbacks: list[Any] = []

    def add_errback(self, f: Any) -> None:
        self.errbacks.append(f)

    def fail(self, exc: BaseException) -> None:
        for f in self.errbacks:
            f(exc)


class _Manager:
    """kafka-python's choice is broker 3; broker 1 is in its reconnect backoff (dead); the
    client holds a connection to broker 4."""

    def __init__(self) -> None:
        self.cluster = _Metadata()
        self._conns: dict[int, Any] = {4: _Conn()}
        self.sent: list[Any] = []

    def least_loaded_node(self) -> int:
        return 3

    def connection_delay(self, node_id: int) -> float:
        return 0.8 if node_id == 1 else 0.0

    def send(self, request: Any, node_id: Any = None, request_timeout_ms: Any = None) -> Any:
        self.sent.append(node_id)
        future = _Future()
        self.last = future
        return future


class _Client:
    def __init__(self) -> None:
        self._manager = _Manager()


def test_steered_requests_leave_a_broker_that_made_one_wait_for_a_connected_one() -> None:
    from kmedic.kafka_admin import steer_requests

    now = [0.0]
    rule, client = Forwarders(), _Client()
    steer_requests(client, rule, clock=lambda: now[0])
    manager = client._manager
    manager.send("metadata")
    assert manager.sent == [3]  # kafka-python's own choice while nothing failed
    now[0] = 0.2
    manager.last.fail(ConnectionRefusedError())  # fast: kafka-python's backoff handles it
    manager.send("metadata")
    assert manager.sent[-1] == 3
    now[0] = 4.2
    manager.last.fail(TimeoutError())  # after 4 s: the broker made it wait
    manager.send("metadata")
    assert manager.sent[-1] == 4  # the broker it is connected to
    manager._conns.clear()
    manager.send("metadata")
    assert manager.sent[-1] == 2  # not 1: in its reconnect backoff (dead)
    manager.send("describe log dirs", node_id=3)
    assert manager.sent[-1] == 3  # a request naming its broker goes there
    now[0] = 70.0
    manager.send("metadata")
    assert manager.sent[-1] == 3  # avoided no more


def test_a_broker_the_registration_watch_waited_on_is_avoided_by_the_executors_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by bench_oracle's host cut off the network: the registration watch's read timed
    out on the cut broker at once (its 1.5 s), but the executor's client knew nothing of it
    and sent its next read of the throttle configs there - the cycle held 30 s (the
    executor's request timeout), the lost host's heal with it. One memory for every client
    of a manager (the sources' ``avoided``, handed to the executor's calls by the wiring)."""
    import kmedic.kafka_admin as kafka_admin
    import manager.executor.admin_calls as admin_calls
    import manager.monitor.sources as sources_module
    from manager.config import load_manager_config
    from manager.daemon import wiring

    monkeypatch.setattr(kafka_admin, "WAITED_S", 0.0)  # any failure made it wait
    watch, executor = _Client(), _Client()

    def describe_cluster() -> Any:
        watch._manager.send("describe cluster")  # kafka-python's choice: broker 3
        watch._manager.last.fail(TimeoutError())
        raise TimeoutError("timed out after 1499 ms")

    watch.describe_cluster = describe_cluster  # type: ignore[attr-defined]
    monkeypatch.setattr(sources_module, "connect_admin", lambda *a, **k: watch)
    monkeypatch.setattr(admin_calls, "connect_admin", lambda *a, **k: executor)
    config = Path(__file__).parents[2] / "configs" / "manager.example.yaml"
    cfg = load_manager_config(config).model_copy(update={"feed_process": False})
    sources = wiring.sources_for(cfg)
    calls = wiring.executor_calls(cfg, "m1", sources, SimpleNamespace(may_act=lambda: True))
    with pytest.raises(TimeoutError):
        sources._read_registered()
    assert watch._manager.sent == [3]
    calls.client._manager.send("describe configs")
    assert executor._manager.sent == [4]  # not 3, which the watch waited on
