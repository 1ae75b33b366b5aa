"""A move: one partition given a new replica list, as the executor carries it out and the
in-flight plan stores it. Shared by the executor, the in-flight plan and the daemon."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kmedic.errors import KmedicError

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Move:
    """Give ``topic``/``partition`` the replica list ``target`` (first = preferred leader)."""

    topic: str
    partition: int
    target: tuple[int, ...]
    size_bytes: int = 0

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

    def brokers_involved(self, current: Sequence[int]) -> set[int]:
        """Brokers that send or receive data: new replicas and the replicas they copy from."""
        added = set(self.target) - set(current)
        if not added:
            return set(self.target) ^ set(current)  # only removals (or a reorder: none)
        return added | set(current)
