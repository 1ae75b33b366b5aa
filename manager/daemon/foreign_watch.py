"""Reassignments kmedic did not start: how long each has run, and whether it still copies.

kmedic leaves such a reassignment to whoever started it (the planner keeps out of its partition
and of the brokers it adds or removes), but one that stopped copying leaves its partition short
of a replica, and nobody may be watching it. So the leader watches it as it watches its own
moves (manager.model.move_progress has the arithmetic): each cycle it samples the bytes the
reassignment's adding replicas hold, and one with no advance for ``stall_s`` is an alert - an
``alert_raised`` record naming its partition, how long it has run and what it copied, and the
``kmedic_stuck_foreign_reassignments`` gauge behind the ``KmedicForeignReassignmentStuck``
warning - cleared once it copies again or ends. kmedic never cancels it: not its own.

How long it has run counts from the first cycle that saw it (Kafka does not say when it began).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from manager.executor.replica_sizes import Sample
from manager.model.move_progress import MoveProgress, observe, unseen, verdict
from manager.model.moves import TopicPartition
from manager.model.snapshot import Reassignment

Sampler = Callable[[Mapping[int, Iterable[TopicPartition]]], Sample]


@dataclass
class Foreign:
    """One reassignment kmedic did not start, as the leader has watched it."""

    first_seen_ms: int
    adding: tuple[int, ...]
    progress: MoveProgress | None = None

    def sentence(self, tp: TopicPartition, now_ms: int) -> str:
        topic, partition = tp
        idle_s = (now_ms - self.progress.advanced_ms) / 1000 if self.progress else 0.0
        copied = self.progress.copied_bytes if self.progress else 0
        return (
            f"the reassignment of {topic}:{partition} that kmedic did not start has copied "
            f"nothing for {idle_s:.0f} s (running for at least "
            f"{(now_ms - self.first_seen_ms) / 1000:.0f} s, adding brokers "
            f"{list(self.adding)}, {copied} bytes copied): its partition stays short of a "
            "replica; whoever started it decides (kmedic never cancels it)"
        )


class ForeignWatch:
    def __init__(self, sample: Sampler, stall_s: float) -> None:
        self._sample = sample
        self._stall_ms = int(stall_s * 1000)
        self.watched: dict[TopicPartition, Foreign] = {}

    def look(self, reassignments: Iterable[Reassignment], now_ms: int) -> dict[str, str]:
        """Sample the reassignments kmedic did not start (the snapshot's list); the alerts for
        those stalled, by name (``stuck_foreign_reassignment:<topic>:<partition>``) with their
        sentence."""
        running = {
            (r.topic, r.partition): tuple(r.adding_replicas)
            for r in reassignments
            if not r.started_by_kmedic
        }
        self.watched = {
            tp: self.watched.get(tp) or Foreign(now_ms, adding) for tp, adding in running.items()
        }
        wanted: dict[int, list[TopicPartition]] = {}
        for tp, seen in self.watched.items():
            for b in seen.adding:
                wanted.setdefault(b, []).append(tp)
        sample = self._sample(wanted) if wanted else {}
        for tp, seen in self.watched.items():
            if not seen.adding:
                continue  # nothing to copy: a removal or a reorder
            if not all((tp, b) in sample for b in seen.adding):
                seen.progress = unseen(seen.progress, now_ms)  # blind: judge nothing
                continue
            got = {b: sample[(tp, b)] for b in seen.adding}
            seen.progress = observe(seen.progress, got, now_ms)
        return {
            f"stuck_foreign_reassignment:{tp[0]}:{tp[1]}": seen.sentence(tp, now_ms)
            for tp, seen in sorted(self.watched.items())
            if seen.progress is not None
            and verdict(seen.progress, now_ms, self._stall_ms) != "moving"
        }
