"""The running plan's progress as the leader reports it: figures, rate, ETA, and when to say so.

A *run* is every move the executor carried from the moment it had moves until it had none left,
across cycles and replans (the executor keeps no plan boundary: a cycle may add moves while
others run). Each look (every cycle, and every poll between cycles) adds the moves active now
to the run, samples the copy rate and returns what to report:

- ``progress``: the run's figures (manager.model.plan_progress has the arithmetic);
- ``due``: a periodic audit record is due (every ``interval_s`` of a run, the first one an
  interval after it started: short plans are told by their moves' own records);
- ``ended``: the run just ended; ``progress`` is its final figure, then the run is forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass

from manager.executor.move_state import MoveState
from manager.model.plan_progress import CopyRate, MoveFigures, PlanProgress, measure


@dataclass(frozen=True)
class Look:
    progress: PlanProgress | None
    due: bool = False
    ended: bool = False
    elapsed_s: float = 0.0  # since the run's first look


def figures(state: MoveState) -> MoveFigures:
    started = state.status != "pending"
    adding = len(set(state.move.target) - set(state.original)) if started else 1
    copied = state.progress.copied if state.progress is not None else None
    return MoveFigures(state.move.size_bytes, adding, state.status, copied)


class PlanReport:
    def __init__(self, interval_s: float, sample_s: float = 0.0) -> None:
        self.interval_s = interval_s
        self._min_span_s = 2 * sample_s  # the bytes move only at each watchdog sample
        self._run: dict[int, MoveState] = {}  # id -> state; held, so an id is never reused
        self._rate = CopyRate(min_span_s=self._min_span_s)
        self._began_at: float | None = None
        self._reported_at: float | None = None
        self.latest: PlanProgress | None = None

    def current(self, active: list[MoveState]) -> PlanProgress | None:
        """The run's figures now (the moves active now included), nothing sampled."""
        for state in active:
            self._run.setdefault(id(state), state)
        if not self._run:
            return None
        return measure((figures(s) for s in self._run.values()), self._rate.rate())

    def look(self, active: list[MoveState], now: float) -> Look:
        if not self._run and not active:
            self.latest = None
            return Look(None)
        progress = self.current(active)  # a move's event may have begun the run already
        assert progress is not None
        self._rate.add(now, progress.copied_bytes)
        progress = measure((figures(s) for s in self._run.values()), self._rate.rate())
        if self._began_at is None:  # the run's first look
            self._began_at = self._reported_at = now
        elapsed = now - self._began_at
        if not active:
            self.forget()
            return Look(progress, ended=True, elapsed_s=elapsed)
        self.latest = progress
        assert self._reported_at is not None
        due = now - self._reported_at >= self.interval_s
        if due:
            self._reported_at = now
        return Look(progress, due=due)

    def forget(self) -> None:
        """The run ended, or leadership was lost (the successor reports what it adopts)."""
        self._run.clear()
        self._rate = CopyRate(min_span_s=self._min_span_s)
        self._began_at = self._reported_at = None
        self.latest = None
