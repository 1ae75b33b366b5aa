"""Between cycles the leader steps the executor every poll interval while moves run, so the
next move starts as soon as one completes; it never does so without moves, as a standby, cut
off from ZooKeeper, or once told to drop its moves."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from manager_fakes import Rig

from manager.model.moves import Move


def _rig(tmp_path: Path, *, moves: bool = True) -> Rig:
    rig = Rig(tmp_path)
    if moves:
        rig.executor.submit([Move("t", 0, (1, 3))])
    # Each step takes a (fake) second: the wait ends after the cycle's remaining seconds.
    rig.executor.on_step = lambda: rig.clock.advance(1.0)
    return rig


def test_moves_running_are_stepped_until_the_next_cycle(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.manager.stepper.wait_for_cycle(rig.clock.monotonic() + 5.0)
    assert rig.executor.steps == 5
    # Each step put its batch to the fenced plan write first; with no plan of this leader's
    # stored, none started: between cycles, as in them, no write, no move.
    assert rig.executor.refused_batches == 5 and not rig.executor.in_flight()


def test_the_poll_stops_once_no_move_is_left(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.executor.complete_all()
    rig.manager.stepper.wait_for_cycle(rig.clock.monotonic() + 1.2)  # then a real 0.2 s wait
    assert rig.executor.steps == 1  # that step found the move done; nothing left to watch


@pytest.mark.parametrize("case", ["no moves", "standby", "cut off", "dropping"])
def test_nothing_is_stepped_when_it_may_not_be(tmp_path: Path, case: str) -> None:
    rig = _rig(tmp_path, moves=case != "no moves")
    if case == "standby":
        rig.coordinator.is_leader = False
    if case == "cut off":
        rig.coordinator.connected = False
    if case == "dropping":
        rig.manager.keeper.drop_moves.set()
    rig.manager.stepper.wait_for_cycle(rig.clock.monotonic() + 0.05)  # a real 50 ms wait
    assert rig.executor.steps == 0


def test_a_failing_step_ends_the_poll_for_the_cycle_to_retry(tmp_path: Path) -> None:
    rig = _rig(tmp_path)

    def broken() -> None:
        raise RuntimeError("metadata read failed")

    rig.executor.on_step = broken
    rig.manager.stepper.wait_for_cycle(rig.clock.monotonic() + 5.0)
    assert rig.executor.steps == 1


@pytest.mark.parametrize("moves", [False, True], ids=["idle", "stepping"])
def test_a_wake_ends_the_wait_and_is_used_once(tmp_path: Path, moves: bool) -> None:
    """The registration watch wakes the daemon when a broker is fenced or back: the next cycle
    runs then, not up to a whole interval (30 s by default) later."""
    rig = _rig(tmp_path, moves=moves)
    rig.executor.on_step = lambda: None  # the fake clock stands still: only a wake ends it
    waiter = threading.Thread(
        target=rig.manager.stepper.wait_for_cycle, args=(rig.clock.monotonic() + 60.0,)
    )
    waiter.start()
    rig.manager.wake()
    waiter.join(timeout=10)
    assert not waiter.is_alive(), "the wait went on after a wake"
    assert not rig.manager.stepper.woken.is_set(), "a wake ends one wait, not the next one too"
