"""What a goal proposes, partition by partition (``p`` is the planner's partition index):
a replica moved to another broker, or leadership handed to another replica. The executor's
form of a move, by topic and partition name, is ``manager.model.moves.Move``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReplicaMove:
    """One reassignment: partition index and its replica list before and after."""

    p: int
    before: tuple[int, ...]
    after: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LeaderMove:
    """Leadership of partition ``p`` handed to ``leader``, which ``after`` puts first (the
    preferred leader); no data moves. ``after`` equals ``before`` when ``leader`` already was
    the preferred leader: then only an election is needed."""

    p: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    leader: int
