"""The failure-readiness sweep on the leading manager (manager.analyzer.readiness decides).

In a thread of its own, every ``period_s``, the newest cycle's snapshot has each scenario run
through the gates and the heal planner, one at a time. After each one the thread pauses long
enough that it uses at most ``cpu_share`` of the time, and no scenario starts while a cycle
runs (``cycle_running``): a cycle shares the interpreter with at most the end of one scenario,
and never waits on the sweep for anything. A
standby does not sweep, and none sweeps within ``first_sweep_s`` of its start. The gauges
follow every sweep; its summary goes to the audit log once, and again only when it changes -
written by the cycle (``report``), the audit log's one writer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Protocol

from kmedic.logging import get_logger
from kmedic.thread_names import named_thread
from manager.analyzer.heal_time import Pace
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.planner import decide
from manager.analyzer.readiness import Scenario, Verdict, scenarios, settled, verdict
from manager.analyzer.replication_check import replication_settings_off
from manager.analyzer.scenario_keys import bucket, scenario_keys
from manager.config import ReadinessSettings
from manager.daemon.audit_trail import AuditTrail
from manager.executor.config import ExecutorConfig
from manager.model.snapshot import Snapshot
from manager.web.metrics import ManagerMetrics

log = get_logger(__name__)


@dataclass(frozen=True)
class SweepCost:
    scenarios: int
    reused: int  # of those, kept from the last sweep: nothing they depend on changed
    cpu_s: float  # the sweep thread's CPU time
    wall_s: float  # pauses for the cycle included


class Leading(Protocol):
    def may_act(self) -> bool: ...


class ReadinessSweep:
    def __init__(
        self,
        settings: ReadinessSettings,
        coordinator: Leading,
        trail: AuditTrail,
        metrics: ManagerMetrics,
        pace: Callable[[], Pace] | None = None,
        clock: Callable[[], float] = time.monotonic,
        memory: ListsMemory | None = None,
    ) -> None:
        """``memory``: the daemon's planner lists (the cycle's too): each scenario's table is
        its base's with a few rows replaced, and the base's lists are built once."""
        self.settings = settings
        self._plan = partial(decide, memory=memory or ListsMemory())
        self._pace = pace or (lambda: pace_of(ExecutorConfig(), settings, None))
        self._coordinator = coordinator
        self._offered: Snapshot | None = None
        self._trail = trail
        self._metrics = metrics
        self._clock = clock
        self._stop = threading.Event()
        self._no_cycle = threading.Event()
        self._no_cycle.set()
        self._thread: threading.Thread | None = None
        self._said: str | None = None
        self.latest: tuple[Verdict, ...] = ()
        self.settings_off: tuple[str, ...] = ()  # the swept snapshot's (analyzer.replication_check)
        self.cost: SweepCost | None = None  # the last sweep's
        self._known: dict[Scenario, tuple[Hashable, Verdict]] = {}
        self.swept_at: float | None = None  # wall clock

    def start(self) -> ReadinessSweep:
        if self.settings.enabled:
            self._thread = named_thread(self._run, "readiness")
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
            if snap is None or not self._coordinator.may_act():
                continue
            try:
                if self.sweep(snap) is not None:
                    wait = self.settings.period_s
            except Exception as exc:  # a sweep that fails must not end the thread
                log.exception("readiness_sweep_failed", error=str(exc) or type(exc).__name__)

    def sweep(self, snap: Snapshot) -> tuple[Verdict, ...] | None:
        """One sweep, paced to ``cpu_share``; None when stopped half-way. A scenario whose key
        (manager.analyzer.scenario_keys) is the last sweep's keeps its verdict."""
        idle = 1 / self.settings.cpu_share - 1
        if not self._between_cycles():
            return None
        wall, cpu = self._clock(), time.thread_time()
        pace = self._pace()
        snap = settled(snap)  # as once kmedic's own moves are done: they hide no risk
        found = scenarios(snap)
        keys = scenario_keys(
            snap, found, (bucket(pace.move_bytes_per_s), replace(pace, move_bytes_per_s=0))
        )
        if self._stop.wait((self._clock() - wall) * idle):
            return None
        verdicts, known, reused = [], {}, 0
        for scenario in found:
            key = keys[scenario]
            last = self._known.get(scenario)
            if last is not None and last[0] == key:
                verdicts.append(last[1])
                reused += 1
            else:
                if not self._between_cycles():
                    return None
                started = self._clock()
                verdicts.append(verdict(snap, scenario, pace, self._plan))
                if self._stop.wait((self._clock() - started) * idle):
                    return None
            known[scenario] = (key, verdicts[-1])
        self._known = known
        self.latest, self.swept_at = tuple(verdicts), time.time()
        # Each heal's copy is throttled as measured only on brokers with kmedic's settings.
        self.settings_off = tuple(o.sentence() for o in replication_settings_off(snap))
        self.cost = SweepCost(len(found), reused, time.thread_time() - cpu, self._clock() - wall)
        self._metrics.safety.observe_readiness(self.latest, self.swept_at)
        self._metrics.safety.observe_sweep_cost(self.cost.reused, self.cost.cpu_s)
        log.info("readiness_swept", **asdict(self.cost))
        return self.latest

    @contextmanager
    def cycle_running(self) -> Iterator[None]:
        """Around each cycle: no scenario starts while one runs."""
        self._no_cycle.clear()
        try:
            yield
        finally:
            self._no_cycle.set()

    def _between_cycles(self) -> bool:
        """Wait until no cycle runs; False when stopped."""
        while not self._no_cycle.wait(1.0):
            if self._stop.is_set():
                return False
        return not self._stop.is_set()

    def report(self, snap: Snapshot) -> None:
        """On the leader's cycle: its snapshot is the next sweep's, and the newest sweep's
        summary is audited if it changed."""
        self._offered = snap
        latest = self.latest
        said = summary(latest) if latest else None
        if said is not None and said != self._said:
            details = {"scenarios": [v.to_dict() for v in latest]}
            self._trail.record("readiness", said, details=details)
            self._said = said

    def shown(self) -> dict[str, object] | None:
        """The status page's section: the summary, when, and each scenario's verdict."""
        latest, at = self.latest, self.swept_at
        if not latest or at is None:
            return None
        return {
            "summary": summary(latest),
            "swept_at_ms": int(at * 1000),
            "scenarios": [v.to_dict() for v in latest],
            "replication_settings_off": list(self.settings_off),
        }


