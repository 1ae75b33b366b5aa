"""When a condition has lasted long enough to be an alert: the daemon's clocks for its alerts.

A spell shorter than its bound is audited (a refusal each cycle, a wait, a count) and pages
nobody; the Prometheus rules have their own ``for`` on top. Each bound is a setting of the
manager config: ``blind_alert_after_s``, ``lag_alert_after_s``, ``refusal_alert_after_s``,
``audit.failover_alert_after_s``.
"""

from __future__ import annotations

from collections.abc import Callable

from manager.analyzer.health import is_refusal_alert, refusal_alert
from manager.web.metrics import ManagerMetrics

QUORUM_ALERT = refusal_alert("quorum_without_leader")  # held while the quorum elects
LAG_ALERT = refusal_alert("unexplained_under_replication")  # held while a link may come back


class AlertTiming:
    def __init__(
        self,
        metrics: ManagerMetrics,
        *,
        epoch: Callable[[], int],
        failover_spell: Callable[[], int | None],
        failover_alert_after_s: float = 60.0,
        blind_alert_after_s: float = 60.0,
        lag_alert_after_s: float = 300.0,
        refusal_alert_after_s: float = 120.0,
    ) -> None:
        """``failover_spell``: the audit log's spell of failover now (None: it writes to its
        primary; ``AuditLog.failover_spell``)."""
        self._metrics = metrics
        self._epoch = epoch
        self._failover_spell = failover_spell
        self._failover_bound_s = failover_alert_after_s
        self._blind_bound_s = blind_alert_after_s
        self._blind_since: float | None = None
        # Every refusal's alert is held until its spell has lasted its bound; these two have
        # bounds of their own.
        self._held_for = {QUORUM_ALERT: blind_alert_after_s, LAG_ALERT: lag_alert_after_s}
        self._refusal_bound_s = refusal_alert_after_s
        self._held_since: dict[str, float] = {}  # monotonic: when each spell began
        self._failover_since: float | None = None  # monotonic: when the audit log went over
        self._failover_epoch = -1  # the epoch that saw it go over
        self._failover_seen: int | None = None  # the spell that clock counts

    def blind_alerting(self, now: float) -> bool:
        """Whether this blind cycle's refusal is worth an alert: blind for longer than the
        bound. A shorter spell (a broker dying under a read, ZooKeeper paused for seconds)
        is audited as a refusal each cycle, and the Prometheus rule has its own ``for``."""
        if self._blind_since is None:
            self._blind_since = now
        return now - self._blind_since >= self._blind_bound_s

    def past_holds(self, active: dict[str, str], now: float) -> dict[str, str]:
        """``active`` without the refusal alerts whose spell is shorter than its bound. Each
        such cycle is still a refusal, audited, and the Prometheus rule has its own ``for``:
        - every refusal (``refusal_alert_after_s``, as ``KmedicRefusingToHeal`` waits 2m): an
          outage of seconds (brokers restarting at once, the Spark job restarting, the audit
          log on its failover a moment) is refused each cycle and pages nobody;
        - the controller quorum without a leader (``blind_alert_after_s``): an election after
          the active controller died takes seconds, during which Kafka commits nothing;
        - under-replication nothing explains (``lag_alert_after_s``): a follower cut off its
          leader by the network drops out of the ISR, and is back once the link is; kmedic
          cannot mend a link by moving data, and a link down for minutes pages.
        Alerts that are not refusals (a goal switched off, the audit log's failover, a
        foreign reassignment stuck) have bounds of their own before they get here. A spell
        ends with the first cycle without the refusal; the next counts anew."""
        for name in set(self._held_since) - set(active):
            del self._held_since[name]
        kept = dict(active)
        for name in active:
            bound = self._held_for.get(name)
            if bound is None and is_refusal_alert(name):
                bound = self._refusal_bound_s
            if bound is None:
                continue
            since = self._held_since.setdefault(name, now)
            if now - since < bound:
                del kept[name]
        return kept

    def seen_clearly(self) -> None:
        """A cycle read the cluster and ZooKeeper: the blind spell, if any, is over."""
        self._blind_since = None

    def failover_alerting(self, now: float) -> bool:
        """Whether the audit log's failover is worth an alert: on its failover sink for
        longer than the bound. A shorter one (a broker death moving the audit topic's
        leadership) is counted, and its records arrive in order when it is over."""
        spell = self._failover_spell()
        if spell is None:
            self._failover_since = None
            return False
        # Counted from this epoch's first look at this spell: only a leader's cycles look, and
        # a clock left running by an earlier epoch of this instance paged 4 s into its next
        # one (found by the 60-minute soak of seed 4242); a spell replayed and the next begun
        # between two cycles (two audit-topic outages, then its leader killed) paged as one
        # spell of 60 s (the 60-minute soak of seed 7401, 2026-12-07).
        epoch = self._epoch()
        fresh = spell != self._failover_seen
        if self._failover_since is None or self._failover_epoch != epoch or fresh:
            self._failover_since, self._failover_epoch = now, epoch
            if fresh:
                self._metrics.count_audit_failover()
            self._failover_seen = spell
        return now - self._failover_since >= self._failover_bound_s
