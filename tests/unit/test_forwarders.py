"""Which broker a controller request goes to (kmedic.forwarders), without a cluster."""

from __future__ import annotations

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
