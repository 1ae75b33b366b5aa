"""A move: one partition given a new replica list - the one noun from the planner's decision
to the executor (the in-flight plan stores it as ``PlannedMove``, its serialisation; the
executor's ``MoveState`` wraps it); and a catch-up, the copy a broker back from a restart
makes into its own replicas, which the executor throttles as a move's. Shared by the
executor, the in-flight plan, the analyzer and the daemon."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kmedic.errors import KmedicError

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Move:
    """Give ``topic``/``partition`` the replica list ``target`` (first = preferred leader): a
    KIP-455 reassignment. ``size_bytes`` is the partition's size as the snapshot had it,
    carried from the plan to the executor (its progress and ETA count it); ``before`` the
    replica list the planner moved it from, as the decision audits it (a move read back from
    the stored plan or the controller has none: it is not part of a move's identity)."""

    topic: str
    partition: int
    target: tuple[int, ...]
    size_bytes: int = 0
    before: tuple[int, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.target:
            raise KmedicError(f"move of {self.key}: the target replica list is empty")
        if len(set(self.target)) != len(self.target):
            raise KmedicError(f"move of {self.key}: target {list(self.target)} repeats a broker")
        if self.partition < 0:
            raise KmedicError(f"move of {self.topic}: partition {self.partition} is negative")

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def to_dict(self) -> dict[str, Any]:
        """The decision's action, as the audit prints it (the size is not printed: the
        decision's ``bytes_to_move`` sums what is copied)."""
        return {
            "type": "reassign",
            "topic": self.topic,
            "partition": self.partition,
            "from": list(self.before),
            "to": list(self.target),
        }

    def describe(self) -> str:
        return f"reassign {self.key}: {list(self.before)} -> {list(self.target)}"

    def reorders(self, current: Sequence[int]) -> bool:
        """Whether the move only reorders ``current`` (a leadership move: no byte copied, no
        replica removed)."""
        return set(self.target) == set(current)

    def adds(self, current: Sequence[int]) -> list[int]:
        """The brokers the move adds a replica to (those that receive a copy), in target order."""
        return [b for b in self.target if b not in current]

    def brokers_involved(self, current: Sequence[int]) -> set[int]:
        """Brokers that send or receive data: new replicas and the replicas they copy from."""
        added = set(self.adds(current))
        if not added:
            return set(self.target) ^ set(current)  # only removals (or a reorder: none)
        return added | set(current)


@dataclass(frozen=True)
class CatchUp:
    """A partition that brokers back from a restart copy into from its leader, their replicas
    outside its ISR (``behind``): no replica list changes, but the copy is a move's copy all
    the same, and the executor throttles it as one (``as_copy``)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    behind: tuple[int, ...]

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def key(self) -> str:
        return f"{self.topic}:{self.partition}"

    def as_copy(self) -> tuple[Move, tuple[int, ...]]:
        """The move this copy is throttled as, with the replicas it copies from: the brokers
        behind are added to the replicas in sync, as if they were new."""
        sources = tuple(b for b in self.replicas if b not in self.behind)
        return Move(self.topic, self.partition, self.replicas), sources
