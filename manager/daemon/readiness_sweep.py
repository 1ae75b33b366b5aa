"""The failure-readiness sweep on the leading manager (manager.analyzer.readiness decides).

In a thread of its own, every ``period_s``, the newest cycle's snapshot has each scenario run
through the gates and the heal planner, one at a time. After each one the thread pauses long
enough that it uses at most ``cpu_share`` of the time: the cycle thread gets the interpreter
back between scenarios, so a sweep never holds a cycle up for more than one scenario. A
standby does not sweep, and none sweeps within ``first_sweep_s`` of its start. The gauges
follow every sweep; its summary goes to the audit log once, and again only when it changes -
written by the cycle (``report``), the audit log's one writer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from kmedic.logging import get_logger
from manager.analyzer.readiness import Verdict, scenarios, verdict
from manager.config import ReadinessSettings
from manager.daemon.audit_trail import AuditTrail
from manager.model.snapshot import Snapshot
from manager.web.metrics import ManagerMetrics

log = get_logger(__name__)


class Leading(Protocol):
    @property
    def is_leader(self) -> bool: ...


class ReadinessSweep:
    def __init__(
        self,
        settings: ReadinessSettings,
        coordinator: Leading,
        trail: AuditTrail,
        metrics: ManagerMetrics,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._coordinator = coordinator
        self._offered: Snapshot | None = None
        self._trail = trail
        self._metrics = metrics
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._said: str | None = None
        self.latest: tuple[Verdict, ...] = ()
        self.swept_at: float | None = None  # wall clock

    def start(self) -> ReadinessSweep:
        if self.settings.enabled:
            self._thread = threading.Thread(target=self._run, name="readiness", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        wait = self.settings.first_sweep_s
        while not self._stop.wait(wait):
            wait = 1.0  # no snapshot yet, or not leading: look again soon
            snap = self._offered
            if snap is None or not self._coordinator.is_leader:
                continue
            try:
                if self.sweep(snap) is not None:
                    wait = self.settings.period_s
            except Exception as exc:  # a sweep that fails must not end the thread
                log.exception("readiness_sweep_failed", error=str(exc) or type(exc).__name__)

    def sweep(self, snap: Snapshot) -> tuple[Verdict, ...] | None:
        """One sweep, paced to ``cpu_share``; None when stopped half-way."""
        verdicts = []
        idle = 1 / self.settings.cpu_share - 1
        for scenario in scenarios(snap):
            started = self._clock()
            verdicts.append(verdict(snap, scenario))
            if self._stop.wait((self._clock() - started) * idle):
                return None
        self.latest, self.swept_at = tuple(verdicts), time.time()
        self._metrics.safety.observe_readiness(self.latest, self.swept_at)
        return self.latest

    def report(self, snap: Snapshot) -> None:
        """On the leader's cycle: its snapshot is the next sweep's, and the newest sweep's
        summary is audited if it changed."""
        self._offered = snap
        latest = self.latest
        said = summary(latest) if latest else None
        if said is not None and said != self._said:
            details = {"scenarios": [v.sentence() for v in latest]}
            self._trail.record("readiness", said, details=details)
            self._said = said

    def shown(self) -> dict[str, object] | None:
        """The status page's section: the summary, when, and each scenario's sentence."""
        latest, at = self.latest, self.swept_at
        if not latest or at is None:
            return None
        return {
            "summary": summary(latest),
            "swept_at_ms": int(at * 1000),
            "scenarios": [{"sentence": v.sentence(), "healable": v.healable} for v in latest],
        }


def summary(verdicts: tuple[Verdict, ...]) -> str:
    """'readiness: 6 of 9 losses healable; not: rack /r1 (…), broker 3 (…)'."""
    bad = [v for v in verdicts if not v.healable]
    head = f"readiness: {len(verdicts) - len(bad)} of {len(verdicts)} losses healable"
    if not bad:
        return head
    named = "; ".join(v.sentence() for v in bad)
    return f"{head}; {named}"
