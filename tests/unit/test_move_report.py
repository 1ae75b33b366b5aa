"""A move's end is told once (manager.daemon.move_report), however many times this instance
sees it end: an instance whose session expired and which led again adopts the moves its failed
plan write left listed, and sees ends it already held end again (found by the 60-minute soak of
seed 7401: five ends told twice by one epoch, in the same millisecond)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from manager.daemon.move_report import MoveReport
from manager.executor.move_state import MoveState
from manager.model.moves import Move


class Told:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def move_event(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        self.events.append((kind, state.move.key))


def report(told: Told, keeper: Any) -> MoveReport:
    executor = SimpleNamespace(
        config=SimpleNamespace(progress_interval_s=60.0, progress_sample_s=5.0),
        active=lambda: [],
    )
    settled = SimpleNamespace(completed=lambda move, at: None, forget=lambda: None)
    clock = SimpleNamespace(monotonic=lambda: 100.0)
    return MoveReport(executor, SimpleNamespace(), told, keeper, settled, clock)  # type: ignore[arg-type]


def test_an_end_seen_again_after_the_instance_led_again_is_told_once() -> None:
    move = Move("t", 0, (3, 4, 5), 1_000)
    listed = SimpleNamespace(plan=SimpleNamespace(moves=[move]))
    keeper = SimpleNamespace(after_write=[], drop_moves=threading.Event(), plan=listed)
    told = Told()
    moves = report(told, keeper)
    # Seen completing by the epoch whose plan write then failed (ZooKeeper gone): held.
    moves.event("action_completed", MoveState(move, status="completed", original=(6, 3, 5)), {})
    # Led again with a new epoch, the plan adopted: Kafka finished it, so it ends again.
    moves.event("action_completed", MoveState(move, status="completed", original=(3, 4, 5)), {})
    another = Move("t", 1, (3, 4, 5), 1_000)
    moves.event("action_failed", MoveState(another, status="failed", original=(6, 4, 5)), {})
    assert told.events == []  # held while the stored plan lists them
    keeper.plan = SimpleNamespace(plan=SimpleNamespace(moves=[]))
    moves.audit_ends()  # the write that unlists them tells them (Manager wires it so)
    assert told.events == [("action_completed", "t:0"), ("action_failed", "t:1")]
