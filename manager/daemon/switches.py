"""The goal switches set at run time (``kmedic switches``, the HTTP API), as the leader sees
them, and the audit record of each change: what is switched, by whom and why."""

from __future__ import annotations

from manager.coordination.switch_store import SwitchRecord
from manager.daemon.audit_trail import AuditTrail


class SwitchTracker:
    def __init__(self) -> None:
        self._audited: dict[str, bool] | None = None  # the switches the audit log last heard of

    def follow(self, stored: SwitchRecord | None, trail: AuditTrail) -> None:
        """Audit the stored switches when they differ from those last audited (a leader that
        starts with switches set says so once)."""
        goals = dict(stored.goals) if stored is not None else {}
        if goals != (self._audited or {}) and stored is not None:
            trail.record(
                "decision",
                f"goal switches: {stored.sentence()}; unnamed goals as configured",
                reasons=[f"switch: {n} {'on' if v else 'off'}" for n, v in sorted(goals.items())],
                details={"switches": goals, "previous_switches": self._audited},
            )
        elif goals != (self._audited or {}):
            trail.record(
                "decision",
                "goal switches cleared: every goal as configured",
                details={"switches": {}, "previous_switches": self._audited},
            )
        self._audited = goals
