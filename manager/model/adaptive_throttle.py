"""The adaptive replication throttle's arithmetic (pure): how fast kmedic may copy through one
broker, from that broker's own traffic and its network capacity.

The rule is kafka-kit's autothrottle, per broker and per direction (a leader sends the copies,
a new replica receives them):

    rate = (capacity - max(used - previous, 0) - max(used - capacity, 0)) * ratio

``used`` is the broker's measured traffic in that direction, ``previous`` the rate kmedic set
last (its copies are part of ``used``, so ``used - previous`` is everyone else's traffic), and
the second term gives back what the broker is over its capacity. The result is kept between a
``floor`` (a heal always moves) and the capacity (the floor yields to a smaller capacity), and
a new rate replaces the one set only when it differs by more than ``threshold`` of it (no
config churn on noise). Partitions whose writes already fail (under ``min.insync.replicas``)
are copied at no less than ``urgent_floor``: availability before politeness.

Not wired into the executor yet (issue 27, item 1): the executor still applies one fixed rate.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Headroom:
    """The adaptive rule's settings (docs/executor.md)."""

    ratio: float = 0.9
    floor_bytes_per_s: int = 10_000_000
    urgent_floor_bytes_per_s: int = 50_000_000
    threshold: float = 0.1


def headroom_rate(
    capacity: float, used: float | None, previous: float | None, rule: Headroom, *, urgent: bool
) -> int:
    """The rate for one broker and direction; the floor when its traffic is unknown (an agent
    that stopped reporting: polite until it is measured again)."""
    floor = rule.urgent_floor_bytes_per_s if urgent else rule.floor_bytes_per_s
    if used is None:
        rate = float(floor)
    else:
        others = max(used - (previous or 0.0), 0.0)
        over = max(used - capacity, 0.0)
        rate = max((capacity - others - over) * rule.ratio, float(floor))
    return int(min(rate, capacity))


def worth_changing(current: int | None, proposed: int, threshold: float) -> bool:
    """Whether a new rate replaces the one set: always when none is set, else only past the
    threshold (a fraction of the rate set)."""
    return current is None or abs(proposed - current) > threshold * current
