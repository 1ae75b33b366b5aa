"""A ZooKeeper outage as the daemon remembers it: nothing may be done while it lasts (no
instance can prove it leads), and the instance that leads after it writes down how long it
lasted and what waited. Standbys saw the same outage; only that leader records it."""

from __future__ import annotations

from datetime import UTC, datetime

from manager.daemon.audit_trail import AuditTrail
from manager.daemon.outcome import CycleOutcome
from manager.model.reasons import ReasonCode

ZK_OUTAGE: ReasonCode = "coordination_unreachable"


class ZkOutage:
    def __init__(self) -> None:
        self._seen: tuple[float, int] | None = None  # since (wall clock), blind cycles

    def blind_cycle(self, now_s: float) -> CycleOutcome:
        """A cycle that could not reach ZooKeeper: counted, and what it amounts to."""
        since, cycles = self._seen or (now_s, 0)
        self._seen = (since, cycles + 1)
        return CycleOutcome(
            "blind", "blind: ZooKeeper is unreachable, so leadership cannot be proven"
        )

    def forget(self) -> None:
        """A standby: the leader tells it."""
        self._seen = None

    def audit_if_over(self, trail: AuditTrail, now_s: float, dead_brokers: int) -> None:
        """The leader's first cycle after an outage: the refusal it amounted to, audited."""
        if self._seen is None:
            return
        since, cycles = self._seen
        self._seen = None
        trail.record(
            "decision",
            f"refuse: nothing was done for {now_s - since:.0f}s ({cycles} cycles) while "
            "ZooKeeper was unreachable: no instance could prove it leads"
            + (f"; {dead_brokers} dead brokers waited" if dead_brokers else ""),
            reasons=[f"{ZK_OUTAGE}: from {_iso(since)} to {_iso(now_s)}, {cycles} cycles"],
            details={"from_ms": int(since * 1000), "to_ms": int(now_s * 1000), "cycles": cycles},
        )


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
