"""Which broker a controller request, or a request that may go to any broker, is sent to (the
pure rule).

KRaft brokers forward controller requests (ListPartitionReassignments among them) to the active
controller. A broker cut off from the controllers while its clients still reach it answers what
it holds itself (its metadata, stale: it cannot learn it was fenced) but holds every forwarded
request until it times out. kafka-python picks the broker for such a request among those its
metadata names, at random: with four brokers the manager's four reads of a cycle all went to
the cut one now and then, and the cycle was blind (a refusal) for a cluster that was healing
as it should. A hung broker (a long GC pause) swallows any request. So a broker a request
timed out on is avoided for ``AVOID_S``; the requests go to another broker registered at the
cycle's read (or known to the client), the client's own choice first.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass, field

# Longer than a broker's session timeout and a heal's grace, so that a cut broker is avoided
# until it is fenced and healed; short enough that a broker that answered slowly once (a GC
# pause) takes its share again within a minute.
AVOID_S = 60.0


@dataclass
class Forwarders:
    """The brokers a controller request timed out on lately, and the choice of the next one.
    One is shared by a manager's clients, the registration watch's thread among them: a lock
    keeps a failure told meanwhile from breaking a choice being made."""

    avoid_s: float = AVOID_S
    failed_at: dict[int, float] = field(default_factory=dict)
    # The brokers unfenced at the manager's last read of the registrations (None: not read
    # yet). A fenced broker is avoided too: one cut off the network still holds the
    # connections a client opened to it, and the request sent on one waits out its timeout.
    registered: frozenset[int] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def pick(self, registered: Collection[int], preferred: int | None, now: float) -> int | None:
        """The broker for the next controller request: ``preferred`` (the client's least loaded)
        unless it failed lately or is not registered; else the lowest registered broker that has
        not failed lately; else, every registered one having failed, the one that failed first
        (it has had the longest to recover); ``preferred`` when none is registered."""
        with self._lock:
            self.failed_at = {b: t for b, t in self.failed_at.items() if now - t < self.avoid_s}
            failed_at = dict(self.failed_at)
        if self.registered is not None:
            registered = set(registered) & self.registered
        fine = sorted(set(registered) - set(failed_at))
        if preferred is not None and preferred in fine:
            return preferred
        if fine:
            return fine[0]
        failed = [b for b in registered if b in failed_at]
        return min(failed, key=lambda b: (failed_at[b], b)) if failed else preferred

    def avoids(self, broker: int, now: float) -> bool:
        """Whether a request of ``broker`` failed within ``avoid_s`` of ``now``, or the
        registrations last read had it fenced."""
        if self.registered is not None and broker not in self.registered:
            return True
        failed_at = self.failed_at.get(broker)
        return failed_at is not None and now - failed_at < self.avoid_s

    def failed(self, broker: int | None, now: float) -> None:
        """A controller request sent to ``broker`` failed at ``now``."""
        if broker is not None:
            with self._lock:
                self.failed_at[broker] = now
