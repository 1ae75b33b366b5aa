"""The moves one executor holds: each partition's latest move, and the order to start them in.

A partition has at most one active move (pending or in flight): submitting another while one
is active is refused. A finished move's state is kept (its outcome, for the reports) until the
partition is moved again or the book is cleared (leadership lost).

The start order is the active moves' in the order they were submitted, then the new ones: a
partition moved by earlier plans is judged once at each step, as its newest move (the 60-minute
shaped soak found 101 failures told twice when finished moves stayed in the order).
"""

from __future__ import annotations

from collections.abc import Iterable

from kmedic.errors import KmedicError
from manager.executor.move_state import MoveState, Status
from manager.model.moves import Move, TopicPartition

ACTIVE: frozenset[Status] = frozenset({"pending", "in_flight"})  # a move not over yet


class MoveBook:
    def __init__(self) -> None:
        self.states: dict[TopicPartition, MoveState] = {}
        self._order: list[TopicPartition] = []

    def submit(self, moves: Iterable[Move], *, adopted: bool = False) -> None:
        """``adopted``: the moves of a predecessor's stored plan (it told their starts)."""
        self._order = [tp for tp in self._order if self.states[tp].status in ACTIVE]
        for move in moves:
            known = self.states.get(move.tp)
            if known is not None and known.status in ACTIVE:
                raise KmedicError(f"{move.key} already has a move {known.status}")
            self.states[move.tp] = MoveState(move, adopted=adopted)
            self._order.append(move.tp)

    def active(self) -> list[MoveState]:
        return [s for s in self.states.values() if s.status in ACTIVE]

    def in_flight(self) -> list[MoveState]:
        return [s for s in self.states.values() if s.status == "in_flight"]

    def pending(self) -> list[MoveState]:
        """The moves not started, in the order to start them."""
        return [self.states[tp] for tp in self._order if self.states[tp].status == "pending"]

    def clear(self) -> None:
        self.states.clear()
        self._order.clear()
