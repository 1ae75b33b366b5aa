"""Between cycles: wait for the next one, or for a wake, and while moves run step the executor
on the way, so the next move of a plan starts as soon as one completes rather than a whole
cycle later. Stepping obeys what the cycle obeys: only the leader, connected to ZooKeeper, in
act mode, with moves of its own and not told to drop them; each batch still goes through the
per-broker and per-cluster limits and the fenced plan write."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kmedic.logging import get_logger
from manager.daemon.move_report import MoveReport
from manager.daemon.plan_keeper import PlanKeeper
from manager.daemon.ports import Clock, Coordinator, Executor

log = get_logger(__name__)


class Stepper:
    """``wait_for_cycle`` blocks until the next cycle is due or ``wake`` is called; a wake ends
    one wait, not the next one too."""

    def __init__(
        self,
        *,
        executor: Executor,
        coordinator: Coordinator,
        keeper: PlanKeeper,
        moves: MoveReport,
        acting: Callable[[], bool],
        clock: Clock,
    ) -> None:
        self.executor = executor
        self.coordinator = coordinator
        self.keeper = keeper
        self.moves = moves
        self.acting = acting  # False in observe mode, which writes nothing, moves included
        self.clock = clock
        self.woken = threading.Event()

    def wake(self) -> None:
        self.woken.set()

    def wait_for_cycle(self, next_cycle: float) -> None:
        poll = self.executor.config.poll_interval_s
        while (left := next_cycle - self.clock.monotonic()) > 0:
            stepping = self.may_step()
            if self.woken.wait(min(left, poll) if stepping else left):
                self.woken.clear()
                return
            if not stepping:
                return
            try:
                with self.keeper.trail.gathered():
                    if self.executor.poll():
                        self.keeper.sync()
                    self.moves.observe()  # the copy rate is sampled at every poll
            except Exception as exc:  # the next cycle tries again, and says why
                log.warning("executor_poll_failed", error=str(exc))
                return

    def may_step(self) -> bool:
        coord = self.coordinator
        return (
            self.acting()
            and bool(self.executor.active())
            and coord.may_act()
            and not self.keeper.drop_moves.is_set()
        )
