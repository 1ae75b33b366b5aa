"""The leader's lease (manager.coordination.lease): pure arithmetic on the times the
coordinator feeds it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from manager.coordination.lease import LEASE_SHARE, Lease

times = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(
    timeout=st.floats(min_value=0.5, max_value=600),
    sends=st.lists(times, min_size=1, max_size=20),
    now=times,
)
def test_the_lease_never_outlasts_half_a_session_from_the_newest_answered_send(
    timeout: float, sends: list[float], now: float
) -> None:
    lease = Lease(timeout)
    for sent in sends:  # answers may come back out of order: the newest send counts
        lease.renew(sent)
    newest = max(sends)
    assert lease.left(now) == max(0.0, newest + timeout * LEASE_SHARE - now)
    # ZooKeeper keeps the session at least `timeout` past the newest send: the lease ends at
    # least half a timeout before that, the room a write started at its last moment has.
    left = lease.left(now)
    if left > 0:
        assert now + left <= newest + timeout / 2 + 1e-6 * max(1.0, newest)


def test_an_ended_lease_is_gone_until_renewed() -> None:
    lease = Lease(10.0)
    lease.renew(100.0)
    assert lease.left(101.0) == 4.0
    lease.end()
    assert lease.left(101.0) == 0.0
    lease.renew(102.0)
    assert lease.left(103.0) == 4.0
