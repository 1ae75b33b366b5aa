"""Which mode the leader runs in this cycle - ``act``, or ``observe``: decide, audit
``would_act`` with the full plan, alert as usual, write nothing to the cluster - and the
audit record of each change it sees. The ZooKeeper mode (``kmedic mode``) wins over the
config's; a leader that starts in observe mode says so once."""

from __future__ import annotations

from manager.coordination.mode_store import Mode, ModeRecord
from manager.daemon.audit_trail import AuditTrail


class ModeTracker:
    def __init__(self, configured: Mode) -> None:
        self.configured = configured
        self.current: Mode = configured
        self._audited: Mode | None = None  # the mode the audit log last heard of

    def follow(self, stored: ModeRecord | None, trail: AuditTrail) -> Mode:
        """The mode for this cycle (the leader's), audited when it changes."""
        mode = stored.mode if stored is not None else self.configured
        source = f"set by `kmedic mode`: {stored.sentence()}" if stored else "from the config"
        if mode != self._audited and (self._audited is not None or mode == "observe"):
            was = f"{self._audited} -> " if self._audited is not None else ""
            what = "nothing is written to the cluster" if mode == "observe" else "kmedic acts"
            trail.record(
                "decision",
                f"mode {was}{mode} ({source}): {what}",
                reasons=[f"mode: {mode}"],
                details={"mode": mode, "previous_mode": self._audited},
            )
        self._audited = mode
        self.current = mode
        return mode
