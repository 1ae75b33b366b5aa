"""When a move's new replicas are about to join the ISR (pure).

A new replica caught up with its leader joins the ISR in two steps: the leader counts it at
once for the high watermark (KIP-497's maximal ISR), but treats it as in sync for its
replication throttle only once the controller has committed the change. In between, a broker
whose throttle quota is spent sends the replica nothing of that partition, and the partition's
acks=all writes wait for the quota's window (up to a second). So the throttles of a move come
off just before its new replicas join, not after: when, closing on the leader's log as fast as
they did since the last sample, they would hold all of it within ``horizon_s`` (the next
sample may come too late). What is left to copy then is at most that horizon's worth of the
throttled rate, copied at Kafka's replica fetch size a round.

The figures are the watchdog's samples (DescribeLogDirs): the bytes the leader holds of the
partition, and each new replica.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Behind:
    """How far a move's new replicas are behind the leader's log at one sample."""

    bytes: int  # the most any new replica lacks of the leader's log (<= 0: none)
    at_s: float  # when it was sampled (the executor's clock)


def behind(leader: int | None, adding: Mapping[int, int | None], at_s: float) -> Behind | None:
    """The move's distance to its leader's log from one sample: the leader's bytes and each
    new replica's; None when a figure is missing (a broker did not answer)."""
    if leader is None or not adding or any(n is None for n in adding.values()):
        return None
    return Behind(max(leader - n for n in adding.values() if n is not None), at_s)


def joins_within(previous: Behind | None, now: Behind, horizon_s: float) -> bool:
    """Whether the new replicas hold the leader's whole log within ``horizon_s`` of ``now``,
    closing on it as fast as since ``previous``: at once when they lack nothing; never when
    they did not close in (a leader written faster than the copy, or one sample only)."""
    if now.bytes <= 0:
        return True
    if previous is None or now.at_s <= previous.at_s:
        return False
    closing = (previous.bytes - now.bytes) / (now.at_s - previous.at_s)
    return closing > 0 and now.bytes <= closing * horizon_s
