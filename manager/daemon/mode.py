"""Which mode the leader runs in this cycle - ``act``, or ``observe``: decide, audit
``would_act`` with the full plan, alert as usual, write nothing to the cluster - where that
mode came from, and the audit record of each change it sees.

One precedence, documented in docs/operations.md: the command line's ``--mode`` (this process
alone), then a mode set at run time (``kmedic mode``, ``PUT /api/v1/mode``: every instance,
kept in ZooKeeper until cleared), then the config's ``mode:``. A leader audits the mode and
its source at its first cycle as leader, and again whenever either changes: a flag that
overrides a run-time mode says so, and a cleared run-time mode hands back to the config."""

from __future__ import annotations

from dataclasses import dataclass

from manager.coordination.mode_store import ModeRecord
from manager.daemon.audit_trail import AuditTrail
from manager.model.mode import Mode


@dataclass(frozen=True)
class ModeSource:
    """The mode in force and the one sentence saying where it came from."""

    mode: Mode
    source: str  # "flag", "run_time" or "config"
    sentence: str


def resolve(flag: Mode | None, stored: ModeRecord | None, configured: Mode) -> ModeSource:
    """The mode by the precedence: flag, run-time, config."""
    if flag is not None:
        beside = ""
        if stored is not None and stored.mode != flag:
            beside = f"; it overrides the run-time mode {stored.sentence()}"
        return ModeSource(flag, "flag", f"from --mode on this instance's command line{beside}")
    if stored is not None:
        return ModeSource(stored.mode, "run_time", f"set at run time: {stored.sentence()}")
    return ModeSource(configured, "config", "from the config")


class ModeTracker:
    def __init__(self, configured: Mode, flag: Mode | None = None) -> None:
        self.configured = configured
        self.flag = flag
        self.current: Mode = flag or configured
        self.source = "flag" if flag is not None else "config"
        self._audited: ModeSource | None = None  # what the audit log last heard of

    def follow(self, stored: ModeRecord | None, trail: AuditTrail) -> Mode:
        """The mode for this cycle (the leader's), audited at the first cycle as leader and
        whenever the mode or its source changes."""
        now = resolve(self.flag, stored, self.configured)
        was = self._audited
        if was is None or (now.mode, now.source) != (was.mode, was.source):
            arrow = f"{was.mode} -> " if was is not None and was.mode != now.mode else ""
            what = "nothing is written to the cluster" if now.mode == "observe" else "kmedic acts"
            cleared = ""
            if was is not None and was.source == "run_time" and now.source == "config":
                cleared = "; the run-time mode was cleared"
            trail.record(
                "decision",
                f"mode {arrow}{now.mode} ({now.sentence}{cleared}): {what}",
                reasons=[f"mode: {now.mode}"],
                details={
                    "mode": now.mode,
                    "mode_source": now.source,
                    "previous_mode": was.mode if was is not None else None,
                },
            )
        self._audited = now
        self.current = now.mode
        self.source = now.source
        return now.mode

    def forget(self) -> None:
        """Leadership lost: the next time this instance leads it says its mode again."""
        self._audited = None
