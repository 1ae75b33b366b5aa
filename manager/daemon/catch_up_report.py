"""What the leader says about catch-ups (manager.analyzer.rejoin.catch_ups): one ``catch_up``
audit record per broker when its catch-up is first throttled, and one when the throttle is
lifted - it caught up, its grace ended (a heal takes its partitions), or the manager stops."""

from __future__ import annotations

from manager.analyzer.rejoin import CatchUps
from manager.daemon.audit_trail import AuditTrail


def rate_words(setting: int | str | None) -> str:
    """The executor's throttle setting in words."""
    if setting == "adaptive":
        return "the adaptive throttle"
    return "no throttle" if setting is None else f"{int(setting) / 1e6:.1f} MB/s"


class CatchUpReport:
    def __init__(self, trail: AuditTrail) -> None:
        self.trail = trail
        self.armed: dict[int, int] = {}  # broker -> partitions behind when its throttle was armed

    def tell(self, catch_ups: CatchUps, rate: str) -> None:
        """The brokers whose catch-up is throttled from now on, and those whose is lifted."""
        behind = catch_ups.behind()
        for broker, keys in sorted(behind.items()):
            if broker in self.armed:
                continue
            away = broker in catch_ups.away
            said = (
                f"broker {broker} is down within its grace: if it returns, its catch-up on "
                f"{len(keys)} partitions copies under {rate}, as a move's copy would (armed on "
                "their leaders now, so that its first fetch is held)"
                if away
                else f"broker {broker} is back and behind its leaders on {len(keys)} "
                f"partitions: its catch-up copies under {rate}, as a move's copy would, until "
                "in sync"
            )
            self.trail.record(
                "catch_up",
                said,
                reasons=["dead_within_grace" if away else "broker_rejoined"],
                partitions=keys,
                details={"catch_up": broker, "behind": len(keys), "away": away},
            )
            self.armed[broker] = len(keys)
        for broker in sorted(set(self.armed) - set(behind)):
            count = self.armed.pop(broker)
            why, code = (
                ("its grace ended: a heal takes its partitions", "broker_dead")
                if broker in catch_ups.down
                else (f"it caught up ({count} partitions behind when armed)", "broker_rejoined")
            )
            self.lifted(broker, why, code)

    def stopping(self) -> None:
        """A clean stop lifted every catch-up throttle."""
        for broker in sorted(self.armed):
            self.lifted(broker, "this manager stops, and no move needs it", "broker_rejoined")
        self.armed.clear()

    def lifted(self, broker: int, why: str, code: str) -> None:
        self.trail.record(
            "catch_up",
            f"broker {broker}'s catch-up throttle is lifted: {why}",
            reasons=[code],
            details={"catch_up": broker, "behind": 0},
        )

    def forget(self) -> None:
        """Leadership lost: a later leadership audits its own."""
        self.armed.clear()
