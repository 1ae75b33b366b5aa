"""A leading manager cut off ZooKeeper alone, while it still reaches Kafka: the split-brain case
fencing exists for (PIP-57). Each manager reaches ZooKeeper through a relay of its own
(composition.tcp_proxy); the cut blocks the leader's relay for ``hold_s`` (two to three of its
sessions), waits for the other manager to lead, and heals the relay. Two kinds: a
``leader_cut`` resets its connections (the manager learns at once), a ``leader_drop``
silently drops everything (nothing tells the manager; its session expires on ZooKeeper's
clock). What the cut instance writes meanwhile is judged at the end, by its audit records
(``invariants.quiet_when_cut``) and by the brokers' request logs
(``invariants.lease_as_the_brokers_saw``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from composition.tcp_proxy import TcpProxy
from manager.coordination.lease import LEASE_SHARE

# A cycle begun just before the cut may still write what it had decided: its records reach
# Kafka within this long of the cut, and nothing of it may start a move.
IN_FLIGHT_MS = 1000


@dataclass(frozen=True)
class Cut:
    """Manager ``instance`` could not reach ZooKeeper from ``start_ms`` to ``end_ms``; its
    lease could last no longer than ``lease_end_ms`` (half its session past the last answer
    it could have had: manager.coordination.lease)."""

    instance: str
    start_ms: int
    end_ms: int
    lease_end_ms: int
    kind: str = "a reset"  # or "a silent drop", "a session loss"


def lease_end(start_ms: int, session_s: float) -> int:
    """The latest a lease can last, for a manager that heard nothing from ZooKeeper after
    ``start_ms``."""
    return start_ms + int(session_s * LEASE_SHARE * 1000)


def cut_leader(
    leader: str,
    proxies: dict[str, TcpProxy],
    hold_s: float,
    leads: Callable[[], str | None],
    say: Callable[[str], None],
    *,
    session_s: float,
    silent: bool = False,
) -> Cut:
    """Cut ``leader`` off ZooKeeper for ``hold_s``; the cut, with its times."""
    start_ms = int(time.time() * 1000)
    relay = proxies[leader]
    relay.freeze() if silent else relay.block()
    how = "its packets silently dropped" if silent else "its connections reset"
    say(f"leading manager {leader} cut off ZooKeeper, {how} (it still reaches Kafka)")
    deadline = time.monotonic() + hold_s
    taken_by = None
    try:
        while time.monotonic() < deadline:
            now = leads()
            if now is not None and now != leader and taken_by is None:
                taken_by = now
                say(f"{now} leads while {leader} is cut off")
            time.sleep(0.5)
    finally:
        relay.thaw() if silent else relay.unblock()
        end_ms = int(time.time() * 1000)
    say(
        f"{leader}'s link to ZooKeeper back after {hold_s:.0f} s"
        + ("" if taken_by else "; no other manager took over meanwhile")
    )
    kind = "a silent drop" if silent else "a reset"
    return Cut(leader, start_ms, end_ms, lease_end(start_ms, session_s), kind)
