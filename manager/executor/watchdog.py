"""The progress watchdog: which running moves stopped copying, and which destinations to avoid.

Every ``progress_sample_s`` the executor hands it the moves in flight and Kafka's list of
ongoing reassignments; it samples the bytes each adding replica holds (manager.executor.
replica_sizes), updates each move's record (manager.model.move_progress: the arithmetic and
the rules) and returns the moves whose verdict changed. The executor acts on them: a stalled
move is reported, one stalled for twice ``stall_s`` is cancelled, and its destinations are
remembered here so that no plan sends them replicas for ``stall_exclude_s``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from manager.executor.config import ExecutorConfig
from manager.executor.move_state import MoveState
from manager.executor.replica_sizes import Sample
from manager.model.move_progress import Verdict, observe, stalled_brokers, unseen, verdict
from manager.model.moves import TopicPartition

Sampler = Callable[[Mapping[int, Iterable[TopicPartition]]], Sample]


@dataclass(frozen=True)
class Change:
    """A move whose verdict changed with this sample."""

    state: MoveState
    verdict: Verdict
    adding: tuple[int, ...]
    idle_s: float
    silent: tuple[int, ...] = ()  # brokers of the move (new replicas, leader) not answering

    @property
    def blamed(self) -> tuple[int, ...]:
        """The brokers that did not answer - a new replica's, or the leader it copies from -
        else the new replicas behind the others."""
        if self.silent:
            return self.silent
        assert self.state.progress is not None
        return stalled_brokers(self.state.progress, self.adding)

    @property
    def figures(self) -> dict[str, Any]:
        """The sample's figures, for the move's audit record."""
        progress = self.state.progress
        assert progress is not None
        return {
            "idle_s": round(self.idle_s, 1),
            "copied_bytes": progress.copied_bytes,
            "size_bytes": self.state.move.size_bytes,
            "adding": list(self.adding),
        }

    @property
    def stall(self) -> str:
        """Why the move is judged stalled, with its figures."""
        assert self.state.progress is not None
        why = "did not answer" if self.silent else "gained no byte"
        expected = self.state.move.size_bytes * len(self.adding)
        return (
            f"no progress for {self.idle_s:.0f} s: brokers {list(self.blamed)} {why} "
            f"({self.state.progress.copied_bytes} of about {expected} copied)"
        )


class Watchdog:
    def __init__(
        self,
        sample: Sampler,
        config: ExecutorConfig,
        clock: Callable[[], float],
        wall_ms: Callable[[], int],
    ) -> None:
        self._sample = sample
        self._config = config
        self._clock = clock
        self._wall_ms = wall_ms
        self._sampled_at: float | None = None
        self._excluded: dict[int, int] = {}  # broker -> when a move to it was cancelled (ms)

    def watch(
        self,
        flying: list[MoveState],
        ongoing: Mapping[TopicPartition, Mapping[str, list[int]]],
        leaders: Mapping[TopicPartition, int],
    ) -> list[Change]:
        """Sample (at most every ``progress_sample_s``) and judge the moves still running.
        Each partition's leader is asked too: a new replica copies from it, so a leader that
        does not answer is the one to blame."""
        now = self._clock()
        if self._sampled_at is not None and now - self._sampled_at < self._config.progress_sample_s:
            return []
        self._sampled_at = now
        # As Kafka lists them; for a move started since the listing, what it adds.
        adding = {
            s.move.tp: tuple(ongoing[s.move.tp].get("adding_replicas", ()))
            if s.move.tp in ongoing
            else tuple(b for b in s.move.target if b not in s.original)
            for s in flying
        }
        asked = {
            tp: (*brokers, *([leaders[tp]] if tp in leaders and leaders[tp] not in brokers else []))
            for tp, brokers in adding.items()
            if brokers
        }
        wanted: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp, brokers in asked.items():
            for b in brokers:
                wanted[b].append(tp)
        sample = self._sample(wanted) if wanted else {}
        now_ms = self._wall_ms()
        stall_ms = int(self._config.stall_s * 1000)
        changes = []
        for state in flying:
            brokers = adding.get(state.move.tp, ())
            if not brokers:
                continue  # nothing to copy: a removal or a reorder ends at once
            tp = state.move.tp
            if not all((tp, b) in sample for b in asked[tp]):
                state.progress = unseen(state.progress, now_ms)  # blind: judge nothing
                continue
            state.progress = observe(state.progress, {b: sample[(tp, b)] for b in brokers}, now_ms)
            said = verdict(state.progress, now_ms, stall_ms)
            was = "stalled" if state.stalled else "moving"
            if said != was:
                idle_s = (now_ms - state.progress.advanced_ms) / 1000
                silent = tuple(b for b in asked[tp] if sample[(tp, b)] is None)
                changes.append(Change(state, said, brokers, idle_s, silent))
        return changes

    def exclude(self, brokers: Iterable[int]) -> None:
        now_ms = self._wall_ms()
        for b in brokers:
            self._excluded[b] = now_ms

    def excluded(self) -> dict[int, int]:
        """Destinations whose move was cancelled for a stall within ``stall_exclude_s``, with
        when it was."""
        since = self._wall_ms() - int(self._config.stall_exclude_s * 1000)
        self._excluded = {b: at for b, at in self._excluded.items() if at > since}
        return dict(self._excluded)
