"""How long this instance may still act as leader, counted from what ZooKeeper last answered
(pure: the coordinator feeds it the times).

ZooKeeper expires a session when it has heard nothing from the client for the session
timeout. A request the server answered was heard no earlier than it was sent, so the session
lives at least until *sent + timeout*. A leader whose packets are silently dropped (a switch, a
firewall) is not told: kazoo notices only when its read times out (two thirds of the timeout
after the last answer), and a write it started just before that (an audit record retried
after a broker's death, a reassignment) reached Kafka after the session had expired and the
standby had taken over. So every write kmedic makes as leader asks the lease, and bounds its
wait by what the lease has left: half the session timeout from the last answered request's
send time, renewed by the coordinator's check twice a second or more, leaves the other half
for a write started at the lease's last moment to arrive.

The timeout counted is the one kmedic asked for. ZooKeeper grants between 2 and 20 tick
times (4-40 s at its default tick of 2 s); a request above that range is shortened by the
server, which this lease would not know: keep ``session_timeout_s`` within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LEASE_SHARE = 0.5  # of the session timeout, counted from the last answered request's send


@dataclass
class Lease:
    """The monotonic time until which the session is known alive with room to spare."""

    session_timeout_s: float
    until: float = -math.inf

    def renew(self, sent_at: float) -> None:
        """ZooKeeper answered a request sent at ``sent_at`` (monotonic): the session lives
        at least ``session_timeout_s`` past it. Never moves the lease back."""
        self.until = max(self.until, sent_at + self.session_timeout_s * LEASE_SHARE)

    def end(self) -> None:
        """Leadership given up or lost: no lease until the next acquisition renews it."""
        self.until = -math.inf

    def left(self, now: float) -> float:
        """Seconds of the lease left at ``now`` (0 once it has run out)."""
        return max(0.0, self.until - now)