def pace_of(executor: ExecutorConfig, settings: ReadinessSettings, measured: float | None) -> Pace:
    """The executor's limits, and the measured per-move rate or else the assumed one."""
    throttle = executor.throttle_bytes_per_s
    return Pace(
        measured or settings.assumed_move_bytes_per_s,
        rate_measured=measured is not None,
        max_moves_per_broker=executor.max_moves_per_broker,
        max_moves_in_flight=executor.max_moves_in_flight,
        throttle_bytes_per_s=throttle if isinstance(throttle, int) else None,
        max_moves_into_broker=(
            executor.adaptive.moves_into_broker if throttle == "adaptive" else None
        ),
    )


def summary(verdicts: tuple[Verdict, ...]) -> str:
    """'readiness: 6 of 9 losses healable, 2 at risk, 1 left to an operator; <each sentence>'
    (the losses at risk first)."""
    risky = [v for v in verdicts if v.at_risk]
    human = [v for v in verdicts if not v.healable and not v.at_risk]
    healable = len(verdicts) - len(risky) - len(human)
    head = f"readiness: {healable} of {len(verdicts)} losses healable"
    if risky:
        head += f", {len(risky)} at risk"
    if human:
        head += f", {len(human)} left to an operator by policy"
    if not risky and not human:
        return head
    return f"{head}; " + "; ".join(v.sentence() for v in (*risky, *human))
